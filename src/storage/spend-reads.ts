/**
 * Spend reports (`tollgate spend`, `GET /admin/api/spend`, a tenant's
 * `/spend`): what the storage answers, whichever database holds the rollups.
 * Totals come from the rollups, never a scan of ledger rows (by session, the
 * rows of each session come from the period's ledger rows: sessions have no
 * rollup, src/storage/session-spend.ts); days are the
 * deployment's calendar days (src/domain/calendar.ts). SQLite reads its own
 * file (on the read worker in the proxy: sqlite/read-worker.ts), PostgreSQL
 * every node's shipped rollups; both answer the same rows in the same order
 * with the same cursors (test/integration/storage/spend-reads.contract.test.ts).
 */

export type SpendGrouping = 'day' | 'model' | 'key' | 'tenant' | 'user' | 'tag' | 'session' | 'total';

/** Every grouping, in the order the CLI and the admin API list them. */
export const SPEND_GROUPINGS: readonly SpendGrouping[] = ['day', 'model', 'key', 'tenant', 'user', 'tag', 'session', 'total'];

/** The `user` group of requests that named no end user. */
export const NO_END_USER = '(no end user)';

export interface SpendQuery {
  readonly keyId?: string | undefined;
  readonly tenantId?: string | undefined;
  /** First UTC day included, YYYY-MM-DD. */
  readonly since: string;
  /** Last UTC day included, YYYY-MM-DD (default: today). */
  readonly until?: string | undefined;
  readonly by: SpendGrouping;
  /** Rows of this page at most (the most spent first; by day, the earliest first); absent: every row. */
  readonly limit?: number | undefined;
  /** Where the page starts: the previous page's `nextCursor` (spend-cursor.ts). */
  readonly cursor?: string | undefined;
  /** By user: leave out the `(no end user)` row (the dashboard's lists of a key's end users). */
  readonly namedOnly?: boolean | undefined;
}

export interface SpendTotals {
  readonly requests: number;
  readonly promptTokens: number;
  readonly cachedTokens: number;
  readonly completionTokens: number;
  readonly reasoningTokens: number;
  readonly costMicros: number;
  readonly errors: number;
  readonly rejectedRateLimit: number;
  readonly rejectedBudget: number;
}

export interface SpendRow extends SpendTotals {
  /** The day, model, key name or tenant name this row sums (absent for `total`). */
  readonly group: string;
  /** For `by: key`, `user`, `tag` and `session`: the key's id and prefix (end users, tags and sessions belong to a key). */
  readonly keyId?: string;
  readonly prefix?: string;
  /** For `by: user`, `tag` and `session`: the key's name. */
  readonly key?: string;
  /** For `by: session`: its first and last request in the range (ms since the epoch): its duration is the difference. */
  readonly firstAt?: number;
  readonly lastAt?: number;
}

export interface SpendReport {
  readonly since: string;
  readonly until: string;
  readonly by: SpendGrouping;
  readonly rows: SpendRow[];
  readonly total: SpendTotals;
  /** Requests sent upstream and not settled yet (their estimate is in the totals). */
  readonly pending: number;
  /** More rows follow this page: ask again with `cursor` = `nextCursor`. */
  readonly hasMore: boolean;
  readonly nextCursor: string | null;
}

/** Where spend reports are read. */
export interface SpendReads {
  /** Spend over a range of days, grouped as asked, with the grand total: every row, or one page of them (spend-cursor.ts). */
  spend(query: SpendQuery, now: number): Promise<SpendReport>;
}

/**
 * The spend reads of a backend. On SQLite with `readWorker` (the proxy's:
 * a file's reads never run on the event loop the requests share) they run on
 * that thread; without one (the CLI, an in-memory database) here.
 */
