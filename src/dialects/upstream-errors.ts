/**
 * Errors the upstream answered, as the client is told them (docs/errors.md, "Errors from the
 * upstream"). Every relayed error status carries `x-tollgate-upstream-error: <upstream status>`,
 * so a client and its operator can tell the provider's refusal from Tollgate's own. Two answers
 * are about Tollgate's configuration, not the client's request, and are reworded in the
 * dialect's error shape with a code of Tollgate's:
 *
 * - 401/403: the provider refused Tollgate's provider key. The upstream's words ("Incorrect API
 *   key provided") read like a wrong Tollgate key and may name the provider account, so they are
 *   never passed on: `upstream_auth_failed` says the tenant's key is fine and the operator has
 *   to act.
 * - 404 `unknown_url`: the upstream does not serve the path at all, which is a base URL without
 *   its version path: `upstream_path_not_found`.
 *
 * Every other error (a 400 about the request, the provider's 429, a 5xx, a 404 for a model) keeps
 * its body: clients read it. Pure; only error answers come here.
 */
import { anthropicErrorType } from './anthropic-errors.js';
import type { Dialect } from './dialect.js';

/** The header on every relayed upstream error; its value is the upstream's HTTP status. */
export const UPSTREAM_ERROR_HEADER = 'x-tollgate-upstream-error';

/** A reworded upstream error: the body the client gets and Tollgate's code for it. */
export interface RewordedUpstreamError {
  readonly code: 'upstream_auth_failed' | 'upstream_path_not_found';
  readonly body: Buffer;
}

/** The client's answer for an upstream error that is the operator's to fix, or undefined to relay the body as it came. */
export function rewordUpstreamError(
  dialect: Pick<Dialect, 'errorCodeField'>,
  status: number,
  answer: Buffer,
  requestId: string,
): RewordedUpstreamError | undefined {
  if (status === 401 || status === 403) {
    const message =
      `The upstream provider refused Tollgate's provider key (HTTP ${status}); your Tollgate key is fine. ` +
      "Tollgate's operator has to fix the provider key (TOLLGATE_UPSTREAM_KEY or the upstream's keyEnv) or its access.";
    return { code: 'upstream_auth_failed', body: errorBody(dialect, status, 'upstream_auth_failed', message, requestId) };
  }
  if (status === 404 && upstreamCode(answer, dialect) === 'unknown_url') {
    const message =
      'The upstream provider does not serve this path (it answered 404 unknown_url): ' +
      "Tollgate's upstream URL is probably missing its version path (/v1); the operator has to fix it.";
    return { code: 'upstream_path_not_found', body: errorBody(dialect, status, 'upstream_path_not_found', message, requestId) };
  }
  return undefined;
}

/** The error in the dialect's own shape: OpenAI's, or Anthropic's (whose code travels in x-tollgate-error-code). */
function errorBody(dialect: Pick<Dialect, 'errorCodeField'>, status: number, code: string, message: string, requestId: string): Buffer {
  const body =
    dialect.errorCodeField === 'type'
      ? { type: 'error', error: { type: anthropicErrorType(status), message }, request_id: requestId }
      : { error: { message, type: 'upstream_error', param: null, code } };
  return Buffer.from(JSON.stringify(body), 'utf8');
}

/** The upstream error's own name: OpenAI's `code`, Anthropic's `type`; undefined when the body is not an error object. */
export function upstreamCode(answer: Buffer, dialect: Pick<Dialect, 'errorCodeField'>): string | undefined {
  try {
    const error = (JSON.parse(answer.toString('utf8')) as { error?: Record<string, unknown> | null }).error;
    const code = error?.[dialect.errorCodeField];
    return typeof code === 'string' ? code : undefined;
  } catch {
    return undefined;
  }
}
