/**
 * The bound on a key's distinct end users and tags per day, decided inside
 * the ledger writer's transaction (ledger-writer.ts), so it holds for every process
 * sharing the SQLite file: the transaction holds the write lock
 * (`BEGIN IMMEDIATE`), and the count it reads is kept by triggers on the
 * rollup tables in the same file (`rollup_names`, drizzle/0012).
 *
 * A name gets a rollup row of its own when it already has one that day, or
 * while the key has fewer than the bound; past it, the request is counted
 * under `(other)` (src/domain/rollup-names.ts). Exceptions:
 * - a tag with a budget of its own always keeps its row (the key's policy
 *   names a few, so they cannot grow without bound);
 * - a *new* end user that the key's policy gives limits or a budget is
 *   refused instead (its budget reads its own row: counted under `(other)`
 *   it would be unbounded);
 * - a refusal (it cost nothing and reached nothing) never creates a row: its
 *   names are counted in their row when they have one, else under `(other)`
 *   (a budgeted tag excepted, as above).
 *
 * Names known to have a row are remembered between transactions (rows are
 * never deleted), so a busy key's usual names cost no lookup.
 */
import type Database from 'better-sqlite3';
import { END_USER_BIT, OTHER_NAME, tagBit, type NameBounds } from '../../domain/rollup-names.js';

/** A new end user with limits or a budget of its own, past the bound: the request is refused. */
export const REFUSED = -1;

/** How a write may use the bound: a request on its way upstream may add names; a refusal only uses those that exist. */
export type NameUse = 'add' | 'existing';

/** Known names remembered between transactions at most (then forgotten at once: they are looked up again). */
const MAX_KNOWN = 100_000;

type Kind = 'user' | 'tag';

interface DayCount {
  /** Names the rollup had when first read in this transaction. */
  readonly stored: number;
  /** Names this transaction adds. */
  added: number;
}

export interface BoundDecision {
  /** Bits of the names counted under `(other)`, or {@link REFUSED}. */
  readonly folded: number;
  /** Names folded (0 when refused). */
  readonly foldedEndUsers: number;
  readonly foldedTags: number;
}

const KEEP_ALL: BoundDecision = Object.freeze({ folded: 0, foldedEndUsers: 0, foldedTags: 0 });

export class NameBound {
  private readonly bounds: NameBounds;
  private readonly exists: Record<Kind, Database.Statement>;
  private readonly count: Database.Statement;
  /** `kind\0key\0day\0name` of rows that exist (committed). */
  private readonly known = new Set<string>();
  /** Names this transaction creates, and the key·days' counts it has read. */
  private readonly adding = new Set<string>();
  private readonly counts = new Map<string, DayCount>();

  constructor(sqlite: Database.Database, bounds: NameBounds) {
    this.bounds = bounds;
    this.exists = {
      user: sqlite.prepare('SELECT 1 FROM rollups_end_users WHERE key_id = ? AND end_user = ? AND day = ?').pluck(),
      tag: sqlite.prepare('SELECT 1 FROM rollups_tags WHERE key_id = ? AND tag = ? AND day = ?').pluck(),
    };
    this.count = sqlite.prepare('SELECT end_users, tags FROM rollup_names WHERE key_id = ? AND day = ?').raw();
  }

  /**
   * Where a request's names go (call inside the writer's transaction).
   * `exact` has the bits of names that must keep their own row.
   */
  decide(keyId: string, day: string, endUser: string | undefined, tags: readonly string[], exact: number, use: NameUse): BoundDecision {
    if (endUser === undefined && tags.length === 0) return KEEP_ALL;
    let folded = 0;
    let foldedEndUsers = 0;
    let foldedTags = 0;
    if (endUser !== undefined) {
      const verdict = this.place('user', keyId, day, endUser, (exact & END_USER_BIT) !== 0, use);
      if (verdict === 'refuse') return { folded: REFUSED, foldedEndUsers: 0, foldedTags: 0 };
      if (verdict === 'fold') {
        folded |= END_USER_BIT;
        foldedEndUsers = 1;
      }
    }
    for (let i = 0; i < tags.length; i += 1) {
      // A budgeted tag past the bound keeps its row rather than being refused: the policy names few.
      if (this.place('tag', keyId, day, tags[i]!, (exact & tagBit(i)) !== 0, use) !== 'keep') {
        folded |= tagBit(i);
        foldedTags += 1;
      }
    }
    return folded === 0 ? KEEP_ALL : { folded, foldedEndUsers, foldedTags };
  }

  private place(kind: Kind, keyId: string, day: string, name: string, exact: boolean, use: NameUse): 'keep' | 'fold' | 'refuse' {
    if (name === OTHER_NAME) return 'keep';
    const id = `${kind}\u0000${keyId}\u0000${day}\u0000${name}`;
    if (this.known.has(id) || this.adding.has(id)) return 'keep';
    if (this.exists[kind].get(keyId, name, day) !== undefined) {
      if (this.known.size >= MAX_KNOWN) this.known.clear();
      this.known.add(id);
      return 'keep';
    }
    // A refusal adds no name, except a budgeted tag (the policy names few): its refusals show under it.
    if (use === 'existing' && !(exact && kind === 'tag')) return 'fold';
    const counted = this.dayCount(kind, keyId, day);
    const bound = kind === 'user' ? this.bounds.endUsers : this.bounds.tags;
    if (counted.stored + counted.added < bound || (exact && kind === 'tag')) {
      counted.added += 1;
      this.adding.add(id);
      return 'keep';
    }
    return exact ? 'refuse' : 'fold';
  }

  private dayCount(kind: Kind, keyId: string, day: string): DayCount {
    const id = `${kind}\u0000${keyId}\u0000${day}`;
    let counted = this.counts.get(id);
    if (counted === undefined) {
      const row = this.count.get(keyId, day) as [number, number] | undefined;
      counted = { stored: row === undefined ? 0 : kind === 'user' ? row[0] : row[1], added: 0 };
      this.counts.set(id, counted);
    }
    return counted;
  }

  /** The transaction committed: the names it created exist. */
  committed(): void {
    for (const id of this.adding) {
      if (this.known.size >= MAX_KNOWN) this.known.clear();
      this.known.add(id);
    }
    this.reset();
  }

  /** The transaction was rolled back: nothing it decided happened. */
  rolledBack(): void {
    this.reset();
  }

  private reset(): void {
    this.adding.clear();
    this.counts.clear();
  }
}
