/**
 * OpenAI batch input files, checked line by line as they stream in (POST /v1/files with
 * `purpose=batch`, then POST /v1/batches): each line is `{custom_id, method: "POST", url, body}`,
 * and the file as a whole follows OpenAI's Batch API rules — every line to the same `url` (the
 * batch's `endpoint`), every body to the same model ("each input file can only include requests
 * to a single model", OpenAI's Batch guide), unique `custom_id`s, at most 50,000 requests and
 * 200 MB ("The file can contain up to 50,000 requests, and can be up to 200 MB in size", the
 * `input_file_id` parameter of the batch-create reference), and for `/v1/embeddings` at most
 * 50,000 embedding inputs across the batch. Errors are values in the shape of OpenAI's batch
 * validation errors (batch-errors.ts). Pure: what a body means is left to the estimate
 * (batch-estimate.ts) and its dialect record.
 */
import { DIALECTS } from '../dialects/index.js';
import type { Endpoint } from '../endpoints.js';
import { isJsonObject, type JsonObject } from '../estimate/read-body.js';
import { CustomIds, refused, type BatchError, type BatchResult } from './batch-errors.js';
import type { JsonlLine } from './jsonl-lines.js';

/** Where a batch's requests go: the `url` its lines name and the endpoint (dialect) that estimates them. */
export interface BatchTarget {
  /** The batch's `endpoint` (OpenAI) or `/v1/messages/batches` (Anthropic). */
  readonly url: string;
  readonly endpoint: Endpoint;
  /** The most inputs (prompts) the whole batch may hold, where the API bounds them (embeddings). */
  readonly maxInputs?: number;
}

/**
 * The batch endpoints OpenAI accepts that Tollgate also serves: OpenAI's list (the batch-create
 * reference: `/v1/responses`, `/v1/chat/completions`, `/v1/embeddings`, `/v1/completions`, and
 * moderations, images and videos, which Tollgate does not bill) less what Tollgate has no dialect for.
 */
const OPENAI_BATCH_URLS: ReadonlyArray<{ readonly url: string; readonly maxInputs?: number }> = [
  { url: '/v1/chat/completions' },
  { url: '/v1/responses' },
  // "/v1/embeddings batches are also restricted to a maximum of 50,000 embedding inputs across all requests in the batch."
  { url: '/v1/embeddings', maxInputs: 50_000 },
  { url: '/v1/completions' },
];

/** The targets by `url`, each with the endpoint of the dialect record served at that path. */
const OPENAI_TARGETS: ReadonlyMap<string, BatchTarget> = new Map(
  OPENAI_BATCH_URLS.flatMap((entry) => {
    const dialect = Object.values(DIALECTS).find((record) => record.path === entry.url && record.upstreamKind === 'openai');
    return dialect === undefined ? [] : [[entry.url, { ...entry, endpoint: dialect.endpoint }] as const];
  }),
);

/** The batch target of an OpenAI batch `url` (`/v1/chat/completions` …), or undefined when Tollgate cannot bill batches to it. */
export function openAiBatchTarget(url: string): BatchTarget | undefined {
  return OPENAI_TARGETS.get(url);
}

/** OpenAI's limits on one batch input file. */
export interface OpenAiBatchLimits {
  /** Requests (lines) per file: 50,000. */
  readonly maxRequests: number;
  /**
   * Bytes per file: 200 MB, read as 200 MiB (209,715,200 bytes) — the larger reading, so Tollgate
   * never refuses a file OpenAI would take; OpenAI still judges the file itself.
   */
  readonly maxBytes: number;
}

export const OPENAI_BATCH_LIMITS: OpenAiBatchLimits = { maxRequests: 50_000, maxBytes: 200 * 1024 * 1024 };

/** One request of a batch, checked: ready to be estimated. */
export interface BatchRequest {
  /** Its 1-based line in an OpenAI input file; null for an Anthropic item (named by {@link BatchRequest.bodyParam}). */
  readonly line: number | null;
  /** Where its body sits, for errors about the body's fields: `body` (OpenAI), `requests[3].params` (Anthropic). */
  readonly bodyParam: string;
  readonly customId: string;
  readonly target: BatchTarget;
  readonly model: string;
  /** The request body (`body` of an OpenAI line, `params` of an Anthropic item). */
  readonly body: JsonObject;
}

function describe(value: unknown): string {
  return value === null ? 'null' : Array.isArray(value) ? 'array' : typeof value;
}

/** Reads a required string field; errors name `param` and the line. */
function readString(object: JsonObject, field: string, param: string, line: number | null): BatchResult<string> {
  const value = object[field];
  if (value === undefined || value === null) return refused('missing_required_parameter', `Missing required parameter: '${param}'.`, line, param);
  if (typeof value !== 'string') return refused('invalid_type', `Invalid type for '${param}': expected a string, but got ${describe(value)}.`, line, param);
  if (value.length === 0) return refused('invalid_value', `Invalid value for '${param}': expected a non-empty string.`, line, param);
  return { ok: true, value };
}

/** A request body's `model`: a non-empty string. `param` names where the body sits (`body`, `requests[3].params`). */
export function readBodyModel(body: JsonObject, bodyParam: string, line: number | null): BatchResult<string> {
  return readString(body, 'model', `${bodyParam}.model`, line);
}

/**
 * One line of an OpenAI batch input file, parsed and checked on its own (`text` without its
 * terminator; `line` its 1-based number): a JSON object with a string `custom_id`, `method`
 * "POST", a `url` Tollgate can bill batches to, and an object `body` with a `model`. Never throws.
 */
