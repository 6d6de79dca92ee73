/**
 * How the fake upstream decides what to do and what to bill: the
 * `x-fake-scenario` settings, the models it knows, the answer it gives and
 * its own token counts (deliberately independent of src/estimate).
 */
import type { ServerResponse } from 'node:http';
import { getEncoding, type Tiktoken } from 'js-tiktoken';

/** Words that are one token each in both cl100k_base and o200k_base (checked by a test). */
export const FAKE_WORDS = [
  ' the',
  ' quick',
  ' brown',
  ' fox',
  ' jumps',
  ' over',
  ' lazy',
  ' dog',
  ' and',
  ' then',
  ' runs',
  ' far',
  ' away',
  ' from',
  ' home',
  ' to',
  ' find',
  ' a',
  ' new',
  ' place',
  ' in',
  ' the',
  ' green',
  ' hills',
] as const;

export type Scenario = Readonly<Record<string, string>>;

export const MODELS = ['gpt-4o', 'gpt-4o-mini', 'gpt-4.1', 'gpt-4.1-mini', 'gpt-5', 'gpt-5-mini', 'o4-mini', 'gpt-3.5-turbo', 'text-embedding-3-small'];

let cl100k: Tiktoken | undefined;
let o200k: Tiktoken | undefined;

/** The fake's own tokenizer choice (deliberately simple, independent of src/estimate). */
function encoderFor(model: string): Tiktoken {
  if (/^(gpt-3\.5|gpt-4(?!o|\.)|text-embedding)/.test(model)) return (cl100k ??= getEncoding('cl100k_base'));
  return (o200k ??= getEncoding('o200k_base'));
}

const counted = new Map<string, number>();

/** Token count, memoized so a benchmark's upstream is not slowed by its own tokenizer. */
export function tokens(model: string, text: string): number {
  const encoder = encoderFor(model);
  const key = `${encoder === cl100k ? 'c' : 'o'}${text}`;
  let n = counted.get(key);
  if (n === undefined) {
    n = encoder.encode(text, 'all').length;
    if (counted.size >= 10_000) counted.clear();
    counted.set(key, n);
  }
  return n;
}

export function parseScenario(text: string | undefined): Scenario {
  const scenario: Record<string, string> = {};
  for (const part of (text ?? '').split(',')) {
    const [key, value = '1'] = part.split('=').map((s) => s.trim());
    if (key) scenario[key] = value;
  }
  return scenario;
}

export function num(scenario: Scenario, key: string): number | undefined {
  const value = scenario[key];
  return value === undefined || Number.isNaN(Number(value)) ? undefined : Number(value);
}

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content
      .map((part) => (part && typeof part === 'object' && typeof (part as { text?: unknown }).text === 'string' ? (part as { text: string }).text : ''))
      .join('');
  }
  return '';
}

/**
 * Prompt tokens as the fake bills them: the per-message rule for chat
 * (3 per message, +1 per name, +3 priming, +2 on reasoning models) over plain text, a flat 85 per
 * image, and tools as their JSON text. An independent, simple model of the
 * real API, so Tollgate's estimate and the bill can differ where they would.
 */
export function promptTokensFor(endpoint: string, body: Record<string, unknown>, model: string): number {
  if (endpoint === 'chat') {
    // Reply priming: 3 tokens, one fewer on reasoning models (as the API bills them).
    let total = /^(o\d|gpt-5)/.test(model) ? 2 : 3;
    for (const message of Array.isArray(body.messages) ? body.messages : []) {
      const m = (message ?? {}) as Record<string, unknown>;
      total += 3 + tokens(model, String(m.role ?? '')) + tokens(model, textOf(m.content));
      if (Array.isArray(m.content)) {
        total += m.content.filter((p) => (p as { type?: unknown } | null)?.type === 'image_url').length * 85;
      }
      if (typeof m.name === 'string') total += 1 + tokens(model, m.name);
      if (m.tool_calls !== undefined) total += tokens(model, JSON.stringify(m.tool_calls));
    }
    if (Array.isArray(body.tools)) total += tokens(model, JSON.stringify(body.tools));
    return total;
  }
  if (endpoint === 'completions') {
    const prompt = body.prompt;
    return Array.isArray(prompt) ? prompt.reduce<number>((sum, p) => sum + tokens(model, String(p)), 0) : tokens(model, String(prompt ?? ''));
  }
  if (endpoint === 'embeddings') {
    const input = body.input;
    const items = Array.isArray(input) ? input : [input];
    return items.reduce<number>((sum, item) => sum + (Array.isArray(item) ? item.length : typeof item === 'number' ? 1 : tokens(model, String(item ?? ''))), 0);
  }
  // responses
  const input = body.input;
  let text = typeof body.instructions === 'string' ? body.instructions : '';
  if (typeof input === 'string') text += input;
  else if (Array.isArray(input)) for (const item of input) text += textOf((item as { content?: unknown } | null)?.content);
  return tokens(model, text) + 3;
}

