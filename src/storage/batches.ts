/**
 * Batch jobs (OpenAI Files + Batch API, Anthropic Message Batches) as Tollgate tracks them: which key
 * uploaded each input file and what its lines are estimated to cost at worst, which key created each
 * batch and which ledger row holds its reservation, and which process follows it until it is settled.
 * Declared once, implemented for SQLite (sqlite/batches.ts) and PostgreSQL (postgres/batches.ts), held to
 * one contract suite (test/integration/storage/batches.contract.test.ts).
 *
 * On one host the node's SQLite file holds them; on a replica PostgreSQL does, so a batch created through
 * one node is listed, retrieved and cancelled through any other, while only processes of the node whose
 * ledger holds its reservation claim it and settle it (src/storage/open-stores.ts `openBatchStore`).
 */
export type BatchProvider = 'openai' | 'anthropic';

export interface BatchFileRecord {
  /** The upstream's file id (file-…). */
  readonly id: string;
  readonly keyId: string;
  readonly createdAt: number;
  readonly filename: string;
  readonly bytes: number;
  /** Request lines in the file. */
  readonly lines: number;
  /** The endpoint every line names (`/v1/chat/completions`, …). */
  readonly endpoint: string;
  /** The one model every line names. */
  readonly model: string;
  /** The worst case of all its lines at the batch price (src/batches/batch-estimate.ts). */
  readonly promptTokens: number;
  readonly completionTokens: number;
  readonly costMicros: number;
}

export interface BatchJobRecord {
  /** The upstream's batch id (batch_… or msgbatch_…). */
  readonly id: string;
  readonly provider: BatchProvider;
  readonly keyId: string;
  readonly tenantId: string | null;
  /** The ledger row that holds the batch's reservation and, once settled, its cost. */
  readonly requestId: string;
  /** The node whose ledger holds that row (TOLLGATE_NODE_ID, or 'local'): only processes of that node settle it. */
  readonly node: string;
  readonly createdAt: number;
  /** OpenAI: the input file; Anthropic: null. */
  readonly inputFileId: string | null;
  readonly model: string;
  /** The reservation (worst case at the batch price), micro-USD. */
  readonly reservedMicros: number;
  /** The last status the upstream reported (`validating`, `in_progress`, `ended`, …). */
  readonly status: string;
  readonly settledAt: number | null;
}

export interface BatchStore {
  addFile(file: BatchFileRecord): Promise<void>;
  /** The file, or undefined when unknown or deleted. */
  file(id: string): Promise<BatchFileRecord | undefined>;
  /** Deleted files are no longer found (kept for the record). */
  deleteFile(id: string, at: number): Promise<void>;
  addJob(job: BatchJobRecord): Promise<void>;
  /** The job, or undefined when unknown or deleted. */
  job(id: string): Promise<BatchJobRecord | undefined>;
  /** Anthropic's delete: no longer found (kept for the record). */
  deleteJob(id: string, at: number): Promise<void>;
  /**
   * A key's jobs of one provider, newest first (created_at desc, then id desc), after the job `after`
   * (a cursor: jobs older than it), at most `limit` (1–100). Deleted jobs are not listed, but still serve as
   * a cursor (a page's last job deleted before the next page is asked for); a cursor that is not one of
   * the key's jobs of that provider gives an empty page, never the first page again.
   */
  listJobs(keyId: string, provider: BatchProvider, options: { readonly after?: string | undefined; readonly limit: number }): Promise<BatchJobRecord[]>;
  /** Notes the status the upstream reported last. */
  noteStatus(id: string, status: string): Promise<void>;
  /**
   * Claims for `holder` until `until` the unsettled jobs of `node` whose claim lapsed (claimed_until <= now) or
   * that `holder` already holds, at most `limit`, oldest first; returns them. Atomic: two processes calling at
   * once never both get one job. Deleted jobs are claimed too: their reservation still has to be settled.
   */
  claimUnsettled(node: string, holder: string, now: number, until: number, limit: number): Promise<BatchJobRecord[]>;
  /** Extends `holder`'s claims on these jobs (others' claims are untouched). */
  renew(ids: readonly string[], holder: string, until: number): Promise<void>;
  /** Gives `holder`'s claims back (at a clean shutdown), so another process takes them at once. */
  release(ids: readonly string[], holder: string): Promise<void>;
  /** Marks the job settled at `at`; true only the first time (exactly once), false if already settled or unknown. */
  markSettled(id: string, at: number): Promise<boolean>;
}
