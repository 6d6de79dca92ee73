/**
 * Reading Anthropic's Messages API usage. Its `usage` differs from OpenAI's in one way that
 * matters for money: `input_tokens` leaves out the prompt tokens read from or written to the
 * cache, which come as `cache_read_input_tokens` and `cache_creation_input_tokens` (split by
 * TTL in `cache_creation.ephemeral_5m_input_tokens` / `ephemeral_1h_input_tokens`). Tollgate's
 * {@link Usage} counts the whole prompt, with the cached and written parts inside it.
 *
 * A stream reports usage twice: `message_start.message.usage` (input, cache, and an output count
 * that is not final) and `message_delta.usage` (cumulative `output_tokens`, and in newer API
 * versions the input fields again). {@link mergeStreamUsage} overlays the second on the first.
 */
import { field, type Usage } from './usage.js';

function count(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0 ? value : undefined;
}

/** Usage from an Anthropic `usage` object; undefined when it has no `input_tokens`. */
export function readAnthropicUsage(usage: unknown): Usage | undefined {
  const input = count(field(usage, 'input_tokens'));
  if (input === undefined) return undefined;
  const cacheRead = count(field(usage, 'cache_read_input_tokens')) ?? 0;
  const created = count(field(usage, 'cache_creation_input_tokens')) ?? 0;
  const split = field(usage, 'cache_creation');
  const write1h = count(field(split, 'ephemeral_1h_input_tokens')) ?? 0;
  // Writes the split does not name were made with the default TTL, 5 minutes.
  const write5m = Math.max(count(field(split, 'ephemeral_5m_input_tokens')) ?? 0, created - write1h);
  const searches = count(field(field(usage, 'server_tool_use'), 'web_search_requests')) ?? 0;
  return {
    promptTokens: input + cacheRead + write5m + write1h,
    cachedTokens: cacheRead,
    completionTokens: count(field(usage, 'output_tokens')) ?? 0,
    // Thinking is billed as output and not reported apart.
    reasoningTokens: 0,
    ...(write5m > 0 ? { cacheWrite5mTokens: write5m } : {}),
    ...(write1h > 0 ? { cacheWrite1hTokens: write1h } : {}),
    ...(searches > 0 ? { toolCalls: { webSearch: searches } } : {}),
  };
}

/** `message_start`'s usage with the fields `message_delta` reports laid over it (nulls ignored). */
export function mergeStreamUsage(start: unknown, delta: unknown): unknown {
  const merged: Record<string, unknown> = {};
  for (const source of [start, delta]) {
    if (source === null || typeof source !== 'object') continue;
    for (const [key, value] of Object.entries(source as Record<string, unknown>)) if (value !== null && value !== undefined) merged[key] = value;
  }
  return merged;
}

/** Usage of a whole Messages JSON answer. */
export function anthropicUsageFromJson(bytes: Buffer): Usage | undefined {
  try {
    return readAnthropicUsage(field(JSON.parse(bytes.toString('utf8')), 'usage'));
  } catch {
    return undefined;
  }
}

/** The generated text of a Messages JSON answer (text, thinking, tool inputs), for an answer without usage. */
export function completionTextOfMessage(bytes: Buffer): string {
  let content: unknown;
  try {
    content = field(JSON.parse(bytes.toString('utf8')), 'content');
  } catch {
    return '';
  }
  if (!Array.isArray(content)) return '';
  const parts: string[] = [];
  for (const block of content) {
    for (const name of ['text', 'thinking', 'name']) {
      const value = field(block, name);
      if (typeof value === 'string') parts.push(value);
    }
    const input = field(block, 'input');
    if (input !== undefined) parts.push(JSON.stringify(input));
  }
  return parts.join('');
}
