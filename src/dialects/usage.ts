/**
 * What an upstream billed ({@link Usage}, every dialect's readers return it), and
 * reading it from OpenAI's shapes: chat, completions, embeddings and the
 * Responses API (Anthropic's: anthropic-usage.ts). Zero is a number like any
 * other: a field that is absent is absent, never "0 means missing".
 */
import type { ToolCalls } from '../estimate/price-types.js';

/** What the upstream billed for one request: tokens, and what else its answer says it used. */
export interface Usage {
  readonly promptTokens: number;
  /** Part of promptTokens served from the prompt cache. */
  readonly cachedTokens: number;
  readonly completionTokens: number;
  /** Part of completionTokens spent on hidden reasoning. */
  readonly reasoningTokens: number;
  /** Part of promptTokens that is audio (`prompt_tokens_details.audio_tokens`). */
  readonly audioPromptTokens?: number;
  /** Part of completionTokens that is audio (`completion_tokens_details.audio_tokens`). */
  readonly audioCompletionTokens?: number;
  /** The `service_tier` the answer says was used (`default`, `priority`, `flex` …). */
  readonly serviceTier?: string;
  /** Built-in tool calls in a Responses answer's `output`. */
  readonly toolCalls?: ToolCalls;
  /** Part of promptTokens written to Anthropic's prompt cache with the 5-minute TTL (billed 1.25× input). */
  readonly cacheWrite5mTokens?: number;
  /** Part of promptTokens written to Anthropic's prompt cache with the 1-hour TTL (billed 2× input). */
  readonly cacheWrite1hTokens?: number;
  /** What the upstream says the request cost (OpenRouter's `usage.cost`, USD), µUSD rounded up; used where the upstream is trusted to say. */
  readonly reportedCostMicros?: number;
}

function count(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0 ? value : undefined;
}

/** A member of a parsed JSON value, or undefined when it is not an object. */
export function field(value: unknown, name: string): unknown {
  return value !== null && typeof value === 'object' ? (value as Record<string, unknown>)[name] : undefined;
}

/**
 * Reads a `usage` object in either the chat/completions/embeddings shape
 * (`prompt_tokens`, `completion_tokens`, `…_details`) or the Responses shape
 * (`input_tokens`, `output_tokens`, `…_details`). Undefined when it holds no
 * prompt count.
 */
export function readUsage(usage: unknown, serviceTier?: string): Usage | undefined {
  if (usage === null || typeof usage !== 'object') return undefined;
  const prompt = count(field(usage, 'prompt_tokens')) ?? count(field(usage, 'input_tokens'));
  if (prompt === undefined) return undefined;
  const stated = count(field(usage, 'completion_tokens')) ?? count(field(usage, 'output_tokens')) ?? 0;
  // Gemini's OpenAI-compatible endpoint leaves its thoughts out of completion_tokens but not out
  // of total_tokens; they are billed as output, so the output is whatever the total leaves.
  const total = count(field(usage, 'total_tokens'));
  const completion = total !== undefined && total - prompt > stated ? total - prompt : stated;
  const cost = field(usage, 'cost');
  const promptDetails = field(usage, 'prompt_tokens_details') ?? field(usage, 'input_tokens_details');
  const completionDetails = field(usage, 'completion_tokens_details') ?? field(usage, 'output_tokens_details');
  const cached = Math.min(prompt, count(field(promptDetails, 'cached_tokens')) ?? 0);
  const reasoning = Math.min(completion, count(field(completionDetails, 'reasoning_tokens')) ?? 0);
  const audioIn = count(field(promptDetails, 'audio_tokens'));
  const audioOut = count(field(completionDetails, 'audio_tokens'));
  return {
    promptTokens: prompt,
    cachedTokens: cached,
    completionTokens: completion,
    reasoningTokens: reasoning,
    ...(audioIn === undefined || audioIn === 0 ? {} : { audioPromptTokens: Math.min(prompt, audioIn) }),
    ...(audioOut === undefined || audioOut === 0 ? {} : { audioCompletionTokens: Math.min(completion, audioOut) }),
    ...(typeof cost === 'number' && Number.isFinite(cost) && cost >= 0 && cost < 1e6 ? { reportedCostMicros: costMicros(cost) } : {}),
    ...(serviceTier === undefined ? {} : { serviceTier }),
  };
}

/** USD as a float (as OpenRouter reports it) → µUSD, rounded up; the 1e-6 absorbs binary float noise (0.0000123 × 1e6 = 12.300000000000002). */
function costMicros(usd: number): number {
  return Math.max(0, Math.ceil(usd * 1e6 - 1e-6));
}

/**
 * Built-in tool calls among a Responses answer's `output` items: web and file search calls,
 * images generated, and the distinct Code Interpreter containers used (billed per container).
 * Calls that failed are not billed by the API and not counted here.
 */
export function readToolCalls(output: unknown): ToolCalls | undefined {
  if (!Array.isArray(output)) return undefined;
  let webSearch = 0;
  let fileSearch = 0;
  let imageGeneration = 0;
  const containers = new Set<string>();
  let anonymousContainers = 0;
  for (const item of output) {
    const type = field(item, 'type');
    if (field(item, 'status') === 'failed') continue;
    if (type === 'web_search_call') webSearch += 1;
    else if (type === 'file_search_call') fileSearch += 1;
    else if (type === 'image_generation_call') imageGeneration += 1;
    else if (type === 'code_interpreter_call') {
      const container = field(item, 'container_id');
      if (typeof container === 'string' && container !== '') containers.add(container);
      else anonymousContainers = 1;
    }
  }
  const codeInterpreter = containers.size + (containers.size === 0 ? anonymousContainers : 0);
  if (webSearch + fileSearch + imageGeneration + codeInterpreter === 0) return undefined;
  return {
    ...(webSearch > 0 ? { webSearch } : {}),
    ...(fileSearch > 0 ? { fileSearch } : {}),
    ...(codeInterpreter > 0 ? { codeInterpreter } : {}),
    ...(imageGeneration > 0 ? { imageGeneration } : {}),
  };
}

