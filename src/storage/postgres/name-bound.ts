/**
 * The bound on a key's distinct end users and tags per day in PostgreSQL's
 * rollups (replicas): each node bounds its own SQLite file (sqlite/name-bound.ts),
 * but PostgreSQL sums every node's, so the shipper decides again, in its
 * transaction, against every node's names of the day (shipper.ts).
 *
 * - A name folded by its node stays folded; a name the node kept gets its
 *   row when PostgreSQL has one for it that day, or while the key's count of
 *   names (`rollup_names`) is below the bound, else it is folded.
 * - A name the node marked exact (a budgeted end user or tag: `rollup_exact`)
 *   keeps its row whatever the count: the node admitted it under its own
 *   bound, and its budget reads PostgreSQL's row. So PostgreSQL can hold more
 *   exact names than the bound, at most the bound per node.
 * - A refusal creates no row: its names count in their row or under `(other)`
 *   (a budgeted tag excepted: its refusals show under it, as on the node).
 *
 * The count rows of the batch's key·days are locked (FOR UPDATE, in key
 * order, before any rollup row) before the existing names are read, so two
 * nodes shipping at once decide one after the other.
 */
import type pg from 'pg';
import { END_USER_BIT, OTHER_NAME, tagBit, type NameBounds } from '../../domain/rollup-names.js';

/** What the decision needs of a row being inserted. */
export interface NamedRow {
  readonly request_id: string;
  readonly key_id: string;
  readonly status: string;
  readonly created_at: number;
  /** The row's day, as its rollups file it. */
  readonly day: string;
  readonly end_user: string | null;
  readonly tags: readonly string[];
  /** The node's own decision and exact names (bits: src/domain/rollup-names.ts). */
  readonly rollup_folded: number | null;
  readonly rollup_exact: number | null;
}

type Kind = 'user' | 'tag';

function isRefusal(row: NamedRow): boolean {
  return row.status === 'rejected' || row.status === 'invalid_request';
}

/** The names a batch of new rows adds, per key·day, once it is known which rows were inserted. */
export interface NamePlan {
  /** PostgreSQL's `rollup_folded` of each row to insert. */
  readonly folded: ReadonlyMap<string, number>;
  /** Adds the names of the rows actually inserted to the counts (same transaction). */
  record(client: pg.PoolClient, inserted: ReadonlySet<string>): Promise<void>;
}

