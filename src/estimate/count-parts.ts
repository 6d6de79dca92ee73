/**
 * Counting shared by the chat and responses counters: content parts (text, images, audio,
 * files), tool-choice overheads, schemas, and the string leaves of items we do not model.
 */
import { imageTokens, type ImageDetail } from './images.js';
import { MAX_NESTING_DEPTH, failDepth, failType, isJsonObject, readObject, readOptionalString } from './read-body.js';
import { renderCompactJson } from './render-functions.js';
import type { TextCounter } from './text-counter.js';
import type { UnseenTally } from './unseen.js';

/** What counting a prompt needs besides the body. */
export interface CountContext {
  readonly counter: TextCounter;
  readonly model: string;
  /** Where input that cannot be counted, and the ids the body refers to, are noted (unseen.ts). */
  readonly unseen: UnseenTally;
}

/** Running totals of a prompt. */
export interface PromptTally {
  tokens: number;
  imageTokens: number;
  /** Share of tokens that are audio (approximated), reserved at the audio input price. */
  audioTokens?: number;
  /** Share of imageTokens that are images of unknown size, counted at their bound (unseen.ts). */
  unsizedImageTokens?: number;
}

/**
 * Audio input: ~10 tokens per second (gpt-4o audio models bill about one token per 100 ms), with
 * the duration guessed from the payload size: 32 kB/s for WAV (16 kHz, 16-bit mono), 16 kB/s for
 * compressed formats (128 kbit/s). An approximation: reconciliation bills the real usage.
 */
export function approximateAudioTokens(base64Length: number, format: string | undefined): number {
  const bytes = Math.floor((base64Length * 3) / 4);
  const bytesPerSecond = format === 'wav' || format === 'pcm16' ? 32_000 : 16_000;
  return Math.ceil((bytes / bytesPerSecond) * 10);
}

/** The least an inline file is reserved at: about a page of text. */
const MIN_FILE_TOKENS = 1_000;

/**
 * Inline files (`file_data`: PDF …) are billed as extracted text plus page images; without
 * parsing them we reserve one token per 4 bytes of the decoded file, at least
 * {@link MIN_FILE_TOKENS}. Approximation. Files by id or URL are unseen input (unseen.ts).
 */
export function approximateFileTokens(fileData: string): number {
  const comma = fileData.startsWith('data:') ? fileData.indexOf(',') + 1 : 0;
  const bytes = Math.floor(((fileData.length - comma) * 3) / 4);
  return Math.max(MIN_FILE_TOKENS, Math.ceil(bytes / 4));
}

/**
 * A file part (chat `file`, Responses `input_file`): inline data is approximated; a `file_id` or
 * `file_url` is noted as unseen input (its ids for the ownership check). Returns its tokens.
 */
export function tallyFile(fields: { fileData?: string | undefined; fileId?: string | undefined; fileUrl?: string | undefined }, context: CountContext): number {
  let tokens = 0;
  if (fields.fileData !== undefined) tokens += approximateFileTokens(fields.fileData);
  if (fields.fileId !== undefined) context.unseen.file(fields.fileId, 'file');
  if (fields.fileUrl !== undefined) context.unseen.note('file');
  // A part naming no file at all is the upstream's to refuse; it reserves what an inline one would.
  if (fields.fileData === undefined && fields.fileId === undefined && fields.fileUrl === undefined) tokens += MIN_FILE_TOKENS;
  return tokens;
}

/** Reads an image `detail`; anything but "low" and "high" prices as "auto" (= high). */
export function readImageDetail(value: unknown, param: string): ImageDetail {
  const detail = readOptionalString(value, param);
  return detail === 'low' || detail === 'high' ? detail : 'auto';
}

/**
 * Adds an image's tokens to the tally: by its size when a data URL's header gives it, else at
 * the most one image can bill (noted as unseen, with its `fileId` when it is named by one).
 */
export function tallyImage(tally: PromptTally, context: CountContext, url: string | undefined, detail: ImageDetail, fileId?: string): void {
  const { tokens, sized } = imageTokens(fileId === undefined ? url : undefined, detail, context.model);
  if (fileId !== undefined) context.unseen.file(fileId, 'image');
  else if (!sized) context.unseen.note('image');
  tally.tokens += tokens;
  tally.imageTokens += tokens;
  if (!sized) tally.unsizedImageTokens = (tally.unsizedImageTokens ?? 0) + tokens;
}

/**
 * Counts every string inside a value we do not model (unknown part or item types), skipping
 * `data:` URLs so media is never tokenized as text.
 */
export function countStringLeaves(value: unknown, context: CountContext, param: string, depth = 0): number {
  if (depth > MAX_NESTING_DEPTH) failDepth(param);
  if (typeof value === 'string') return value.startsWith('data:') ? 0 : context.counter.count(value);
  let total = 0;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) total += countStringLeaves(value[i], context, `${param}[${i}]`, depth + 1);
  } else if (isJsonObject(value)) {
    for (const [key, child] of Object.entries(value)) total += countStringLeaves(child, context, `${param}.${key}`, depth + 1);
  }
  return total;
}

/**
 * A structured-output schema (`response_format` / `text.format` of type json_schema). The API
 * adds the schema to the prompt in a form it does not publish; we approximate it by the compact
 * JSON of the schema plus its name and description, and 8 tokens of framing.
 */
export function countJsonSchemaFormat(format: unknown, context: CountContext, param: string): number {
  if (format === undefined || format === null) return 0;
  const object = readObject(format, param);
  if (object['type'] !== 'json_schema') return 0;
  // Chat nests the schema under `json_schema`; the Responses API puts it on the format itself.
  const holder = isJsonObject(object['json_schema']) ? object['json_schema'] : object;
  const holderParam = isJsonObject(object['json_schema']) ? `${param}.json_schema` : param;
  const name = readOptionalString(holder['name'], `${holderParam}.name`) ?? '';
  const description = readOptionalString(holder['description'], `${holderParam}.description`) ?? '';
  const schema = holder['schema'];
  const schemaText = schema === undefined ? '' : renderCompactJson(schema, `${holderParam}.schema`);
  return 8 + context.counter.count(name) + context.counter.count(description) + context.counter.count(schemaText);
}

/**
 * Overhead of forcing or forbidding calls (`function_call`, `tool_choice`), as measured for
 * `function_call` in the public fixtures: "none" adds 1 token, a named function 4 + its name;
 * "auto" and "required" add nothing we know of.
 */
export function countToolChoice(choice: unknown, context: CountContext, param: string): number {
  if (choice === undefined || choice === null) return 0;
  if (typeof choice === 'string') return choice === 'none' ? 1 : 0;
  const object = readObject(choice, param);
  const fn = object['function'];
  let name: string | undefined;
  if (isJsonObject(fn)) name = readOptionalString(fn['name'], `${param}.function.name`);
  else if (object['name'] !== undefined) name = readOptionalString(object['name'], `${param}.name`);
  return name === undefined ? 0 : 4 + context.counter.count(name);
}

/** Reads a tool call's arguments, which clients send as a string (rarely as an object). */
export function countArguments(value: unknown, context: CountContext, param: string): number {
  if (value === undefined || value === null) return 0;
  if (typeof value === 'string') return context.counter.count(value);
  if (isJsonObject(value) || Array.isArray(value)) return context.counter.count(renderCompactJson(value, param));
  return failType(param, 'a string', value);
}
