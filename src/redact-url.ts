/**
 * URLs as Tollgate may print them. Operators put credentials in URLs
 * (`https://user:pass@gateway/v1`, `redis://:password@host`,
 * `postgres://tollgate:secret@db/tollgate`, `…/v1?api-key=…`); a log line,
 * a CLI message or an error must show where, never with what. The userinfo
 * becomes `***` and so does the value of every query parameter whose name
 * looks like a secret. Pure.
 */

/** Query parameter names whose values are secrets: keys, tokens, passwords, signatures (Azure SAS `sig`), OAuth codes. */
const SECRET_PARAMETER = /key|token|secret|passw|pwd|sig|auth|credential|session|code/i;

const MASK = '***';

/** `scheme://` and an authority with userinfo: for text `URL` cannot parse. */
const USERINFO = /^([a-z][a-z0-9+.-]*:\/\/)[^/?#@\s]*@/i;
/** `name=value` in a query, for text `URL` cannot parse. */
const QUERY_PAIR = /([?&;])([^=&;#\s]*)=([^&;#\s]*)/g;

/**
 * `url` with its userinfo and secret-looking query values replaced by `***`;
 * unchanged when it has neither. Text that is not a URL is only searched for
 * the two shapes, so nothing that looks like one slips through.
 */
export function redactUrl(url: string): string {
  let parsed: URL | undefined;
  try {
    parsed = new URL(url);
  } catch {
    parsed = undefined;
  }
  if (parsed === undefined) {
    return url
      .replace(USERINFO, `$1${MASK}@`)
      .replace(QUERY_PAIR, (pair, separator: string, name: string) => (SECRET_PARAMETER.test(name) ? `${separator}${name}=${MASK}` : pair));
  }
  let changed = false;
  if (parsed.username !== '' || parsed.password !== '') {
    parsed.username = MASK;
    parsed.password = '';
    changed = true;
  }
  for (const name of new Set(parsed.searchParams.keys())) {
    if (SECRET_PARAMETER.test(name)) {
      parsed.searchParams.set(name, MASK);
      changed = true;
    }
  }
  return changed ? parsed.href : url;
}

/** Every `scheme://…` in a message, redacted as {@link redactUrl} does; the rest of the text unchanged. */
export function redactUrlsIn(text: string): string {
  return text.replace(/\b[a-z][a-z0-9+.-]*:\/\/[^\s"'<>`,]+/gi, (url) => redactUrl(url));
}
