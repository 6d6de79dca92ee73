/**
 * A tap on an upstream SSE stream. Bytes go to the client as they arrive; on
 * the side the tap reads the events to learn the final usage, the completion
 * text streamed so far (never billed below, if the stream ends early), when
 * the first token came, and whether the stream finished. After the client
 * left, the relay keeps feeding it the upstream's bytes (and drops what it
 * returns) until the usage arrives.
 *
 * When Tollgate asked the upstream for a usage chunk the client did not ask
 * for, the tap withholds exactly that event and forwards every other byte as
 * sent. Only in that mode does it hold back the (small) tail of an unfinished
 * event until its terminating blank line arrives.
 */
import type { Endpoint } from '../endpoints.js';
import { mergeStreamUsage, readAnthropicUsage } from './anthropic-usage.js';
import { usageOfAnswer, type Usage } from './usage.js';

const LF = 0x0a;
const CR = 0x0d;
const SPACE = 0x20;
const DATA = Buffer.from('data:');
const EVENT = Buffer.from('event:');

export interface SseTapOptions {
  readonly endpoint: Endpoint;
  /** Withhold the usage-only chunk (chat/completions) the client did not request. */
  readonly stripUsageChunk: boolean;
  /** Clock for time-to-first-token, injectable for tests. */
  readonly now?: () => number;
  /**
   * Completion tokens (all choices) the stream may carry before Tollgate ends it
   * (a budget's or cost cap's limit), and how to count them.
   */
  readonly allowance?: { readonly tokens: number; readonly count: (text: string) => number };
}

/** What a chat or completions stream's chunks are made of, kept to end a cut stream in kind. */
interface ChunkShell {
  readonly id: unknown;
  readonly object: unknown;
  readonly created: unknown;
  readonly model: unknown;
}

/** An error the upstream reported inside the stream. */
export interface StreamError {
  readonly message: string;
  readonly code: string | null;
}

export class SseTap {
  private readonly endpoint: Endpoint;
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
  /** Exact tokens of texts[0, countedTexts). */
  private countedTokens = 0;
  private countedTexts = 0;
  /** An upper bound of the tokens in the texts not counted yet: UTF-16 units × 3 ≥ UTF-8 bytes ≥ tokens. */
  private uncountedBound = 0;
  private reachedAllowance = false;
  private shell: ChunkShell | undefined;
  private readonly openChoices = new Set<number>();
  private responseShell: Record<string, unknown> | undefined;
  private lastSequence = -1;
  private responseIdSeen: string | undefined;
  /** Responses API: ids of the output items streamed (they become the key's: src/responses/ownership.ts). */
  private readonly itemIdsSeen = new Set<string>();
  /** Anthropic Messages: `message_start`'s raw usage, and its content blocks not stopped yet. */
  private messageStartUsage: unknown;
  private readonly openBlocks = new Set<number>();

  constructor(options: SseTapOptions) {
    this.endpoint = options.endpoint;
    this.strip = options.stripUsageChunk && (options.endpoint === 'chat' || options.endpoint === 'completions');
    this.now = options.now ?? Date.now;
    this.allowance = options.allowance;
  }

  /** True once the completion streamed so far reached the allowance: the relay ends the stream here. */
  get overAllowance(): boolean {
    return this.reachedAllowance;
  }

  /**
   * The events that end a cut stream the way the endpoint ends one that hit its
   * output limit: each open choice finished with `length` (a usage chunk when the
   * client asked for one) and `[DONE]`, or the Responses API's `response.incomplete`.
   */
  cutEnding(promptTokens: number, clientWantsUsage: boolean): Uint8Array {
    const completionTokens = this.streamedTokens();
    if (this.endpoint === 'messages')
      return messagesCutEnding(
        [...this.openBlocks].sort((a, b) => a - b),
        completionTokens,
      );
    const usage = { prompt_tokens: promptTokens, completion_tokens: completionTokens, total_tokens: promptTokens + completionTokens };
    if (this.endpoint === 'responses') {
      const response = {
        ...this.responseShell,
        status: 'incomplete',
        incomplete_details: { reason: 'max_output_tokens' },
        usage: { input_tokens: promptTokens, output_tokens: completionTokens, total_tokens: promptTokens + completionTokens },
      };
      const event = { type: 'response.incomplete', sequence_number: this.lastSequence + 1, response };
      return Buffer.from(`event: response.incomplete\ndata: ${JSON.stringify(event)}\n\n`);
    }
    const shell = this.shell ?? { id: null, object: this.endpoint === 'chat' ? 'chat.completion.chunk' : 'text_completion', created: 0, model: null };
    const choices = this.openChoices.size === 0 ? [0] : [...this.openChoices];
    let text = '';
    for (const index of choices) {
      const choice =
        this.endpoint === 'chat' ? { index, delta: {}, logprobs: null, finish_reason: 'length' } : { text: '', index, logprobs: null, finish_reason: 'length' };
      text += `data: ${JSON.stringify({ ...shell, choices: [choice] })}\n\n`;
    }
    if (clientWantsUsage) text += `data: ${JSON.stringify({ ...shell, choices: [], usage })}\n\n`;
    return Buffer.from(`${text}data: [DONE]\n\n`);
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
    const { dropped } = this.scan(Buffer.concat([rest, Buffer.from('\n\n')]));
    if (!this.strip) return null;
    return dropped.length > 0 ? null : rest;
  }

