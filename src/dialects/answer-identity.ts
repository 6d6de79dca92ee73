/**
 * The answer's own id and model (a trace's `gen_ai.response.id` and
 * `gen_ai.response.model`, docs/tracing.md), read only when tracing is on:
 * the model that answered can differ from the one asked for (a dated snapshot,
 * a deployment's model).
 */
import { field } from './usage.js';

export interface AnswerIdentity {
  readonly id?: string;
  readonly model?: string;
}

const MAX_CHARS = 256;

function text(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' && value.length <= MAX_CHARS ? value : undefined;
}

function identityOf(object: unknown): AnswerIdentity | undefined {
  const id = text(field(object, 'id'));
  const model = text(field(object, 'model'));
  if (id === undefined && model === undefined) return undefined;
  return { ...(id === undefined ? {} : { id }), ...(model === undefined ? {} : { model }) };
}

/**
 * From one parsed stream event: a chat or completions chunk carries them at its top level,
 * Anthropic's `message_start` in its `message`, a Responses event in its `response`.
 */
export function identityOfEvent(event: Record<string, unknown>): AnswerIdentity | undefined {
  return identityOf(event['response']) ?? identityOf(event['message']) ?? identityOf(event);
}

/** How far into a JSON answer its top-level `id` and `model` are looked for (they come first, before the output). */
const HEAD_BYTES = 16 * 1024;
// A key, not text: inside a JSON string every quote is escaped, so an unescaped `"id"` is a key.
const ID_KEY = /(?<!\\)"id"\s*:\s*"([^"\\]{1,256})"/;
const MODEL_KEY = /(?<!\\)"model"\s*:\s*"([^"\\]{1,256})"/;

/**
 * From a JSON answer, without parsing it whole (an answer can be megabytes): the first `id` and
 * `model` keys of its head, which in every API's answer are the answer's own.
 */
export function identityOfJsonHead(answer: Buffer): AnswerIdentity {
  const head = answer.toString('utf8', 0, Math.min(answer.byteLength, HEAD_BYTES));
  const id = ID_KEY.exec(head)?.[1];
  const model = MODEL_KEY.exec(head)?.[1];
  return { ...(id === undefined ? {} : { id }), ...(model === undefined ? {} : { model }) };
}
