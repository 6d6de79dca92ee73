/**
 * A tap on an upstream SSE stream. Bytes go to the client as they arrive; on
 * the side the tap reads the events to learn the final usage, the completion
 * text streamed so far (never billed below, if the stream ends early), when
 * the first token came, and whether the stream finished. After the client
 * left, the relay keeps feeding it the upstream's bytes (and drops what it
 * returns) until the usage arrives.
 *
 * When Tollgate asked the upstream for a usage chunk the client did not ask
 * for, the tap withholds exactly that event, and the `"usage":null` member
 * the upstream then adds to every other chunk, and forwards every other byte
 * as sent: the client gets the bytes it would have got directly. Only in that
 * mode does it hold back the (small) tail of an unfinished event until its
 * terminating blank line arrives.
 *
 * The tap splits the bytes into events; what an event means is the dialect's
 * (its stream reader: openai-chunks.ts, responses-stream.ts, messages-stream.ts).
 */
import type { Dialect, StreamError, StreamReader, StreamTap } from './dialect.js';
import type { Usage } from './usage.js';
import { identityOfEvent, type AnswerIdentity } from './answer-identity.js';

export type { StreamError } from './dialect.js';

const LF = 0x0a;
const CR = 0x0d;
const SPACE = 0x20;
const DATA = Buffer.from('data:');
const EVENT = Buffer.from('event:');
/**
 * The member a usage-on-request stream adds to each chunk once usage is asked for (OpenAI's
 * streaming reference, `stream_options`). Found as bytes: a string value containing it is escaped
 * (`\"usage\"`), so an unescaped match is a member; the last one in a chunk is its top-level one.
 */
const USAGE_NULL = Buffer.from(',"usage":null');

export interface SseTapOptions {
  /** The stream's API format: its reader says what each event means. */
  readonly dialect: Dialect;
  /** Withhold the usage-only chunk (a dialect whose streams report usage only on request) the client did not request. */
  readonly stripUsageChunk: boolean;
  /** Clock for time-to-first-token, injectable for tests. */
  readonly now?: () => number;
  /**
   * Completion tokens (all choices) the stream may carry before Tollgate ends it
   * (a budget's or cost cap's limit), and how to count them.
   */
  readonly allowance?: { readonly tokens: number; readonly count: (text: string) => number };
  /** Note the answer's own id and model from the first event that has them (only for traces). */
  readonly noteIdentity?: boolean;
}

const NO_ITEMS: readonly string[] = Object.freeze([]);

export class SseTap implements StreamTap {
  private readonly reader: StreamReader;
  private readonly strip: boolean;
  private readonly now: () => number;
  /** Bytes of an event whose terminating blank line has not arrived yet. */
  private pending: Buffer | null = null;
  private readonly texts: string[] = [];
  private usageSeen: Usage | undefined;
  private done = false;
  private firstTokenAt: number | undefined;
  private upstreamError: StreamError | undefined;
  private readonly allowance: SseTapOptions['allowance'];
  private identitySought: boolean;
  /** The answer's own id and model, when `noteIdentity` was asked for and an event carried them. */
  identity: AnswerIdentity | undefined;
  /** Exact tokens of texts[0, countedTexts). */
  private countedTokens = 0;
  private countedTexts = 0;
  /** An upper bound of the tokens in the texts not counted yet: UTF-16 units × 3 ≥ UTF-8 bytes ≥ tokens. */
  private uncountedBound = 0;
  private reachedAllowance = false;

  constructor(options: SseTapOptions) {
    this.reader = options.dialect.newStreamReader();
    this.strip = options.stripUsageChunk && options.dialect.usageOnRequest;
    this.now = options.now ?? Date.now;
    this.allowance = options.allowance;
    this.identitySought = options.noteIdentity === true;
  }

  get watching(): boolean {
    return this.allowance !== undefined;
  }

  get stripping(): boolean {
    return this.strip;
  }

  noteUsage(usage: Usage): void {
    this.usageSeen = usage;
  }

  noteFinished(): void {
    this.done = true;
  }

  noteError(error: StreamError): void {
    this.upstreamError = error;
  }

  /** True once the completion streamed so far reached the allowance: the relay ends the stream here. */
  get overAllowance(): boolean {
    return this.reachedAllowance;
  }