export function readOpenAiBatchLine(text: string, line: number): BatchResult<BatchRequest> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return refused('invalid_json_line', 'This line is not parseable as valid JSON.', line, null);
  }
  if (!isJsonObject(parsed)) return refused('invalid_type', `Each line must be a JSON object, but line ${line} is ${describe(parsed)}.`, line, null);
  const customId = readString(parsed, 'custom_id', 'custom_id', line);
  if (!customId.ok) return customId;
  const method = readString(parsed, 'method', 'method', line);
  if (!method.ok) return method;
  if (method.value !== 'POST') return refused('invalid_value', `Invalid value for 'method': batch requests use "POST", not "${method.value}".`, line, 'method');
  const url = readString(parsed, 'url', 'url', line);
  if (!url.ok) return url;
  const target = openAiBatchTarget(url.value);
  if (target === undefined) {
    const known = [...OPENAI_TARGETS.keys()].join(', ');
    return refused('invalid_value', `Invalid value for 'url': Tollgate bills batches to ${known}, not to "${url.value}".`, line, 'url');
  }
  const body = parsed['body'];
  if (body === undefined || body === null) return refused('missing_required_parameter', "Missing required parameter: 'body'.", line, 'body');
  if (!isJsonObject(body)) return refused('invalid_type', `Invalid type for 'body': expected an object, but got ${describe(body)}.`, line, 'body');
  const model = readBodyModel(body, 'body', line);
  if (!model.ok) return model;
  return { ok: true, value: { line, bodyParam: 'body', customId: customId.value, target, model: model.value, body } };
}

/** What the file check asks of the whole batch. */
export interface OpenAiBatchFileOptions {
  /** The batch's `endpoint`, when known (POST /v1/batches); otherwise the first line's `url` sets it. */
  readonly url?: string;
  readonly limits?: OpenAiBatchLimits;
}

/**
 * An OpenAI batch input file checked as its lines arrive ({@link add} each {@link JsonlLine} in
 * order, then {@link finish}): every line on its own, plus what spans lines — the same `url` and
 * model on every line, no `custom_id` twice, the request and byte limits. Remembers only the
 * batch's url and model, the counts and the `custom_id`s (a set bounded by the request limit).
 * A batch with any error is refused whole: the caller stops at the first one, or collects a few.
 */
export class OpenAiBatchFile {
  readonly #limits: OpenAiBatchLimits;
  readonly #ids = new CustomIds();
  #url: string | undefined;
  #model: string | undefined;
  #requests = 0;
  #bytes = 0;

  constructor(options: OpenAiBatchFileOptions = {}) {
    this.#limits = options.limits ?? OPENAI_BATCH_LIMITS;
    this.#url = options.url;
  }

  /** Requests (non-blank lines) seen so far. */
  get requests(): number {
    return this.#requests;
  }

  /** Bytes of the complete lines seen so far, terminators included. */
  get bytes(): number {
    return this.#bytes;
  }

  /** The batch's url: the one given, else the first line's. */
  get url(): string | undefined {
    return this.#url;
  }

  /** The one model of the batch, once a line named it. */
  get model(): string | undefined {
    return this.#model;
  }

  /** Checks the next line of the file: its request, or why the batch is refused. */
  add(line: JsonlLine): BatchResult<BatchRequest> {
    if (line.kind === 'too_long') {
      return refused('line_too_long', `Line ${line.number} is longer than ${line.maxLineBytes} bytes.`, line.number, null);
    }
    this.#bytes += line.bytes;
    if (this.#bytes > this.#limits.maxBytes) {
      return refused('file_too_large', `The file is larger than ${this.#limits.maxBytes} bytes, the most a batch input file may have.`, line.number, null);
    }
    if (line.kind === 'invalid_utf8') return refused('invalid_json_line', `Line ${line.number} is not valid UTF-8.`, line.number, null);
    if (line.kind === 'blank') return refused('invalid_json_line', 'This line is not parseable as valid JSON: it is blank.', line.number, null);
    this.#requests += 1;
    if (this.#requests > this.#limits.maxRequests) {
      return refused('too_many_tasks', `The file has more than ${this.#limits.maxRequests} requests, the most one batch may have.`, line.number, null);
    }
    const read = readOpenAiBatchLine(line.text, line.number);
    if (!read.ok) return read;
    const request = read.value;
    if (!this.#ids.add(request.customId)) {
      return refused(
        'duplicate_custom_id',
        `The custom_id "${clip(request.customId)}" is used by an earlier line: each must be unique.`,
        line.number,
        'custom_id',
      );
    }
    this.#url ??= request.target.url;
    if (request.target.url !== this.#url) {
      return refused('url_mismatch', `This line's url "${request.target.url}" differs from the batch's endpoint "${this.#url}".`, line.number, 'url');
    }
    this.#model ??= request.model;
    if (request.model !== this.#model) {
      return refused(
        'model_mismatch',
        `This line's model "${clip(request.model)}" differs from the batch's model "${clip(this.#model)}": one model per file.`,
        line.number,
        'body.model',
      );
    }
    return read;
  }

  /** The file-level error once every line was added: an empty file; undefined when the file is good. */
  finish(): BatchError | undefined {
    if (this.#requests > 0) return undefined;
    return { code: 'empty_file', message: 'The batch input file has no requests.', line: null, param: null };
  }
}

/** A client's string, shortened for an error message. */
function clip(text: string): string {
  return text.length <= 80 ? text : `${text.slice(0, 77)}...`;
}
