/**
 * Anthropic's Message Batches (`POST /v1/messages/batches` with `{requests: [{custom_id, params}]}`),
 * checked item by item: `custom_id` matching `^[a-zA-Z0-9_-]{1,64}$` and unique in the batch,
 * `params` a Messages body with a `model`, 1 to 100,000 requests and at most 256 MB ("A Message
 * Batch is limited to either 100,000 Message requests or 256 MB in size, whichever is reached
 * first", Anthropic's batch-processing guide; `minItems: 1, maxItems: 100000` in the API
 * reference). Models may differ between items. What `params` means is the Messages dialect's
 * (the estimate refuses a missing or non-positive `max_tokens`). Pure, never throws.
 */
import { ANTHROPIC_MESSAGES } from '../dialects/index.js';
import { isJsonObject } from '../estimate/read-body.js';
import { CustomIds, refused, type BatchError, type BatchResult } from './batch-errors.js';
import { readBodyModel, type BatchRequest, type BatchTarget } from './batch-lines.js';

/** Where Anthropic batch items go: the Messages dialect. */
export const ANTHROPIC_BATCH_TARGET: BatchTarget = { url: '/v1/messages/batches', endpoint: ANTHROPIC_MESSAGES.endpoint };

/** Anthropic's limits on one Message Batch. */
export interface AnthropicBatchLimits {
  /** Requests per batch: 100,000. */
  readonly maxRequests: number;
  /** Bytes of the batch-create body: 256 MB, read as 256 MiB (the larger reading; Anthropic judges the body itself). */
  readonly maxBytes: number;
}

export const ANTHROPIC_BATCH_LIMITS: AnthropicBatchLimits = { maxRequests: 100_000, maxBytes: 256 * 1024 * 1024 };

const CUSTOM_ID = /^[a-zA-Z0-9_-]{1,64}$/;

function describe(value: unknown): string {
  return value === null ? 'null' : Array.isArray(value) ? 'array' : typeof value;
}

/** One item of `requests` (`index` 0-based), checked on its own. Errors name it by `param` (`requests[3].custom_id`). */
export function readAnthropicBatchItem(item: unknown, index: number): BatchResult<BatchRequest> {
  const at = `requests[${index}]`;
  if (!isJsonObject(item)) return refused('invalid_type', `Invalid type for '${at}': expected an object, but got ${describe(item)}.`, null, at);
  const customId = item['custom_id'];
  if (customId === undefined || customId === null)
    return refused('missing_required_parameter', `Missing required parameter: '${at}.custom_id'.`, null, `${at}.custom_id`);
  if (typeof customId !== 'string' || !CUSTOM_ID.test(customId)) {
    return refused(
      'invalid_value',
      `Invalid value for '${at}.custom_id': expected 1 to 64 letters, digits, '_' or '-' (^[a-zA-Z0-9_-]{1,64}$).`,
      null,
      `${at}.custom_id`,
    );
  }
  const params = item['params'];
  if (params === undefined || params === null)
    return refused('missing_required_parameter', `Missing required parameter: '${at}.params'.`, null, `${at}.params`);
  if (!isJsonObject(params))
    return refused('invalid_type', `Invalid type for '${at}.params': expected an object, but got ${describe(params)}.`, null, `${at}.params`);
  const model = readBodyModel(params, `${at}.params`, null);
  if (!model.ok) return model;
  return { ok: true, value: { line: null, bodyParam: `${at}.params`, customId, target: ANTHROPIC_BATCH_TARGET, model: model.value, body: params } };
}

/**
 * The `requests` of one Message Batch checked as they are read ({@link add} each item in order,
 * then {@link finish}): each item on its own, no `custom_id` twice, at most the request limit.
 * Remembers only the count and the ids.
 */
export class AnthropicBatchRequests {
  readonly #limits: AnthropicBatchLimits;
  readonly #ids = new CustomIds();
  #requests = 0;

  constructor(limits: AnthropicBatchLimits = ANTHROPIC_BATCH_LIMITS) {
    this.#limits = limits;
  }

  get requests(): number {
    return this.#requests;
  }

  /** Checks the next item of `requests`: its request, or why the batch is refused. */
  add(item: unknown): BatchResult<BatchRequest> {
    const index = this.#requests;
    this.#requests += 1;
    if (this.#requests > this.#limits.maxRequests) {
      return refused('too_many_tasks', `A Message Batch holds at most ${this.#limits.maxRequests} requests.`, null, 'requests');
    }
    const read = readAnthropicBatchItem(item, index);
    if (!read.ok) return read;
    if (!this.#ids.add(read.value.customId)) {
      return refused(
        'duplicate_custom_id',
        `The custom_id "${read.value.customId}" is used by an earlier request: each must be unique.`,
        null,
        `requests[${index}].custom_id`,
      );
    }
    return read;
  }

  /** The batch-level error once every item was added: none at all; undefined when the batch is good. */
  finish(): BatchError | undefined {
    if (this.#requests > 0) return undefined;
    return { code: 'empty_file', message: "A Message Batch needs at least one request in 'requests'.", line: null, param: 'requests' };
  }
}

/** A batch-create body of `bytes` bytes over the size limit, as its error; undefined when it fits. */
export function anthropicBatchSizeError(bytes: number, limits: AnthropicBatchLimits = ANTHROPIC_BATCH_LIMITS): BatchError | undefined {
  if (bytes <= limits.maxBytes) return undefined;
  return { code: 'file_too_large', message: `A Message Batch may be at most ${limits.maxBytes} bytes; this one is ${bytes}.`, line: null, param: null };
}