  /**
   * The events that end a cut stream the way the API ends one that hit its
   * output limit (the dialect's: each open choice finished with `length` and
   * `[DONE]`, the Responses API's `response.incomplete`, Anthropic's
   * `max_tokens` stop).
   */
  cutEnding(promptTokens: number, clientWantsUsage: boolean): Uint8Array {
    return this.reader.cutEnding(promptTokens, this.streamedTokens(), clientWantsUsage);
  }

  /** Tokens of all completion text streamed so far (exact). */
  streamedTokens(): number {
    this.countUp();
    return this.countedTokens;
  }

  private countUp(): void {
    if (this.allowance === undefined) return;
    for (; this.countedTexts < this.texts.length; this.countedTexts++) this.countedTokens += this.allowance.count(this.texts[this.countedTexts]!);
    this.uncountedBound = 0;
  }

  /** Feeds one chunk from upstream; returns the bytes to forward (possibly the same chunk, or none). */
  push(chunk: Uint8Array): Uint8Array | null {
    const held = this.pending?.byteLength ?? 0;
    const buffer = this.pending === null ? Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength) : Buffer.concat([this.pending, chunk]);
    const { end, dropped } = this.scan(buffer);
    if (this.reachedAllowance) {
      // Cut at the event that reached the allowance; what came after it in this read is not relayed.
      this.pending = null;
      const complete = this.strip ? buffer.subarray(0, end) : buffer.subarray(held, end);
      const forward = this.strip && dropped.length > 0 ? removeRanges(complete, dropped) : complete;
      return forward.byteLength === 0 ? null : forward;
    }
    this.pending = end < buffer.byteLength ? Buffer.from(buffer.subarray(end)) : null;
    if (!this.strip) return chunk;
    const complete = buffer.subarray(0, end);
    const forward = dropped.length === 0 ? complete : removeRanges(complete, dropped);
    return forward.byteLength === 0 ? null : forward;
  }

  /** Ends the stream; returns held-back bytes of an unterminated last event, if any. */
  finish(): Uint8Array | null {
    const rest = this.pending;
    this.pending = null;
    if (rest === null) return null;
    // A last event without its blank line still counts (some servers omit it).
    const ended = Buffer.concat([rest, Buffer.from('\n\n')]);
    const { dropped } = this.scan(ended);
    if (!this.strip) return null;
    if (dropped.length === 0) return rest;
    // Without the blank line added here; nothing left when the whole event was withheld.
    const kept = removeRanges(ended, dropped);
    return kept.byteLength <= 2 ? null : kept.subarray(0, kept.byteLength - 2);
  }

  /** The usage the upstream reported, once its usage chunk or completion event arrived. */
  get usage(): Usage | undefined {
    return this.usageSeen;
  }

  /**
   * The exact prompt usage a stream reported before its final usage
   * (Anthropic's `message_start`: its output count is not final), kept for a
   * stream that ends early. Undefined before it, or for dialects without one.
   */
  get promptUsage(): Usage | undefined {
    return this.reader.promptUsage;
  }

  /** True once `[DONE]` (or the Responses API's terminal event) was seen. */
  get finished(): boolean {
    return this.done;
  }

  /** When the first non-empty piece of output arrived (ms, per the tap's clock). */
  get firstTokenTime(): number | undefined {
    return this.firstTokenAt;
  }

  /** The Responses API's response id, once its first event carried it. */
  get responseId(): string | undefined {
    return this.reader.responseId;
  }

  /** The Responses API's output item ids seen so far (`response.output_item.*`, the terminal event's `output`). */
  get outputItemIds(): readonly string[] {
    return this.reader.outputItemIds?.() ?? NO_ITEMS;
  }

  /** An error event the upstream sent inside the stream, if any. */
  get error(): StreamError | undefined {
    return this.upstreamError;
  }

  /** All completion text streamed so far (content, tool-call arguments, refusals) concatenated. */
  completionText(): string {
    return this.texts.join('');
  }

  /**
   * Walks complete events in `buffer`. Returns where the last complete event
   * ends and the byte ranges of events to withhold.
   */
  private scan(buffer: Buffer): { end: number; dropped: Array<[number, number]> } {
    const dropped: Array<[number, number]> = [];
    let eventStart = 0;
    let lineStart = 0;
    let end = 0;
    for (;;) {
      const newline = buffer.indexOf(LF, lineStart);
      if (newline === -1) break;
      const lineEnd = newline > lineStart && buffer[newline - 1] === CR ? newline - 1 : newline;
      if (lineEnd === lineStart) {
        // Blank line: the event [eventStart, newline] is complete.
        if (newline > eventStart && this.handleEvent(buffer, eventStart, lineStart, dropped)) {
          dropped.push([eventStart, newline + 1]);
        }
        eventStart = newline + 1;
        end = eventStart;
        if (this.reachedAllowance) break;
      }
      lineStart = newline + 1;
    }
    return { end, dropped };
  }

  /**
   * Reads the event whose lines are in buffer[start, stop); returns true when it
   * is the usage chunk to withhold. Only the `data` and `event` fields are
   * decoded, straight from the bytes: the tap runs on every relayed chunk.
   * When stripping, the `"usage":null` member of any other chunk is added to
   * `dropped`, found in its bytes (no second parse).
   */
  private handleEvent(buffer: Buffer, start: number, stop: number, dropped: Array<[number, number]>): boolean {
    let data = '';
    let eventName = '';
    let dataLine = -1;
    let dataEnd = -1;
    for (let lineStart = start; lineStart < stop;) {
      const newline = buffer.indexOf(LF, lineStart);
      const next = newline === -1 || newline >= stop ? stop : newline;
      const lineEnd = next > lineStart && buffer[next - 1] === CR ? next - 1 : next;
      if (startsWithField(buffer, lineStart, lineEnd, DATA)) {
        const from = lineStart + 5 < lineEnd && buffer[lineStart + 5] === SPACE ? lineStart + 6 : lineStart + 5;
        const value = buffer.toString('utf8', from, lineEnd);
        data = data === '' ? value : `${data}\n${value}`;
        dataLine = from;
        dataEnd = lineEnd;
      } else if (startsWithField(buffer, lineStart, lineEnd, EVENT)) {
        eventName = buffer.toString('utf8', lineStart + 6, lineEnd).trim();
      }
      lineStart = next + 1;
    }
    if (data === '') return false;
    if (data === '[DONE]') {
      this.done = true;
      return false;
    }
    let payload: unknown;
    try {
      payload = JSON.parse(data);
    } catch {
      return false; // Garbage is forwarded as-is; the client's SDK decides what to make of it.
    }
    if (payload === null || typeof payload !== 'object') return false;
    if (this.identitySought) {
      this.identity = identityOfEvent(payload as Record<string, unknown>);
      this.identitySought = this.identity === undefined;
    }
    const withheld = this.reader.read(this, eventName, payload as Record<string, unknown>);
    if (this.strip && !withheld && (payload as { usage?: unknown }).usage === null) {
      const at = buffer.lastIndexOf(USAGE_NULL, dataEnd - USAGE_NULL.byteLength);
      if (at >= dataLine) dropped.push([at, at + USAGE_NULL.byteLength]);
    }
    return withheld;
  }

  collect(text: string): void {
    if (text === '') return;
    if (this.firstTokenAt === undefined) this.firstTokenAt = this.now();
    this.texts.push(text);
    const allowance = this.allowance;
    if (allowance === undefined || this.reachedAllowance) return;
    // Counting every delta would tokenize each stream twice; count only near the allowance.
    this.uncountedBound += text.length * 3;
    if (this.countedTokens + this.uncountedBound < allowance.tokens) return;
    this.countUp();
    if (this.countedTokens >= allowance.tokens) this.reachedAllowance = true;
  }
}

function removeRanges(buffer: Buffer, ranges: ReadonlyArray<readonly [number, number]>): Buffer {
  const parts: Buffer[] = [];
  let from = 0;
  for (const [start, stop] of ranges) {
    if (start > from) parts.push(buffer.subarray(from, start));
    from = stop;
  }
  if (from < buffer.byteLength) parts.push(buffer.subarray(from));
  return Buffer.concat(parts);
}

/** Whether the line buffer[start, end) begins with `field` (e.g. `data:`). */
function startsWithField(buffer: Buffer, start: number, end: number, field: Buffer): boolean {
  if (end - start < field.byteLength) return false;
  for (let i = 0; i < field.byteLength; i++) if (buffer[start + i] !== field[i]) return false;
  return true;
}