  /** The usage the upstream reported, once its usage chunk or completion event arrived. */
  get usage(): Usage | undefined {
    return this.usageSeen;
  }

  /**
   * Anthropic Messages streams: the exact prompt usage `message_start` reported (its output
   * count is not final), kept for a stream that ends before its `message_delta`. Undefined
   * before `message_start` or for other endpoints.
   */
  get promptUsage(): Usage | undefined {
    return readAnthropicUsage(this.messageStartUsage);
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
    return this.responseIdSeen;
  }

  /** The Responses API's output item ids seen so far (`response.output_item.*`, the terminal event's `output`). */
  get outputItemIds(): readonly string[] {
    return [...this.itemIdsSeen];
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
        if (newline > eventStart && this.handleEvent(buffer, eventStart, lineStart)) {
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
   */
  private handleEvent(buffer: Buffer, start: number, stop: number): boolean {
    let data = '';
    let eventName = '';
    for (let lineStart = start; lineStart < stop;) {
      const newline = buffer.indexOf(LF, lineStart);
      const next = newline === -1 || newline >= stop ? stop : newline;
      const lineEnd = next > lineStart && buffer[next - 1] === CR ? next - 1 : next;
      if (startsWithField(buffer, lineStart, lineEnd, DATA)) {
        const from = lineStart + 5 < lineEnd && buffer[lineStart + 5] === SPACE ? lineStart + 6 : lineStart + 5;
        const value = buffer.toString('utf8', from, lineEnd);
        data = data === '' ? value : `${data}\n${value}`;
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
    const event = payload as Record<string, unknown>;
    if (this.endpoint === 'messages') return this.readMessagesEvent(eventName, event);
    return this.endpoint === 'responses' ? this.readResponsesEvent(eventName, event) : this.readChunk(event);
  }

  /** Anthropic's Messages events (message_start … message_stop); nothing is ever withheld. */
  private readMessagesEvent(eventName: string, event: Record<string, unknown>): boolean {
    const type = typeof event.type === 'string' ? event.type : eventName;
    const index = typeof event.index === 'number' ? event.index : undefined;
    switch (type) {
      case 'message_start':
        this.messageStartUsage = (event.message as { usage?: unknown } | null | undefined)?.usage;
        break;
      case 'content_block_start': {
        if (index !== undefined) this.openBlocks.add(index);
        const block = event.content_block as Record<string, unknown> | null | undefined;
        if (typeof block?.name === 'string') this.collect(block.name);
        if (typeof block?.text === 'string') this.collect(block.text);
        break;
      }
      case 'content_block_delta': {
        const delta = (event.delta ?? {}) as Record<string, unknown>;
        for (const name of ['text', 'thinking', 'partial_json'] as const) {
          const value = delta[name];
          if (typeof value === 'string') this.collect(value);
        }
        break;
      }
      case 'content_block_stop':
        if (index !== undefined) this.openBlocks.delete(index);
        break;
      case 'message_delta': {
        const usage = readAnthropicUsage(mergeStreamUsage(this.messageStartUsage, event.usage));
        if (usage !== undefined) this.usageSeen = usage;
        break;
      }
      case 'message_stop':
        this.done = true;
        break;
      case 'error': {
        const error = (event.error ?? {}) as Record<string, unknown>;
        this.upstreamError = {
          message: typeof error.message === 'string' ? error.message : 'upstream stream error',
          code: typeof error.type === 'string' ? error.type : null,
        };
        break;
      }
      default:
        break;
    }
    return false;
  }

  private readChunk(chunk: Record<string, unknown>): boolean {
    if (chunk.error !== undefined && chunk.error !== null) {
      this.upstreamError = describeStreamError(chunk.error);
      return false;
    }
    const usage = usageOfAnswer(chunk);
    if (usage !== undefined) this.usageSeen = usage;
    const choices = chunk.choices;
    if (this.allowance !== undefined && this.shell === undefined)
      this.shell = { id: chunk.id, object: chunk.object, created: chunk.created, model: chunk.model };
    if (Array.isArray(choices)) {
      for (const choice of choices) this.collectChoice(choice);
      return usage !== undefined && choices.length === 0 && this.strip;
    }
    return false;
  }

  private collectChoice(choice: unknown): void {
    if (choice === null || typeof choice !== 'object') return;
    const { delta, text, index, finish_reason: finishReason } = choice as { delta?: unknown; text?: unknown; index?: unknown; finish_reason?: unknown };
    if (this.allowance !== undefined && typeof index === 'number') {
      if (finishReason === null || finishReason === undefined) this.openChoices.add(index);
      else this.openChoices.delete(index);
    }
    if (typeof text === 'string') this.collect(text);
    if (delta === null || typeof delta !== 'object') return;
    const { content, refusal, tool_calls: toolCalls, function_call: functionCall } = delta as Record<string, unknown>;
    if (typeof content === 'string') this.collect(content);
    if (typeof refusal === 'string') this.collect(refusal);
    if (Array.isArray(toolCalls)) {
      for (const call of toolCalls) this.collectFunction((call as { function?: unknown } | null)?.function);
    }
    this.collectFunction(functionCall);
  }

  private collectFunction(fn: unknown): void {
    if (fn === null || typeof fn !== 'object') return;
    const { name, arguments: args } = fn as { name?: unknown; arguments?: unknown };
    if (typeof name === 'string') this.collect(name);
    if (typeof args === 'string') this.collect(args);
  }

  private readResponsesEvent(eventName: string, event: Record<string, unknown>): boolean {
    const type = typeof event.type === 'string' ? event.type : eventName;
    if (this.allowance !== undefined) {
      if (typeof event.sequence_number === 'number') this.lastSequence = event.sequence_number;
      if (type === 'response.created' && event.response !== null && typeof event.response === 'object') {
        this.responseShell = event.response as Record<string, unknown>;
      }
    }
    if (this.responseIdSeen === undefined && type.startsWith('response.')) {
      const id = (event.response as { id?: unknown } | undefined)?.id;
      if (typeof id === 'string' && id !== '') this.responseIdSeen = id;
    }
    if (type.endsWith('.delta') && typeof event.delta === 'string') {
      this.collect(event.delta);
      return false;
    }
    if (type === 'response.output_item.added' || type === 'response.output_item.done') this.noteItem(event.item);
    if (type === 'response.completed' || type === 'response.incomplete' || type === 'response.failed') {
      const response = event.response as Record<string, unknown> | undefined;
      if (Array.isArray(response?.output)) for (const item of response.output) this.noteItem(item);
      const usage = usageOfAnswer(response);
      if (usage !== undefined) this.usageSeen = usage;
      this.done = true;
      if (type === 'response.failed') this.upstreamError = describeStreamError(response?.error);
      return false;
    }
    if (type === 'error') this.upstreamError = describeStreamError(event);
    return false;
  }

  private noteItem(item: unknown): void {
    const id = (item as { id?: unknown } | null | undefined)?.id;
    if (typeof id === 'string' && id !== '') this.itemIdsSeen.add(id);
  }

  private collect(text: string): void {
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

/**
 * How Anthropic ends a message that reached `max_tokens`: its open content blocks stopped, a
 * `message_delta` with `stop_reason: "max_tokens"` and the output count, then `message_stop`.
 */
function messagesCutEnding(openBlocks: readonly number[], outputTokens: number): Uint8Array {
  const event = (type: string, payload: Record<string, unknown>): string => `event: ${type}\ndata: ${JSON.stringify({ type, ...payload })}\n\n`;
  let text = '';
  for (const index of openBlocks) text += event('content_block_stop', { index });
  text += event('message_delta', { delta: { stop_reason: 'max_tokens', stop_sequence: null }, usage: { output_tokens: outputTokens } });
  text += event('message_stop', {});
  return Buffer.from(text);
}

function describeStreamError(error: unknown): StreamError {
  const fields = error !== null && typeof error === 'object' ? (error as Record<string, unknown>) : {};
  return {
    message: typeof fields.message === 'string' ? fields.message : 'upstream stream error',
    code: typeof fields.code === 'string' ? fields.code : null,
  };
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
