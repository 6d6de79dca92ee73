/**
 * Where a request's end user and tags are counted in the rollups, once the
 * key's distinct names of the day are bounded (TOLLGATE_MAX_END_USERS,
 * TOLLGATE_MAX_TAGS; the decision itself is taken inside the ledger's
 * transactions, src/storage/sqlite/name-bound.ts and shipper.ts). Pure.
 *
 * Each ledger row records which of its names were folded into the key's
 * `(other)` row as a bit mask (`rollup_folded`): bit 0 the end user, bit
 * 1 + i its i-th tag. Its settlement moves the same rows its pending state
 * moved, so every rollup row stays the sum of the rows filed under it, and
 * the raw row keeps the request's own end user and tags.
 *
 * A request whose several tags are folded counts once in the `(other)` tag
 * row: `(other)` counts requests that carried a tag past the bound.
 */

/** The rollup row that counts end users and tags past the bound. Real names start with a letter or digit (attribution.ts), so none can be this. */
export const OTHER_NAME = '(other)';

/** The mask bit of the end user. */
export const END_USER_BIT = 1;

/** The mask bit of the request's `index`-th tag (at most 10 tags: attribution.ts). */
export function tagBit(index: number): number {
  return 2 ** (index + 1);
}

/** The names a request is counted under, given what was folded. */
export interface RollupNames {
  readonly endUser: string | undefined;
  readonly tags: readonly string[];
}

const NO_TAGS: readonly string[] = Object.freeze([]);

/** The end user and tags rows the request moves: its own names, or `(other)` for those folded (`(other)` once). */
export function rollupNamesOf(endUser: string | undefined | null, tags: readonly string[], folded: number | null | undefined): RollupNames {
  const user = endUser ?? undefined;
  if (!folded) return { endUser: user, tags };
  const named = user === undefined ? undefined : (folded & END_USER_BIT) !== 0 ? OTHER_NAME : user;
  if (tags.length === 0) return { endUser: named, tags: NO_TAGS };
  const out: string[] = [];
  let other = false;
  for (let i = 0; i < tags.length; i += 1) {
    if ((folded & tagBit(i)) === 0) out.push(tags[i]!);
    else if (!other) {
      other = true;
      out.push(OTHER_NAME);
    }
  }
  return { endUser: named, tags: out };
}

/**
 * The names that must keep a row of their own whatever the bound (bit mask,
 * like `rollup_folded`): an end user the key's policy gives limits or a
 * budget (its budget reads its own row: folded, it would be unbounded), and
 * tags with a budget of their own.
 */
export function exactMaskOf(endUser: string | undefined, tags: readonly string[], exact: { endUser: boolean; tags: readonly string[] }): number {
  let mask = endUser !== undefined && exact.endUser ? END_USER_BIT : 0;
  if (exact.tags.length > 0) for (let i = 0; i < tags.length; i += 1) if (exact.tags.includes(tags[i]!)) mask |= tagBit(i);
  return mask;
}

/** Distinct end users and tags a key may have rollup rows for in one day (TOLLGATE_MAX_END_USERS, TOLLGATE_MAX_TAGS). */
export interface NameBounds {
  readonly endUsers: number;
  readonly tags: number;
}

/**
 * Defaults: a key is one app, and 10,000 people using it in a day is a large
 * app (past that, use more keys or raise the bound); tags name features,
 * environments or experiments, a few dozen in practice. Worst case a key
 * adds about 11,000 small rows a day (~2 MB), where a flood of rejected
 * requests with a fresh user and ten fresh tags each added 12 rows a request.
 */
export const DEFAULT_NAME_BOUNDS: NameBounds = Object.freeze({ endUsers: 10_000, tags: 1_000 });

/** The ledger's `tags` column: comma-joined (tags hold no commas: TAG_PATTERN), or null. */
export function encodeTags(tags: readonly string[]): string | null {
  return tags.length === 0 ? null : tags.join(',');
}

/** The ledger's `tags` column back to a list. */
export function decodeTags(text: string | null): string[] {
  return text === null || text === '' ? [] : text.split(',');
}
