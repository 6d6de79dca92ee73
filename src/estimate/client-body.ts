/**
 * A client's body as the proxy reads it — parsed, free of duplicate keys,
 * its facts validated, the few top-level fields other stages read, and where
 * they sit in the bytes (for the changes a dialect splices in before
 * forwarding: src/dialects/request-edits.ts).
 *
 * {@link readClientBody} runs wherever the body is parsed: on the event loop
 * for small bodies, on the estimate worker for large ones
 * (src/estimate/index.ts, `openBody`); both give the same answers.
 */
import { TollgateError } from '../domain/errors.js';
import type { Endpoint } from '../endpoints.js';
import { parseJsonObject } from '../http/body.js';
import { modelNameProblem } from '../http/client-strings.js';
import { scanJsonObject, type BodyLayout } from '../http/json-scan.js';
import { promptRulesOf } from './prompt-rules.js';

export type { BodyEdit } from '../http/body-splice.js';
export type { BodyLayout } from '../http/json-scan.js';

export interface RequestFacts {
  readonly model: string;
  readonly stream: boolean;
  /** The client asked for the final usage chunk itself (`stream_options.include_usage`). */
  readonly clientWantsUsage: boolean;
}

/**
 * The top-level fields of a client's body that stages besides the estimate
 * read (attribution, stored and background Responses, ids a request refers
 * to, the output limit), and the ones Tollgate may change. A large body never
 * reaches the event loop parsed: a stage that needs another field adds it here.
 */
const READ_FIELDS = [
  'model',
  'stream',
  'stream_options',
  'user',
  'safety_identifier',
  'metadata',
  'store',
  'background',
  'previous_response_id',
  'conversation',
  'max_tokens',
  'max_completion_tokens',
  'max_output_tokens',
  'n',
  'service_tier',
] as const;

export type ReadField = (typeof READ_FIELDS)[number];

/** The client's own values of the {@link READ_FIELDS} it sent (as parsed; absent ones undefined). */
export type RequestFields = { readonly [K in ReadField]?: unknown };

const READ_FIELD_NAMES: ReadonlySet<string> = new Set(READ_FIELDS);

/**
 * Largest value of a read field, as JSON text. They are small by nature
 * (OpenAI's `metadata`: 16 pairs of at most 64 + 512 characters), and they
 * cross from the worker to the event loop, so a hostile one must not be large.
 */
const MAX_FIELD_BYTES = 16 * 1024;

/** A client's body as the pipeline carries it: what it needs besides the estimate. */
export interface ClientBody {
  readonly facts: RequestFacts;
  readonly fields: RequestFields;
  /** Where the read fields sit in the bytes (for splicing changes). */
  readonly layout: BodyLayout;
}

/**
 * Parses and checks a client's body: a JSON object (400 `invalid_json`),
 * without a duplicate key in any object (400 `duplicate_key`, naming the
 * key's path), with valid facts and small read fields. Returns the parsed
 * body too; it stays on the thread that parsed it.
 */
export function readClientBody(endpoint: Endpoint, bytes: Buffer): ClientBody & { readonly body: Record<string, unknown> } {
  const body = parseJsonObject(bytes);
  const scan = scanJsonObject(bytes, READ_FIELD_NAMES);
  if (!scan.ok) {
    throw new TollgateError(
      'duplicate_key',
      `The request body has the key ${scan.duplicatePath} twice in one object; JSON leaves what that means undefined, so it is refused.`,
      { param: scan.duplicatePath },
    );
  }
  const facts = readRequestFacts(endpoint, body);
  const fields: Record<string, unknown> = {};
  for (const name of READ_FIELDS) {
    const span = scan.layout.members[name];
    if (span === undefined) continue;
    if (span.valueEnd - span.valueStart > MAX_FIELD_BYTES) {
      throw new TollgateError('invalid_value', `${name} is larger than ${MAX_FIELD_BYTES / 1024} KB.`, { param: name });
    }
    fields[name] = body[name];
  }
  return { body, facts, fields: fields as RequestFields, layout: scan.layout };
}

/** Reads model/stream/stream_options with precise 400s for wrong types. */
function readRequestFacts(endpoint: Endpoint, body: Record<string, unknown>): RequestFacts {
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
  if (stream === true) {
    const rules = promptRulesOf(endpoint);
    if (!rules.streams) throw new TollgateError('invalid_value', `${rules.title} cannot be streamed.`, { param: 'stream' });
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