export function answerWords(scenario: Scenario, limit: number | undefined): string[] {
  const count = Math.max(0, Math.min(num(scenario, 'words') ?? 12, limit ?? Number.POSITIVE_INFINITY));
  const words: string[] = [];
  for (let i = 0; i < count; i += 1) {
    const word = FAKE_WORDS[i % FAKE_WORDS.length]!;
    words.push(i === 0 ? word.trimStart().replace(/^./, (c) => c.toUpperCase()) : word);
  }
  return words;
}

export function sleep(ms: number): Promise<void> {
  return ms > 0 ? new Promise((resolve) => setTimeout(resolve, ms)) : Promise.resolve();
}

/**
 * Generates `total` hidden reasoning tokens over `ms` (at once when 0), reporting each step's
 * running total; false when the client left meanwhile (the generation stops there, as a stream's does).
 */
export async function think(total: number, ms: number, res: ServerResponse, generated: (tokens: number) => void): Promise<boolean> {
  if (total <= 0) return true;
  const steps = ms > 0 ? Math.min(total, 10) : 1;
  for (let step = 1; step <= steps; step += 1) {
    await sleep(ms / steps);
    if (res.destroyed) return false;
    generated(Math.floor((total * step) / steps));
  }
  return true;
}

/** What the answer bills beyond text: audio tokens, the tier used, built-in tool calls. */
export interface Extras {
  readonly audioPromptTokens: number;
  readonly audioCompletionTokens: number;
  readonly serviceTier: string;
  readonly toolCalls: { webSearch: number; fileSearch: number; codeInterpreter: number; imageGeneration: number };
}

/**
 * The scenario's extras: `audioIn=N`, `audioOut=N` audio tokens, `tier=priority|flex|default`
 * (else the tier the request asked for, `default` for `auto`), and for Responses `webSearch=N`,
 * `fileSearch=N`, `codeInterpreter=N` (containers), `images=N` tool calls in `output`.
 */
export function extrasFor(scenario: Scenario, endpoint: string, body: Record<string, unknown>): Extras {
  const asked = body.service_tier === 'priority' || body.service_tier === 'flex' ? body.service_tier : 'default';
  const responses = endpoint === 'responses';
  return {
    audioPromptTokens: num(scenario, 'audioIn') ?? 0,
    audioCompletionTokens: num(scenario, 'audioOut') ?? 0,
    serviceTier: scenario.tier ?? asked,
    toolCalls: {
      webSearch: responses ? (num(scenario, 'webSearch') ?? 0) : 0,
      fileSearch: responses ? (num(scenario, 'fileSearch') ?? 0) : 0,
      codeInterpreter: responses ? (num(scenario, 'codeInterpreter') ?? 0) : 0,
      imageGeneration: responses ? (num(scenario, 'images') ?? 0) : 0,
    },
  };
}

/** The fake's bill for extras (only the non-zero parts, so plain answers bill as before). */
export function billedExtras(extras: Extras): Record<string, unknown> {
  const calls = Object.fromEntries(Object.entries(extras.toolCalls).filter(([, n]) => n > 0));
  return {
    ...(extras.audioPromptTokens > 0 ? { audioPromptTokens: extras.audioPromptTokens } : {}),
    ...(extras.audioCompletionTokens > 0 ? { audioCompletionTokens: extras.audioCompletionTokens } : {}),
    serviceTier: extras.serviceTier,
    ...(Object.keys(calls).length > 0 ? { toolCalls: calls } : {}),
  };
}
