/**
 * Responses API streams: named events (`response.created`, `….delta`, `response.output_item.*`,
 * a terminal `response.completed` / `incomplete` / `failed` carrying the whole response and its
 * usage). The reader also notes the response's id and its output items (they become the key's:
 * src/pipeline/ownership.ts). A cut stream ends with `response.incomplete`.
 */
import type { ErrorCode } from '../domain/errors.js';
import type { StreamReader, StreamTap } from './dialect.js';
import { describeStreamError } from './openai-chunks.js';
import { usageOfAnswer } from './usage.js';

class ResponsesReader implements StreamReader {
  private responseShell: Record<string, unknown> | undefined;
  private lastSequence = -1;
  private responseIdSeen: string | undefined;
  private readonly itemIdsSeen = new Set<string>();

  get responseId(): string | undefined {
    return this.responseIdSeen;
  }

  outputItemIds(): readonly string[] {
    return [...this.itemIdsSeen];
  }

  read(tap: StreamTap, eventName: string, event: Record<string, unknown>): boolean {
    const type = typeof event.type === 'string' ? event.type : eventName;
    if (tap.watching) {
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
      tap.collect(event.delta);
      return false;
    }
    if (type === 'response.output_item.added' || type === 'response.output_item.done') this.noteItem(event.item);
    if (type === 'response.completed' || type === 'response.incomplete' || type === 'response.failed') {
      const response = event.response as Record<string, unknown> | undefined;
      if (Array.isArray(response?.output)) for (const item of response.output) this.noteItem(item);
      const usage = usageOfAnswer(response);
      if (usage !== undefined) tap.noteUsage(usage);
      tap.noteFinished();
      if (type === 'response.failed') tap.noteError(describeStreamError(response?.error));
      return false;
    }
    if (type === 'error') tap.noteError(describeStreamError(event));
    return false;
  }

  cutEnding(promptTokens: number, completionTokens: number): Uint8Array {
    const response = {
      ...this.responseShell,
      status: 'incomplete',
      incomplete_details: { reason: 'max_output_tokens' },
      usage: { input_tokens: promptTokens, output_tokens: completionTokens, total_tokens: promptTokens + completionTokens },
    };
    const event = { type: 'response.incomplete', sequence_number: this.lastSequence + 1, response };
    return Buffer.from(`event: response.incomplete\ndata: ${JSON.stringify(event)}\n\n`);
  }

  private noteItem(item: unknown): void {
    const id = (item as { id?: unknown } | null | undefined)?.id;
    if (typeof id === 'string' && id !== '') this.itemIdsSeen.add(id);
  }
}

/** A reader for one Responses stream. */
export function newResponsesReader(): StreamReader {
  return new ResponsesReader();
}

/** The Responses API's own `error` event. */
export function responsesErrorEvent(code: ErrorCode, message: string): Uint8Array {
  return Buffer.from(`event: error\ndata: ${JSON.stringify({ type: 'error', code, message, param: null })}\n\n`);
}