/** Decides where each new row's names go in PostgreSQL's rollups (inside the shipper's transaction). */
export async function planNames(client: pg.PoolClient, rows: readonly NamedRow[], bounds: NameBounds): Promise<NamePlan> {
  const folded = new Map<string, number>();
  const named = rows.filter((row) => row.end_user !== null || row.tags.length > 0);
  if (named.length === 0) return { folded, record: async () => undefined };
  // Lock the count rows of the key·days that may gain names, in key order.
  const days = new Map<string, { key_id: string; day: string }>();
  for (const row of named) {
    // Refusals add names only for budgeted tags.
    if (!isRefusal(row) || (row.rollup_exact ?? 0) !== 0) days.set(`${row.key_id}\u0000${row.day}`, { key_id: row.key_id, day: row.day });
  }
  const counts = new Map<string, { user: number; tag: number }>();
  if (days.size > 0) {
    const keyDays = [...days.values()].sort((a, b) => (a.key_id < b.key_id ? -1 : a.key_id > b.key_id ? 1 : a.day < b.day ? -1 : a.day > b.day ? 1 : 0));
    const keyIds = keyDays.map((d) => d.key_id);
    const dayTexts = keyDays.map((d) => d.day);
    await client.query(
      `INSERT INTO rollup_names (key_id, day) SELECT * FROM unnest($1::text[], $2::text[]) AS v(key_id, day) ORDER BY key_id, day ON CONFLICT (key_id, day) DO NOTHING`,
      [keyIds, dayTexts],
    );
    const locked = await client.query<{ key_id: string; day: string; end_users: number; tags: number }>(
      `SELECT key_id, day, end_users, tags FROM rollup_names WHERE (key_id, day) IN (SELECT * FROM unnest($1::text[], $2::text[])) ORDER BY key_id, day FOR UPDATE`,
      [keyIds, dayTexts],
    );
    for (const row of locked.rows) counts.set(`${row.key_id}\u0000${row.day}`, { user: row.end_users, tag: row.tags });
  }
  // The batch's names that PostgreSQL already has rows for (read after the lock: no other node adds them meanwhile).
  const existing = new Set<string>();
  for (const kind of ['user', 'tag'] as const) {
    const keyIds: string[] = [];
    const names: string[] = [];
    const dayTexts: string[] = [];
    for (const row of named) {
      for (const name of kind === 'user' ? (row.end_user === null ? [] : [row.end_user]) : row.tags) {
        keyIds.push(row.key_id);
        names.push(name);
        dayTexts.push(row.day);
      }
    }
    if (names.length === 0) continue;
    const [table, column] = kind === 'user' ? ['rollups_end_users', 'end_user'] : ['rollups_tags', 'tag'];
    const found = await client.query<{ key_id: string; name: string; day: string }>(
      `SELECT key_id, ${column} AS name, day FROM ${table} WHERE (key_id, ${column}, day) IN (SELECT * FROM unnest($1::text[], $2::text[], $3::text[]))`,
      [keyIds, names, dayTexts],
    );
    for (const row of found.rows) existing.add(`${kind}\u0000${row.key_id}\u0000${row.day}\u0000${row.name}`);
  }
  // Rows that reach the upstream first (they may add names), then refusals (they only use names that exist).
  const ordered = [...named].sort(
    (a, b) => Number(isRefusal(a)) - Number(isRefusal(b)) || a.created_at - b.created_at || (a.request_id < b.request_id ? -1 : 1),
  );
  /** Names each row adds (new to PostgreSQL), to count those of rows actually inserted. */
  const adds = new Map<string, string[]>();
  const noteAdd = (requestId: string, id: string): void => {
    const ids = adds.get(requestId);
    if (ids === undefined) adds.set(requestId, [id]);
    else ids.push(id);
  };
  const added = new Set<string>();
  const place = (row: NamedRow, kind: Kind, name: string, bit: number): boolean => {
    if ((row.rollup_folded ?? 0) & bit) return false;
    const id = `${kind}\u0000${row.key_id}\u0000${row.day}\u0000${name}`;
    if (existing.has(id)) return true;
    if (added.has(id)) {
      noteAdd(row.request_id, id);
      return true;
    }
    const exact = ((row.rollup_exact ?? 0) & bit) !== 0;
    if (isRefusal(row) && !(exact && kind === 'tag')) return false;
    const count = counts.get(`${row.key_id}\u0000${row.day}`)!;
    if (count[kind] >= (kind === 'user' ? bounds.endUsers : bounds.tags) && !exact) return false;
    count[kind] += 1;
    added.add(id);
    noteAdd(row.request_id, id);
    return true;
  };
  for (const row of ordered) {
    let mask = 0;
    if (row.end_user !== null && !place(row, 'user', row.end_user, END_USER_BIT)) mask |= END_USER_BIT;
    row.tags.forEach((tag, i) => {
      if (!place(row, 'tag', tag, tagBit(i))) mask |= tagBit(i);
    });
    folded.set(row.request_id, mask);
  }
  return {
    folded,
    async record(recordClient, inserted) {
      // Each new name once, whichever inserted row carried it (a row another node inserted first adds nothing).
      const perDay = new Map<string, { key_id: string; day: string; user: number; tag: number }>();
      const seen = new Set<string>();
      for (const [requestId, ids] of adds) {
        if (!inserted.has(requestId)) continue;
        for (const id of ids) {
          if (seen.has(id)) continue;
          seen.add(id);
          const [kind, keyId, day, name] = id.split('\u0000') as [Kind, string, string, string];
          if (name === OTHER_NAME) continue;
          const key = `${keyId}\u0000${day}`;
          let entry = perDay.get(key);
          if (entry === undefined) {
            entry = { key_id: keyId, day, user: 0, tag: 0 };
            perDay.set(key, entry);
          }
          entry[kind] += 1;
        }
      }
      if (perDay.size === 0) return;
      const entries = [...perDay.values()];
      await recordClient.query(
        `UPDATE rollup_names AS n SET end_users = n.end_users + v.users, tags = n.tags + v.tags
         FROM unnest($1::text[], $2::text[], $3::int[], $4::int[]) AS v(key_id, day, users, tags) WHERE n.key_id = v.key_id AND n.day = v.day`,
        [entries.map((e) => e.key_id), entries.map((e) => e.day), entries.map((e) => e.user), entries.map((e) => e.tag)],
      );
    },
  };
}
