/**
 * What Tollgate needs from a database, in one place: every store the rest of
 * the code reads and writes, declared once (one interface per store, in this
 * folder) and implemented for SQLite (sqlite/) and PostgreSQL (postgres/),
 * held to the same contract suites (test/integration/storage/). The backend
 * is chosen once, from the configuration (src/tollgate.ts, the CLI's
 * context); the factories here are the only code that looks at its kind.
 *
 * A node always writes its ledger to its own SQLite file first (the outbox a
 * replica ships to PostgreSQL), so the ledger writer and the node's copy of
 * the keys are opened apart from what the nodes share, which is gathered here.
 */
import type { AdminStore } from './admins.js';
import type { AuditReads } from './audit.js';
import type { Backend } from './backend.js';
import type { DashboardReads } from './dashboard-reads.js';
import type { KeyStore } from './keys.js';
import type { LedgerExportSource } from './ledger-export.js';
import { openReadWorker } from './read-thread.js';
import type { ReconciliationStore, ReconciliationSummary } from './reconciliations.js';
import type { ReadWorker } from './sqlite/read-worker.js';
import type { RequestReads } from './request-reads.js';
import type { SpendReads } from './spend-reads.js';
import type { DashboardTokenStore } from './tenant-tokens.js';
import {
  openAdmins,
  openAuditReads,
  openDashboardReads,
  openDashboardTokens,
  openKeyStore,
  openLedgerExport,
  openReconciliations,
  openRequestReads,
  openSpendReads,
} from './open-stores.js';

export type { Backend } from './backend.js';
export * from './open-stores.js';

/** The stores every node of a deployment shares: keys and tenants, spend, the ledger's exports, tokens, reconciliations. */
export interface SharedStorage<R extends ReconciliationSummary = ReconciliationSummary> {
  /** Keys and tenants as the admin API and the CLI change them. */
  readonly keys: KeyStore;
  readonly spend: SpendReads;
  readonly dashboard: DashboardReads;
  /** One ledger row by its request id, for the key that made it. */
  readonly requests: RequestReads;
  /** None for an in-memory SQLite database (the export routes are then 404). */
  readonly ledgerExport: LedgerExportSource | undefined;
  readonly dashboardTokens: DashboardTokenStore;
  /** Named admins (docs/admins.md). */
  readonly admins: AdminStore;
  /** The audit trail of every change, as it is read. */
  readonly audit: AuditReads;
  /** Reconciliation results, stored as the reconciliation reports them (`R`). */
  readonly reconciliations: ReconciliationStore<R>;
  /** The thread a SQLite file's reports and dashboard reads run on, off the event loop the requests share; none on PostgreSQL or in memory. */
  readonly readWorker: ReadWorker | undefined;
  /** Stops the read thread (the databases themselves are closed by whoever opened them). */
  close(): Promise<void>;
}

export function openSharedStorage<R extends ReconciliationSummary>(backend: Backend, options: { readonly now?: () => number } = {}): SharedStorage<R> {
  const readWorker = openReadWorker(backend);
  return {
    keys: openKeyStore(backend, options.now === undefined ? {} : { now: options.now }),
    spend: openSpendReads(backend, { readWorker }),
    dashboard: openDashboardReads(backend, { readWorker }),
    requests: openRequestReads(backend),
    ledgerExport: openLedgerExport(backend),
    dashboardTokens: openDashboardTokens(backend),
    admins: openAdmins(backend),
    audit: openAuditReads(backend),
    reconciliations: openReconciliations<R>(backend),
    readWorker,
    close: async () => readWorker?.close(),
  };
}
