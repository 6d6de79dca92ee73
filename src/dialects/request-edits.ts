/**
 * The changes the proxy makes to a client's body before forwarding, spliced into the client's
 * bytes (src/http/body-splice.ts): the upstream's name for the model, a budget's output limit
 * (each dialect's field: {@link Dialect.outputLimitEdits}), `stream_options.include_usage`.
 */
import type { Endpoint } from '../endpoints.js';
import { spliceMembers } from '../http/body-splice.js';
import type { BodyEdit, BodyLayout, ReadField, RequestFacts, RequestFields } from '../estimate/client-body.js';
import type { Dialect } from './dialect.js';

const NO_EDITS: readonly BodyEdit[] = Object.freeze([]);

/** The output-limit edits of a dialect without an output limit (embeddings generate nothing): none. */
export function noOutputLimit(): readonly BodyEdit[] {
  return NO_EDITS;
}

/** The output-limit edits of a dialect whose one field is `field`. */
export function limitField(field: ReadField): (fields: RequestFields, tokens: number) => readonly BodyEdit[] {
  return function setOutputLimit(_fields, tokens) {
    return [{ key: field, json: String(tokens) }];
  };
}

/**
 * Chat's output limit: `max_completion_tokens`, or the older `max_tokens` when the client limits
 * with that alone (some models accept only one of the two); the body then has exactly one of
 * them, set to the cap — the other goes. (null means unset, as the API reads it.)
 */
export function chatLimitEdits(fields: RequestFields, tokens: number): readonly BodyEdit[] {
  const older = !given(fields.max_completion_tokens) && given(fields.max_tokens);
  const field = older ? 'max_tokens' : 'max_completion_tokens';
  const other = older ? 'max_completion_tokens' : 'max_tokens';
  const edits: BodyEdit[] = [{ key: field, json: String(tokens) }];
  if (fields[other] !== undefined) edits.push({ key: other, json: undefined });
  return edits;
}

function given(value: unknown): boolean {
  return value !== undefined && value !== null;
}

/** Streams whose usage arrives only when asked for with `stream_options.include_usage`. */
export function needsUsageInjection(dialect: Dialect, facts: RequestFacts): boolean {
  return facts.stream && !facts.clientWantsUsage && dialect.usageOnRequest;
}

/** What the forwarded body is made from: the client's bytes, where its fields sit, and Tollgate's changes so far. */
export interface ForwardedBodySource {
  readonly endpoint: Endpoint;
  readonly bytes: Buffer;
  readonly layout: BodyLayout;
  readonly body: RequestFields;
  readonly facts: RequestFacts;
  /** Changes decided before forwarding (admit's output limit). */
  readonly edits: readonly BodyEdit[];
}

/**
 * The bytes to send an upstream that knows the model as `upstreamModel`: the
 * client's bytes with the earlier changes, the model renamed when the
 * upstream (an alias, a deployment) or a downgrade calls it otherwise, and —
 * for a stream whose usage arrives only on request —
 * `stream_options.include_usage: true` (the relay withholds that chunk again).
 */
export function forwardedBody(dialect: Dialect, source: ForwardedBodySource, upstreamModel: string): Buffer {
  const edits = [...source.edits];
  if (upstreamModel !== source.body.model) edits.push({ key: 'model', json: JSON.stringify(upstreamModel) });
  if (needsUsageInjection(dialect, source.facts)) {
    const options = source.body.stream_options;
    const kept = options !== null && typeof options === 'object' ? options : {};
    edits.push({ key: 'stream_options', json: JSON.stringify({ ...kept, include_usage: true }) });
  }
  return spliceMembers(source.bytes, source.layout, edits);
}
