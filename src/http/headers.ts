/**
 * Which headers cross the proxy. Towards the upstream, an allowlist: only
 * what real clients send and upstreams read (content negotiation, the SDKs'
 * own headers, tracing, coding agents' session ids) passes, so a header a
 * client invents (`X-HTTP-Method-Override`, `X-Forwarded-Prefix`, …) never
 * reaches the upstream or whatever sits in front of it. Towards the client,
 * a denylist: what is dropped is hop-by-hop, cookies, and what would reveal
 * the proxy's own account.
 */

const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-authenticate',
  'proxy-authorization',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);

/**
 * Client headers sent upstream, by name (README "Hostile tenants" lists them).
 * Credentials are not here (the proxy sends its own key), nor anything that
 * picks the proxy's organization, project or account (`openai-organization`,
 * `openai-project`, `chatgpt-account-id`), nor forwarding or routing headers.
 */
const TO_UPSTREAM = new Set([
  // Content negotiation (content-type is set below for bodies; accept-encoding is Tollgate's choice).
  'accept',
  'content-type',
  'user-agent',
  // OpenAI's API and SDKs.
  'openai-beta',
  'idempotency-key',
  // Anthropic's API and SDK.
  'anthropic-version',
  'anthropic-beta',
  'anthropic-dangerous-direct-browser-access',
  // W3C trace context.
  'traceparent',
  'tracestate',
  // Claude Code: its session, and which app of Anthropic's it is.
  'x-claude-code-session-id',
  'x-app',
  // Codex CLI: who sends, its version, its session and conversation, and which of its agents.
  'originator',
  'version',
  'session_id',
  'session-id',
  'conversation_id',
  'conversation-id',
  'thread-id',
  'x-openai-subagent',
  // The client's own id for the request (Codex sends its session's here): passed on as sent.
  'x-client-request-id',
  // The built-in fake upstream's scenario (`tollgate demo`, the tests); real upstreams ignore it.
  'x-fake-scenario',
]);

/** Families of client headers sent upstream, by prefix: the SDKs' telemetry (`x-stainless-os`, `x-stainless-retry-count`, …) and the Codex CLI's own (`x-codex-turn-state`, …). */
const TO_UPSTREAM_PREFIXES = ['x-stainless-', 'x-codex-'];

/** Whether a client header (lower-case name) may be sent upstream. */
export function isForwardedToUpstream(name: string): boolean {
  if (TO_UPSTREAM.has(name)) return true;
  for (const prefix of TO_UPSTREAM_PREFIXES) if (name.startsWith(prefix)) return true;
  return false;
}

/** Upstream headers never sent to clients. */
const DROP_TO_CLIENT = new Set([
  ...HOP_BY_HOP,
  'set-cookie',
  'date',
  'server',
  'via',
  'alt-svc',
  'strict-transport-security',
  'report-to',
  'nel',
  // The proxy's own account details stay with the proxy.
  'openai-organization',
  'openai-project',
  // Replaced: x-request-id is Tollgate's, the upstream's moves to x-upstream-request-id.
  'x-request-id',
]);

/**
 * The headers a message's `Connection` header names: hop-by-hop for that
 * message only, so a proxy drops them too (RFC 9110 §7.6.1). Otherwise a
 * client could send `Connection: x-foo` and have a proxy in front of
 * Tollgate strip what Tollgate relies on, or the reverse.
 */
function namedByConnection(headers: Readonly<Record<string, string | string[] | undefined>>): ReadonlySet<string> | undefined {
  const value = headers.connection;
  // What nearly every upstream sends, answered without splitting a string per answer.
  if (value === undefined || value === 'keep-alive' || value === 'close') return undefined;
  const names = new Set<string>();
  for (const part of (Array.isArray(value) ? value.join(',') : value).split(',')) {
    const name = part.trim().toLowerCase();
    if (name !== '' && name !== 'close' && name !== 'keep-alive') names.add(name);
  }
  return names.size === 0 ? undefined : names;
}

/** Headers for the upstream request, built from the client's (lower-case names). */
export function toUpstreamHeaders(incoming: Readonly<Record<string, string | string[] | undefined>>, hasBody: boolean): Record<string, string> {
  const out: Record<string, string> = {};
  const hopByHop = namedByConnection(incoming);
  for (const name in incoming) {
    const value = incoming[name];
    if (value === undefined || !isForwardedToUpstream(name)) continue;
    if (hopByHop?.has(name) === true) continue;
    out[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  // Usage is read from the body, so ask for it uncompressed.
  out['accept-encoding'] = 'identity';
  if (hasBody) out['content-type'] = 'application/json';
  return out;
}

/** The header Tollgate's own request id travels upstream in (docs/architecture.md, "Headers"). */
const TOLLGATE_REQUEST_ID_HEADER = 'x-tollgate-request-id';

/**
 * Adds Tollgate's request id to headers built by {@link toUpstreamHeaders}, in its own header. A
 * client's own `x-client-request-id` is left as it sent it; without one, Tollgate's id fills it
 * (OpenAI's logs and support look requests up by it). Set on the fresh set, not spread.
 */
export function withRequestIds(headers: Record<string, string>, requestId: string): Record<string, string> {
  headers[TOLLGATE_REQUEST_ID_HEADER] = requestId;
  headers['x-client-request-id'] ??= requestId;
  return headers;
}

/**
 * Headers for the client, built from the upstream's answer. On a successful
 * answer the upstream's `x-ratelimit-*` headers are dropped: they describe the
 * proxy's own provider account, and the tenant's limits are Tollgate's
 * `RateLimit` headers. Error answers (429, 5xx) pass through with all their
 * headers, as the client needs them to back off.
 */
export function toClientHeaders(
  upstream: Readonly<Record<string, string | string[] | undefined>>,
  requestId: string,
  streaming: boolean,
  status = 200,
): Record<string, string> {
  const out: Record<string, string> = {};
  const ok = status < 400;
  const hopByHop = namedByConnection(upstream);
  for (const name in upstream) {
    const value = upstream[name];
    if (value === undefined || DROP_TO_CLIENT.has(name) || name.startsWith('cf-')) continue;
    if (hopByHop?.has(name) === true) continue;
    if (ok && name.startsWith('x-ratelimit-')) continue;
    if (streaming && name === 'content-length') continue;
    out[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  const upstreamId = upstream['x-request-id'];
  if (typeof upstreamId === 'string') out['x-upstream-request-id'] = upstreamId;
  out['x-request-id'] = requestId;
  return out;
}

/** True when the upstream answered with an SSE stream. */
export function isEventStream(headers: Readonly<Record<string, string | string[] | undefined>>): boolean {
  const type = headers['content-type'];
  return typeof type === 'string' && type.toLowerCase().startsWith('text/event-stream');
}
