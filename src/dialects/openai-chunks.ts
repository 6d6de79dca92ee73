/**
 * Chat Completions and Completions streams: `data:` chunks of `choices`, a usage-only chunk
 * (`choices: []`) when asked for, `[DONE]`. A cut stream ends as one that hit its output limit:
 * each open choice finished with `length`, a usage chunk when the client asked for one, `[DONE]`.
 */
import type { ErrorCode } from '../domain/errors.js';
import type { StreamError, StreamReader, StreamTap } from './dialect.js';
import { usageOfAnswer } from './usage.js';

/** What a stream's chunks are made of, kept to end a cut stream in kind. */
interface ChunkShell {
  readonly id: unknown;
  readonly object: unknown;
  readonly created: unknown;
  readonly model: unknown;
}

/** How one choice of a chunk that finishes a cut stream looks (chat's `delta`, completions' `text`). */
type FinalChoice = (index: number) => Record<string, unknown>;

class ChunkReader implements StreamReader {
  private shell: ChunkShell | undefined;
  private readonly openChoices = new Set<number>();

  private readonly object: string;
  private readonly finalChoice: FinalChoice;

  constructor(object: string, finalChoice: FinalChoice) {
    this.object = object;
    this.finalChoice = finalChoice;
  }

  read(tap: StreamTap, _eventName: string, chunk: Record<string, unknown>): boolean {
    if (chunk.error !== undefined && chunk.error !== null) {
      tap.noteError(describeStreamError(chunk.error));
      return false;
    }
    const usage = usageOfAnswer(chunk);
    if (usage !== undefined) tap.noteUsage(usage);
    const choices = chunk.choices;
    if (tap.watching && this.shell === undefined) this.shell = { id: chunk.id, object: chunk.object, created: chunk.created, model: chunk.model };
    if (Array.isArray(choices)) {
      for (const choice of choices) this.readChoice(tap, choice);
      return usage !== undefined && choices.length === 0 && tap.stripping;
    }
    return false;
  }

  cutEnding(promptTokens: number, completionTokens: number, clientWantsUsage: boolean): Uint8Array {
    const usage = { prompt_tokens: promptTokens, completion_tokens: completionTokens, total_tokens: promptTokens + completionTokens };
    const shell = this.shell ?? { id: null, object: this.object, created: 0, model: null };
    const choices = this.openChoices.size === 0 ? [0] : [...this.openChoices];
    let text = '';
    for (const index of choices) text += `data: ${JSON.stringify({ ...shell, choices: [this.finalChoice(index)] })}\n\n`;
    if (clientWantsUsage) text += `data: ${JSON.stringify({ ...shell, choices: [], usage })}\n\n`;
    return Buffer.from(`${text}data: [DONE]\n\n`);
  }

  private readChoice(tap: StreamTap, choice: unknown): void {
    if (choice === null || typeof choice !== 'object') return;
    const { delta, text, index, finish_reason: finishReason } = choice as { delta?: unknown; text?: unknown; index?: unknown; finish_reason?: unknown };
    if (tap.watching && typeof index === 'number') {
      if (finishReason === null || finishReason === undefined) this.openChoices.add(index);
      else this.openChoices.delete(index);
    }
    if (typeof text === 'string') tap.collect(text);
    if (delta === null || typeof delta !== 'object') return;
    const { content, refusal, tool_calls: toolCalls, function_call: functionCall } = delta as Record<string, unknown>;
    if (typeof content === 'string') tap.collect(content);
    if (typeof refusal === 'string') tap.collect(refusal);
    if (Array.isArray(toolCalls)) {
      for (const call of toolCalls) collectFunction(tap, (call as { function?: unknown } | null)?.function);
    }
    collectFunction(tap, functionCall);
  }
}

function collectFunction(tap: StreamTap, fn: unknown): void {
  if (fn === null || typeof fn !== 'object') return;
  const { name, arguments: args } = fn as { name?: unknown; arguments?: unknown };
  if (typeof name === 'string') tap.collect(name);
  if (typeof args === 'string') tap.collect(args);
}

function finalChatChoice(index: number): Record<string, unknown> {
  return { index, delta: {}, logprobs: null, finish_reason: 'length' };
}

function finalCompletionChoice(index: number): Record<string, unknown> {
  return { text: '', index, logprobs: null, finish_reason: 'length' };
}

/** A reader for one Chat Completions stream. */
export function newChatReader(): StreamReader {
  return new ChunkReader('chat.completion.chunk', finalChatChoice);
}

/** A reader for one Completions stream. */
export function newCompletionsReader(): StreamReader {
  return new ChunkReader('text_completion', finalCompletionChoice);
}

/** An error as OpenAI streams report one (`code` and `message`, either on the chunk's `error` or on the event itself). */
export function describeStreamError(error: unknown): StreamError {
  const fields = error !== null && typeof error === 'object' ? (error as Record<string, unknown>) : {};
  return {
    message: typeof fields.message === 'string' ? fields.message : 'upstream stream error',
    code: typeof fields.code === 'string' ? fields.code : null,
  };
}

/** A chunk carrying an error in OpenAI's shape, which its SDKs raise as an APIError. */
export function chunkErrorEvent(code: ErrorCode, message: string): Uint8Array {
  const error = { message, type: 'upstream_error', param: null, code };
  return Buffer.from(`data: ${JSON.stringify({ error })}\n\n`);
}
