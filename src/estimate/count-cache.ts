/**
 * A bounded LRU of token counts. System prompts, tool definitions and the earlier turns of a
 * conversation are re-sent on every turn; counting them again would be most of the work.
 */
import { hash } from 'node:crypto';
import type { EncodingName } from './tokenizer.js';

/** Texts shorter than this are counted directly: the piece cache makes that cheaper than a lookup. */
export const MIN_CACHED_TEXT_CHARS = 32;
/** Texts up to this length are their own key; longer ones are keyed by a SHA-1 of the text. */
const MAX_LITERAL_KEY_CHARS = 256;
/** Approximate per-entry overhead of a Map entry and its number, in bytes. */
const ENTRY_OVERHEAD_BYTES = 64;

/** Limits of a {@link TokenCountCache}. */
export interface TokenCountCacheLimits {
  /** Most entries kept. */
  readonly maxEntries: number;
  /** Most bytes of keys (+ a fixed overhead per entry) kept. */
  readonly maxBytes: number;
}

/** Default limits: 20k entries or ~8 MB, whichever comes first. */
export const DEFAULT_CACHE_LIMITS: TokenCountCacheLimits = { maxEntries: 20_000, maxBytes: 8 * 1024 * 1024 };

/**
 * Cache key of (encoding, text): the text itself when short (no hashing, no collision), else a
 * SHA-1 digest — collisions are out of reach and the key stays 30 bytes however long the text.
 */
export function countCacheKey(encoding: EncodingName, text: string): string {
  const tag = encoding === 'o200k_base' ? 'o' : 'c';
  if (text.length <= MAX_LITERAL_KEY_CHARS) return `${tag}:${text}`;
  return `${tag}#${hash('sha1', text, 'base64')}`;
}

function entryBytes(key: string): number {
  return key.length * 2 + ENTRY_OVERHEAD_BYTES;
}

/** LRU map from {@link countCacheKey} to a token count, bounded in entries and bytes. */
export class TokenCountCache {
  private readonly entries = new Map<string, number>();
  private bytes = 0;
  readonly limits: TokenCountCacheLimits;

  constructor(limits: TokenCountCacheLimits = DEFAULT_CACHE_LIMITS) {
    this.limits = limits;
  }

  /** Entries held. */
  get size(): number {
    return this.entries.size;
  }

  /** Bytes accounted. */
  get byteSize(): number {
    return this.bytes;
  }

  /** The count for `key`, marking it recently used. */
  get(key: string): number | undefined {
    const count = this.entries.get(key);
    if (count === undefined) return undefined;
    // Re-insert to move it to the young end of the Map's insertion order.
    this.entries.delete(key);
    this.entries.set(key, count);
    return count;
  }

  /** Stores a count, evicting the least recently used entries past the limits. */
  set(key: string, count: number): void {
    const size = entryBytes(key);
    if (size > this.limits.maxBytes || this.limits.maxEntries < 1) return;
    if (this.entries.has(key)) {
      this.entries.delete(key);
      this.bytes -= size;
    }
    this.entries.set(key, count);
    this.bytes += size;
    while (this.entries.size > this.limits.maxEntries || this.bytes > this.limits.maxBytes) {
      const oldest = this.entries.keys().next();
      if (oldest.done) break;
      this.entries.delete(oldest.value);
      this.bytes -= entryBytes(oldest.value);
    }
  }

  /** Drops everything. */
  clear(): void {
    this.entries.clear();
    this.bytes = 0;
  }
}
