/**
 * Tollgate's own errors on the Messages routes (the Anthropic dialect's `renderError`), in Anthropic's shape
 * `{"type":"error","error":{"type","message"},"request_id"}`, so Anthropic's SDKs raise their
 * typed errors (RateLimitError, AuthenticationError, …) and honour `retry-after` and
 * `x-should-retry`. The status and the stable code are Tollgate's (src/domain/errors.ts); the code also
 * travels in `x-tollgate-error-code`, as Anthropic's shape has no field for it.
 */
import type { Context } from 'hono';
import type { AppEnv } from '../app-env.js';
import { TollgateError } from '../domain/errors.js';
import type { Logger } from '../logger.js';
import { newRequestId } from '../request-id.js';

/** Anthropic's error type for an HTTP status (its "Errors" page). */
export function anthropicErrorType(status: number): string {
  switch (status) {
    case 400:
      return 'invalid_request_error';
    case 401:
      return 'authentication_error';
    case 403:
      return 'permission_error';
    case 404:
    case 405:
      return 'not_found_error';
    case 413:
      return 'request_too_large';
    case 429:
      return 'rate_limit_error';
    case 504:
      return 'timeout_error';
    case 529:
      return 'overloaded_error';
    default:
      return status >= 500 ? 'api_error' : 'invalid_request_error';
  }
}

/** The error handler of the Messages routes: logs as the app's handler does, answers in Anthropic's shape. */
export function renderAnthropicError(error: Error, c: Context<AppEnv>, logger: Logger): Response {
  const requestId = c.get('requestId') ?? newRequestId();
  const known =
    error instanceof TollgateError ? error : new TollgateError('internal_error', 'Tollgate hit an internal error; the request id identifies it in the logs.');
  const status = known.status;
  if (!(error instanceof TollgateError)) logger.error({ requestId, err: error, path: c.req.path }, 'unhandled error');
  else if (status >= 500 || status === 499) logger.warn({ requestId, code: known.code, path: c.req.path }, known.message);
  else logger.info({ requestId, code: known.code, status, path: c.req.path }, known.message);
  const body = { type: 'error', error: { type: anthropicErrorType(status), message: known.message }, request_id: requestId };
  const headers: Record<string, string> = { ...known.headers, 'x-request-id': requestId, 'request-id': requestId, 'x-tollgate-error-code': known.code };
  if (known.code === 'body_too_large') headers.connection = 'close';
  return c.json(body, status as 400, headers);
}
