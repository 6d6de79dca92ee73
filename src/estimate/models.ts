/**
 * What we know about a model from its name alone: the encoding it counts with, whether it is a
 * reasoning model, and how it bills images. Names arrive as clients write them, so they are
 * normalised first (provider prefixes, fine-tune wrappers, dated snapshots).
 */
import type { EncodingName } from './tokenizer.js';

const PROVIDER_PREFIXES = ['openai/', 'azure/', 'openai:', 'azure:'];

/** Strips provider prefixes (`openai/gpt-4o`), lower-cases and trims a model name. */
export function stripProviderPrefix(model: string): string {
  let name = model.trim().toLowerCase();
  let changed = true;
  while (changed) {
    changed = false;
    for (const prefix of PROVIDER_PREFIXES) {
      if (name.startsWith(prefix)) {
        name = name.slice(prefix.length);
        changed = true;
      }
    }
  }
  return name;
}

/**
 * The base model of a fine-tune name (`ft:gpt-4o-mini:org::id` → `gpt-4o-mini`,
 * legacy `davinci:ft-org-2023…` → `davinci`), or the name itself.
 */
export function baseModelOf(model: string): string {
  // Asked several times a request (encoding, reasoning, images, pricing) of the same name.
  let base = baseModels.get(model);
  if (base === undefined) {
    base = baseModelUncached(model);
    rememberByName(baseModels, model, base);
  }
  return base;
}

/**
 * Keeps `value` for a model name in one of the per-name memos (here, prices.ts, metrics.ts), at most
 * 10,000 names. A request's name is at most 256 characters (src/http/client-strings.ts); a longer
 * one, from a batch file, is not kept but worked out each time, so no memo holds megabytes.
 */
export function rememberByName<T>(memo: Map<string, T>, name: string, value: T): void {
  if (name.length > 256) return;
  if (memo.size >= 10_000) memo.clear();
  memo.set(name, value);
}

const baseModels = new Map<string, string>();

function baseModelUncached(model: string): string {
  const name = stripProviderPrefix(model);
  if (name.startsWith('ft:')) {
    const base = name.slice(3).split(':')[0];
    return base && base.length > 0 ? base : name;
  }
  const legacy = /^([a-z0-9.-]+):ft-/.exec(name);
  if (legacy?.[1]) return legacy[1];
  return name;
}

/**
 * Removes a dated snapshot suffix: `gpt-4o-2024-08-06` → `gpt-4o`, `gpt-4-0613` → `gpt-4`,
 * `gpt-4-1106-preview` → `gpt-4`, `o3-mini-2025-01-31` → `o3-mini`, and Anthropic's
 * `claude-sonnet-4-5-20250929` → `claude-sonnet-4-5`. Returns the name unchanged if it has none.
 */
export function stripSnapshotSuffix(model: string): string {
  return model
    .replace(/-\d{4}-\d{2}-\d{2}$/, '')
    .replace(/-20\d{6}$/, '')
    .replace(/-(?:\d{4})(?:-preview)?$/, '');
}

/**
 * Encoding by prefix: o200k_base for gpt-4o*, gpt-4.1*, gpt-4.5*, gpt-5*, the o-series,
 * chatgpt-4o*, and anything unknown (every current model uses it); cl100k_base for gpt-3.5*,
 * gpt-4 / gpt-4-turbo / gpt-4-32k and the embedding models.
 */
export function encodingForModel(model: string): EncodingName {
  const name = baseModelOf(model);
  if (name.startsWith('gpt-3.5') || name.startsWith('gpt-35')) return 'cl100k_base';
  if (name.startsWith('text-embedding-3') || name.startsWith('text-embedding-ada-002')) return 'cl100k_base';
  if (name === 'gpt-4' || name.startsWith('gpt-4-')) return 'cl100k_base';
  return 'o200k_base';
}

/**
 * Reasoning models (o1, o3, o4-mini, gpt-5 …) prime the reply with one token fewer than chat
 * models, as observed in their usage; `gpt-5-chat-latest` is a plain chat model.
 */
export function isReasoningModel(model: string): boolean {
  const name = baseModelOf(model);
  if (/^o\d/.test(name)) return true;
  if (name.startsWith('gpt-5')) return !name.includes('-chat');
  return false;
}

/** How a model bills an image; see images.ts for the formulas and their source. */
export type ImagePricing = { kind: 'tiles'; baseTokens: number; tileTokens: number } | { kind: 'patches'; multiplierPercent: number };

/**
 * Image billing class per model (src/estimate/README.md, "Images"): 4.1-mini / 4.1-nano /
 * o4-mini / gpt-5-mini / gpt-5-nano bill 32 px patches times a multiplier, the rest bill 512 px
 * tiles.
 */
export function imagePricingForModel(model: string): ImagePricing {
  const name = stripSnapshotSuffix(baseModelOf(model));
  if (/^gpt-4\.1-mini/.test(name) || /^gpt-5(\.\d+)?-mini/.test(name)) return { kind: 'patches', multiplierPercent: 162 };
  if (/^gpt-4\.1-nano/.test(name) || /^gpt-5(\.\d+)?-nano/.test(name)) return { kind: 'patches', multiplierPercent: 246 };
  if (/^o4-mini/.test(name) || /^codex-mini/.test(name)) return { kind: 'patches', multiplierPercent: 172 };
  if (/^gpt-4o-mini/.test(name)) return { kind: 'tiles', baseTokens: 2833, tileTokens: 5667 };
  if (/^o1(?!-mini)/.test(name) || /^o3(?!-mini)/.test(name)) return { kind: 'tiles', baseTokens: 75, tileTokens: 150 };
  if (/^gpt-5/.test(name)) return { kind: 'tiles', baseTokens: 70, tileTokens: 140 };
  if (/^computer-use-preview/.test(name)) return { kind: 'tiles', baseTokens: 65, tileTokens: 129 };
  // gpt-4o, gpt-4.1, gpt-4.5, gpt-4-turbo, chatgpt-4o and anything unknown.
  return { kind: 'tiles', baseTokens: 85, tileTokens: 170 };
}
