/**
 * Errors Tollgate itself answers with, in OpenAI's shape
 * `{"error":{"message","type","param","code"}}`, so the SDKs raise their typed
 * errors (BadRequestError, AuthenticationError, RateLimitError, …).
 *
 * Every code maps to exactly one status and type in {@link describeCode}; the
 * one renderer is {@link renderError}. Messages never contain secrets.
 */

export type ErrorCode =
  // the request itself
  | 'invalid_json'
  | 'duplicate_key'
  | 'invalid_request'
  | 'invalid_type'
  | 'invalid_value'
  | 'body_too_large'
  | 'unknown_url'
  | 'method_not_allowed'
  | 'context_length_exceeded'
  | 'model_not_found'
  | 'model_not_priced'
  | 'client_closed_request'
  | 'response_not_found'
  // ids a request refers to that the key does not own (src/pipeline/ownership.ts)
  | 'previous_response_not_found'
  | 'item_not_found'
  | 'conversation_not_found'
  | 'file_not_found'
  | 'batch_not_found'
  // who is asking
  | 'missing_api_key'
  | 'invalid_api_key'
  | 'key_revoked'
  | 'key_expired'
  | 'key_suspended'
  | 'model_not_allowed'
  | 'key_misconfigured'
  | 'admin_disabled'
  | 'invalid_admin_token'
  | 'invalid_metrics_token'
  | 'insufficient_role'
  | 'too_many_attempts'
  // the admin API and CLI
  | 'not_found'
  | 'conflict'
  | 'ambiguous_reference'
  | 'invalid_policy'
  // limits and budgets
  | 'rate_limit_exceeded'
  | 'insufficient_quota'
  | 'exceeds_limit_burst'
  | 'limiter_unavailable'
  | 'too_many_end_users'
  | 'runaway_throttled'
  // the upstream
  | 'upstream_unreachable'
  | 'upstream_timeout'
  | 'upstream_bad_response'
  // ourselves
  | 'ledger_unavailable'
  | 'reports_busy'
  | 'server_busy'
  | 'internal_error';

type ErrorType =
  | 'invalid_request_error'
  | 'authentication_error'
  | 'permission_error'
  | 'not_found_error'
  | 'rate_limit_error'
  | 'insufficient_quota'
  | 'server_error'
  | 'upstream_error';

/** The single place where a code decides its HTTP status and OpenAI error type. */
function describeCode(code: ErrorCode): { status: number; type: ErrorType } {
  switch (code) {
    case 'invalid_json':
    case 'duplicate_key':
    case 'invalid_request':
    case 'invalid_type':
    case 'invalid_value':
    case 'context_length_exceeded':
    case 'exceeds_limit_burst':
    case 'model_not_found':
    case 'model_not_priced':
      return { status: 400, type: 'invalid_request_error' };
    case 'client_closed_request':
      // nginx's convention; nobody is left to read it, but logs and metrics are.
      return { status: 499, type: 'invalid_request_error' };
    case 'body_too_large':
      return { status: 413, type: 'invalid_request_error' };
    case 'unknown_url':
    case 'response_not_found':
    case 'previous_response_not_found':
    case 'item_not_found':
    case 'conversation_not_found':
    case 'file_not_found':
    case 'batch_not_found':
      return { status: 404, type: 'invalid_request_error' };
    case 'method_not_allowed':
      return { status: 405, type: 'invalid_request_error' };
    case 'missing_api_key':
    case 'invalid_api_key':
    case 'key_revoked':
    case 'key_expired':
    case 'invalid_admin_token':
    case 'invalid_metrics_token':
      return { status: 401, type: 'authentication_error' };
    case 'key_suspended':
    case 'model_not_allowed':
    case 'insufficient_role':
      return { status: 403, type: 'permission_error' };
    case 'admin_disabled':
    case 'not_found':
      return { status: 404, type: 'not_found_error' };
    case 'conflict':
      return { status: 409, type: 'invalid_request_error' };
    case 'ambiguous_reference':
    case 'invalid_policy':
      return { status: 400, type: 'invalid_request_error' };
    case 'key_misconfigured':
      return { status: 500, type: 'server_error' };
    case 'rate_limit_exceeded':
    case 'too_many_attempts':
    case 'too_many_end_users':
    case 'runaway_throttled':
      return { status: 429, type: 'rate_limit_error' };
    case 'insufficient_quota':
      return { status: 429, type: 'insufficient_quota' };
    case 'limiter_unavailable':
      return { status: 503, type: 'server_error' };
    case 'upstream_unreachable':
    case 'upstream_bad_response':
      return { status: 502, type: 'upstream_error' };
    case 'upstream_timeout':
      return { status: 504, type: 'upstream_error' };
    case 'ledger_unavailable':
    case 'reports_busy':
    case 'server_busy':
      return { status: 503, type: 'server_error' };
    case 'internal_error':
      return { status: 500, type: 'server_error' };
  }
}

/** An error Tollgate answers with. Thrown by handlers, rendered once by the app's error handler. */
export class TollgateError extends Error {
  override readonly name = 'TollgateError';
  readonly code: ErrorCode;
  readonly param: string | null;
  /** Extra response headers (Retry-After, x-should-retry, …). */
  readonly headers: Readonly<Record<string, string>>;

  constructor(code: ErrorCode, message: string, options: { param?: string | null; headers?: Record<string, string>; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.param = options.param ?? null;
    this.headers = options.headers ?? {};
  }

  get status(): number {
    return describeCode(this.code).status;
  }
}

export interface OpenAIErrorBody {
  error: { message: string; type: ErrorType; param: string | null; code: ErrorCode };
}

/** The body and status for an error; the caller adds `x-request-id`. */
export function renderError(error: TollgateError): { status: number; body: OpenAIErrorBody } {
  const { status, type } = describeCode(error.code);
  return {
    status,
    body: { error: { message: error.message, type, param: error.param, code: error.code } },
  };
}

/**
 * A PostgreSQL failure as the 503 every replica read answers with,
 * `ledger_unavailable`, naming what lives there (`subject`: "The dashboard
 * reads", …); the driver's error stays the cause, for the log, never the answer.
 */
export function pgUnavailable(subject: string, cause: unknown): TollgateError {
  return new TollgateError('ledger_unavailable', `${subject} PostgreSQL (TOLLGATE_DATABASE_URL), which did not answer; try again shortly.`, { cause });
}
