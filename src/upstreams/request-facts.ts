/**
 * The few fields of a client's body the proxy itself reads, validated, and
 * the one change it makes to a body before forwarding it.
 */
import { TollgateError } from '../errors.js';
import type { Endpoint } from '../endpoints.js';
import { modelNameProblem } from '../http/client-strings.js';

export interface RequestFacts {
  readonly model: string;
  readonly stream: boolean;
  /** The client asked for the final usage chunk itself (`stream_options.include_usage`). */
  readonly clientWantsUsage: boolean;
}

/** Reads model/stream/stream_options with precise 400s for wrong types. */
export function readRequestFacts(endpoint: Endpoint, body: Record<string, unknown>): RequestFacts {
  const model = body.model;
  if (model === undefined || model === null) {
    throw new TollgateError('invalid_request', 'You must provide a model parameter.', { param: 'model' });
  }
  if (typeof model !== 'string' || model.trim() === '') {
    throw new TollgateError('invalid_type', 'model must be a non-empty string.', { param: 'model' });
  }
  const problem = modelNameProblem(model);
  if (problem !== undefined) throw new TollgateError('invalid_value', problem, { param: 'model' });
  const stream = body.stream;
  if (stream !== undefined && stream !== null && typeof stream !== 'boolean') {
    throw new TollgateError('invalid_type', 'stream must be a boolean.', { param: 'stream' });
  }
  if (stream === true && endpoint === 'embeddings') {
    throw new TollgateError('invalid_value', 'Embeddings cannot be streamed.', { param: 'stream' });
  }
  const options = body.stream_options;
  if (options !== undefined && options !== null && (typeof options !== 'object' || Array.isArray(options))) {
    throw new TollgateError('invalid_type', 'stream_options must be an object.', { param: 'stream_options' });
  }
  const includeUsage = (options as { include_usage?: unknown } | null | undefined)?.include_usage;
  if (includeUsage !== undefined && includeUsage !== null && typeof includeUsage !== 'boolean') {
    throw new TollgateError('invalid_type', 'stream_options.include_usage must be a boolean.', { param: 'stream_options.include_usage' });
  }
  return { model, stream: stream === true, clientWantsUsage: includeUsage === true };
}

/** Streams whose usage arrives only when asked for with `stream_options.include_usage`. */
export function needsUsageInjection(endpoint: Endpoint, facts: RequestFacts): boolean {
  return facts.stream && !facts.clientWantsUsage && (endpoint === 'chat' || endpoint === 'completions');
}

const INCLUDE_USAGE = Buffer.from('"stream_options":{"include_usage":true},');

/**
 * The body to forward with `stream_options.include_usage: true`. When the
 * client sent no stream_options, the field is spliced in after the opening
 * brace so the rest of the client's bytes go upstream unchanged; otherwise
 * the body is re-serialised with the option set.
 */
export function withUsageRequested(bytes: Buffer, body: Record<string, unknown>): Buffer {
  if (body.stream_options === undefined) {
    const brace = bytes.indexOf(0x7b); // '{' — the body parsed as an object, so it exists
    return Buffer.concat([bytes.subarray(0, brace + 1), INCLUDE_USAGE, bytes.subarray(brace + 1)]);
  }
  const options = (body.stream_options ?? {}) as Record<string, unknown>;
  return Buffer.from(JSON.stringify({ ...body, stream_options: { ...options, include_usage: true } }));
}

/** The field that limits a request's completion per choice, per endpoint. */
function outputLimitField(endpoint: Endpoint, body: Record<string, unknown>): string | undefined {
  if (endpoint === 'responses') return 'max_output_tokens';
  if (endpoint === 'completions' || endpoint === 'messages') return 'max_tokens';
  if (endpoint !== 'chat') return undefined;
  // A client that limits with the older `max_tokens` keeps it (some models accept only one of the two).
  return body.max_completion_tokens === undefined && body.max_tokens !== undefined && body.max_tokens !== null ? 'max_tokens' : 'max_completion_tokens';
}

/** The body with its completion limited to `tokens` per choice (the budget's cap, README "Budgets are hard caps"). */
export function withOutputLimit(endpoint: Endpoint, body: Record<string, unknown>, tokens: number): { body: Record<string, unknown>; bytes: Buffer } {
  const field = outputLimitField(endpoint, body);
  const limited = field === undefined ? body : { ...body, [field]: tokens };
  return { body: limited, bytes: Buffer.from(JSON.stringify(limited)) };
}
