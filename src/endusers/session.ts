/**
 * The agent session a request belongs to (docs/limits-and-budgets.md "Agent
 * sessions"): `x-tollgate-session`, else the session header a coding agent
 * sends on every call of one run. Claude Code sends
 * `x-claude-code-session-id`; the Codex CLI sends `session-id` (`session_id`
 * in older versions) and `thread-id`. Pure.
 *
 * Like end users (attribution.ts), a session id becomes a ledger field, a
 * Redis key and a bucket id, so it is bounded: letters, digits and
 * `. _ : / @ + = -`, starting with a letter or digit, at most 128 characters.
 * A bad `x-tollgate-session` is a 400 naming the header (the client chose
 * it); an agent's header outside the alphabet or length is recorded as its
 * digest instead of refused, since the agents' ids are not ours to change.
 */
import { createHash } from 'node:crypto';
import { TollgateError } from '../domain/errors.js';

/** Longest session id recorded as sent (UUIDs and ULIDs fit with room to spare). */
export const MAX_SESSION_CHARS = 128;

const SESSION = /^[A-Za-z0-9][A-Za-z0-9._:/@+=-]*$/;

const SESSION_HEADER = 'x-tollgate-session';

/** The agents' own headers, in the order they are read: the first present names the session. */
const AGENT_HEADERS = ['x-claude-code-session-id', 'session-id', 'session_id', 'thread-id'] as const;

type HeaderValue = string | string[] | undefined;

/** The request's session, or undefined when it names none; throws TollgateError 400 for a bad `x-tollgate-session`. */
export function readSession(headers: Readonly<Record<string, HeaderValue>>): string | undefined {
  const own = headers[SESSION_HEADER];
  if (own !== undefined) {
    if (Array.isArray(own) && own.length !== 1) {
      throw new TollgateError('invalid_value', `Send the ${SESSION_HEADER} header once.`, { param: SESSION_HEADER });
    }
    const value = (Array.isArray(own) ? own[0]! : own).trim();
    const problem = sessionProblem(value);
    if (problem !== undefined) throw new TollgateError('invalid_value', `${SESSION_HEADER} ${problem}.`, { param: SESSION_HEADER });
    return value;
  }
  for (const name of AGENT_HEADERS) {
    const sent = headers[name];
    if (sent === undefined) continue;
    const value = (Array.isArray(sent) ? sent.join(',') : sent).trim();
    if (value === '') continue;
    return sessionProblem(value) === undefined ? value : sessionDigest(value);
  }
  return undefined;
}

/**
 * The session of a request refused before its attribution was read (a bad
 * body, a busy intake): its headers' session, or undefined when they name
 * none or a bad `x-tollgate-session` (that refusal is its own).
 */
export function refusedRequestSession(headers: Readonly<Record<string, HeaderValue>>): string | undefined {
  try {
    return readSession(headers);
  } catch {
    return undefined;
  }
}

/** Why a session id is refused, or undefined when it is acceptable. */
function sessionProblem(value: string): string | undefined {
  if (value === '') return 'must not be empty';
  if (value.length > MAX_SESSION_CHARS) return `must be at most ${MAX_SESSION_CHARS} characters`;
  if (!SESSION.test(value)) return 'may contain only letters, digits and . _ : / @ + = - (starting with a letter or digit)';
  return undefined;
}

/** The id recorded for an agent's session header outside the alphabet or length: bounded, stable, distinct per session. */
function sessionDigest(value: string): string {
  return `sha256:${createHash('sha256').update(value).digest('hex').slice(0, 32)}`;
}
