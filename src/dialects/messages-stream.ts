/**
 * Anthropic Messages streams: `message_start` (the prompt's usage), content blocks started,
 * deltas and stopped, `message_delta` (the final output count), `message_stop`. Nothing is ever
 * withheld. A cut stream ends as a message that reached `max_tokens`.
 */
import type { ErrorCode } from '../domain/errors.js';
import { mergeStreamUsage, readAnthropicUsage } from './anthropic-usage.js';
import type { StreamReader, StreamTap } from './dialect.js';
import type { Usage } from './usage.js';

const DELTA_TEXTS = ['text', 'thinking', 'partial_json'] as const;

class MessagesReader implements StreamReader {
  /** `message_start`'s raw usage. */
  private messageStartUsage: unknown;
  /** Content blocks started and not stopped yet. */
  private readonly openBlocks = new Set<number>();

  /** The exact prompt usage `message_start` reported (its output count is not final). */
  get promptUsage(): Usage | undefined {
    return readAnthropicUsage(this.messageStartUsage);
  }

  read(tap: StreamTap, eventName: string, event: Record<string, unknown>): boolean {
    const type = typeof event.type === 'string' ? event.type : eventName;
    const index = typeof event.index === 'number' ? event.index : undefined;
    switch (type) {
      case 'message_start':
        this.messageStartUsage = (event.message as { usage?: unknown } | null | undefined)?.usage;
        break;
      case 'content_block_start': {
        if (index !== undefined) this.openBlocks.add(index);
        const block = event.content_block as Record<string, unknown> | null | undefined;
        if (typeof block?.name === 'string') tap.collect(block.name);
        if (typeof block?.text === 'string') tap.collect(block.text);
        break;
      }
      case 'content_block_delta': {
        const delta = (event.delta ?? {}) as Record<string, unknown>;
        for (const name of DELTA_TEXTS) {
          const value = delta[name];
          if (typeof value === 'string') tap.collect(value);
        }
        break;
      }
      case 'content_block_stop':
        if (index !== undefined) this.openBlocks.delete(index);
        break;
      case 'message_delta': {
        const usage = readAnthropicUsage(mergeStreamUsage(this.messageStartUsage, event.usage));
        if (usage !== undefined) tap.noteUsage(usage);
        break;
      }
      case 'message_stop':
        tap.noteFinished();
        break;
      case 'error': {
        const error = (event.error ?? {}) as Record<string, unknown>;
        tap.noteError({
          message: typeof error.message === 'string' ? error.message : 'upstream stream error',
          code: typeof error.type === 'string' ? error.type : null,
        });
        break;
      }
      default:
        break;
    }
    return false;
  }

  /**
   * How Anthropic ends a message that reached `max_tokens`: its open content blocks stopped, a
   * `message_delta` with `stop_reason: "max_tokens"` and the output count, then `message_stop`.
   */
  cutEnding(_promptTokens: number, outputTokens: number): Uint8Array {
    let text = '';
    for (const index of [...this.openBlocks].sort((a, b) => a - b)) text += event('content_block_stop', { index });
    text += event('message_delta', { delta: { stop_reason: 'max_tokens', stop_sequence: null }, usage: { output_tokens: outputTokens } });
    text += event('message_stop', {});
    return Buffer.from(text);
  }
}

function event(type: string, payload: Record<string, unknown>): string {
  return `event: ${type}\ndata: ${JSON.stringify({ type, ...payload })}\n\n`;
}

/** A reader for one Messages stream. */
export function newMessagesReader(): StreamReader {
  return new MessagesReader();
}

/** Anthropic's own error event, which its SDKs raise as an APIError. */
export function messagesErrorEvent(code: ErrorCode, message: string): Uint8Array {
  const type = code === 'upstream_timeout' ? 'timeout_error' : 'api_error';
  return Buffer.from(`event: error\ndata: ${JSON.stringify({ type: 'error', error: { type, message } })}\n\n`);
}
