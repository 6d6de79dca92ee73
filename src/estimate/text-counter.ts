/**
 * The one way the endpoint counters count text: through the LRU of whole texts, then the
 * tokenizer. On the main thread it also keeps a budget of uncached characters, so a large body is
 * handed to a worker before it can block the event loop.
 */
import { countCacheKey, MIN_CACHED_TEXT_CHARS, type TokenCountCache } from './count-cache.js';
import { countTextTokens, type EncodingName, type LoadedEncoding } from './tokenizer.js';

/** Counts tokens of text for one encoding. */
export interface TextCounter {
  readonly encoding: EncodingName;
  /** Tokens of `text`, special-token text counted as plain text. */
  count(text: string): number;
}

/** Thrown (internally) when the inline budget would be exceeded; the body goes to a worker. */
export class InlineBudgetExceeded extends Error {
  override readonly name = 'InlineBudgetExceeded';
}

/** Fixed cost, in characters, charged against the budget per text, for the walk around it. */
const PER_TEXT_COST_CHARS = 16;

/** How a counter behaves beyond counting. */
export interface TextCounterOptions {
  /** LRU of whole-text counts shared across requests; null to count everything afresh. */
  readonly cache: TokenCountCache | null;
  /** Most uncached characters to count before throwing {@link InlineBudgetExceeded}. */
  readonly budgetChars?: number;
  /** When given, receives the (key, count) of every text counted for the cache (worker → main). */
  readonly learned?: Array<[string, number]>;
  /** Longest text worth reporting in `learned` (the main thread offloads longer ones unhashed). */
  readonly learnedMaxChars?: number;
}

/** A {@link TextCounter} over a loaded encoding. */
export function createTextCounter(encoding: LoadedEncoding, options: TextCounterOptions): TextCounter {
  const { cache, budgetChars, learned, learnedMaxChars } = options;
  let spent = 0;
  const charge = (chars: number): void => {
    if (budgetChars === undefined) return;
    spent += chars + PER_TEXT_COST_CHARS;
    if (spent > budgetChars) throw new InlineBudgetExceeded('inline estimate budget exceeded');
  };
  return {
    encoding: encoding.name,
    count(text: string): number {
      if (text.length < MIN_CACHED_TEXT_CHARS || cache === null) {
        charge(text.length);
        return countTextTokens(text, encoding);
      }
      // A text larger than the whole budget goes to the worker unhashed: hashing megabytes on
      // the main thread would itself block (≈2–4 ns per character), and the worker caches it.
      if (budgetChars !== undefined && text.length > budgetChars) throw new InlineBudgetExceeded('text exceeds the inline budget');
      const key = countCacheKey(encoding.name, text);
      const hit = cache.get(key);
      if (hit !== undefined) return hit;
      charge(text.length);
      const count = countTextTokens(text, encoding);
      cache.set(key, count);
      if (learned !== undefined && (learnedMaxChars === undefined || text.length <= learnedMaxChars)) learned.push([key, count]);
      return count;
    },
  };
}