/**
 * Usage from a whole answer object of any endpoint — a JSON body, a chat/completions stream chunk,
 * or the `response` of a Responses terminal event: its `usage` plus the `service_tier` it reports
 * and, for Responses, the built-in tool calls in its `output`.
 */
export function usageOfAnswer(answer: unknown): Usage | undefined {
  const tier = field(answer, 'service_tier');
  const usage = readUsage(field(answer, 'usage'), typeof tier === 'string' && tier !== '' ? tier : undefined);
  if (usage === undefined) return undefined;
  const toolCalls = readToolCalls(field(answer, 'output'));
  return toolCalls === undefined ? usage : { ...usage, toolCalls };
}

const USAGE_KEY = Buffer.from('"usage"');

/**
 * Usage from a JSON answer without parsing all of it: OpenAI puts the
 * top-level `usage` object at the end, and an embeddings answer can be
 * megabytes of vectors. Finds the last `"usage"` key (a real key, not text
 * inside a string: those quotes are escaped), parses just its object, and
 * falls back to a full parse when that fails.
 */
export function usageFromJsonBytes(bytes: Buffer): Usage | undefined {
  const object = parseUsageObject(bytes);
  // A Responses answer (`input_tokens`) is parsed whole: its built-in tool calls are in `output`.
  const responses = field(object, 'input_tokens') !== undefined;
  // Embeddings (no completion count) have no tier, and their answers can be megabytes: no scan.
  // The tier goes into the one literal readUsage builds: defined after a spread of the usage, it
  // went through V8's runtime on every answer (src/pipeline/context.ts, Whole).
  const tier = responses || field(object, 'completion_tokens') === undefined ? undefined : topLevelServiceTier(bytes);
  const found = readUsage(object, tier);
  if (found !== undefined && !responses) return found;
  try {
    return usageOfAnswer(JSON.parse(bytes.toString('utf8'))) ?? found;
  } catch {
    return found;
  }
}

const SERVICE_TIER_KEY = Buffer.from('"service_tier"');

/**
 * The `service_tier` of a chat or completions answer without parsing it all: its last
 * `"service_tier"` key (chat answers carry it once, at the top level; quotes inside strings are
 * escaped, so the key cannot come from generated text).
 */
function topLevelServiceTier(bytes: Buffer): string | undefined {
  const at = bytes.lastIndexOf(SERVICE_TIER_KEY);
  if (at < 0) return undefined;
  const match = /^"service_tier"\s*:\s*"([a-z_]{1,32})"/.exec(bytes.toString('utf8', at, at + 64));
  return match?.[1];
}

function isSpace(byte: number | undefined): boolean {
  return byte === 0x20 || byte === 0x0a || byte === 0x0d || byte === 0x09;
}

function parseUsageObject(bytes: Buffer): unknown {
  const at = bytes.lastIndexOf(USAGE_KEY);
  if (at <= 0) return undefined;
  let before = at - 1;
  while (before > 0 && isSpace(bytes[before])) before -= 1;
  if (bytes[before] !== 0x2c /* , */ && bytes[before] !== 0x7b /* { */) return undefined;
  let i = at + USAGE_KEY.length;
  while (isSpace(bytes[i])) i += 1;
  if (bytes[i] !== 0x3a /* : */) return undefined;
  i += 1;
  while (isSpace(bytes[i])) i += 1;
  if (bytes[i] !== 0x7b) return undefined;
  const start = i;
  let depth = 0;
  let inString = false;
  for (; i < bytes.length; i += 1) {
    const byte = bytes[i];
    if (inString) {
      if (byte === 0x5c /* \ */) i += 1;
      else if (byte === 0x22 /* " */) inString = false;
    } else if (byte === 0x22) {
      inString = true;
    } else if (byte === 0x7b) {
      depth += 1;
    } else if (byte === 0x7d /* } */) {
      depth -= 1;
      if (depth === 0) {
        try {
          return JSON.parse(bytes.toString('utf8', start, i + 1));
        } catch {
          return undefined;
        }
      }
    }
  }
  return undefined;
}

/**
 * The generated text of a JSON answer (choices' content, tool-call arguments,
 * completions' text, the Responses API's output text), for the rare upstream
 * that answers without a usage block.
 */
export function completionTextOfJson(bytes: Buffer): string {
  let body: unknown;
  try {
    body = JSON.parse(bytes.toString('utf8'));
  } catch {
    return '';
  }
  const parts: string[] = [];
  const push = (value: unknown): void => {
    if (typeof value === 'string') parts.push(value);
  };
  const choices = field(body, 'choices');
  if (Array.isArray(choices)) {
    for (const choice of choices) {
      push(field(choice, 'text'));
      const message = field(choice, 'message');
      push(field(message, 'content'));
      push(field(message, 'refusal'));
      const calls = field(message, 'tool_calls');
      if (Array.isArray(calls)) for (const call of calls) push(field(field(call, 'function'), 'arguments'));
    }
  }
  const output = field(body, 'output');
  if (Array.isArray(output)) {
    for (const item of output) {
      push(field(item, 'arguments'));
      const content = field(item, 'content');
      if (Array.isArray(content)) for (const part of content) push(field(part, 'text'));
    }
  }
  return parts.join('');
}
