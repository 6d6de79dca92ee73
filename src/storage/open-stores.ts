/**
 * The factories of the stores (one per interface in this folder): given the
 * backend the configuration chose, each opens the SQLite or the PostgreSQL
 * implementation. They are the only code that asks which database is in use,
 * and they sit apart from the interfaces so an implementation importing its
 * interface's types never imports the factory that imports it.
 */
import type Database from 'better-sqlite3';
import type { AdminStore } from './admins.js';
import type { AlertClaims } from './alert-claims.js';
import type { AuditReads } from './audit.js';
import type { Backend, SharedBackend } from './backend.js';
import type { BatchStore } from './batches.js';
import type { DashboardReads } from './dashboard-reads.js';
import type { KeyStore } from './keys.js';
import type { LedgerCellSource } from './ledger-cells.js';
import type { LedgerExportSource } from './ledger-export.js';
import type { LedgerWriter } from './ledger.js';
import type { ReconciliationStore, ReconciliationSummary } from './reconciliations.js';
import type { RequestReads } from './request-reads.js';
import type { SpendReads } from './spend-reads.js';
import type { DashboardTokenStore } from './tenant-tokens.js';
import { PostgresBatchStore } from './postgres/batches.js';
import { PostgresDashboardReads } from './postgres/dashboard-reads.js';
import { PostgresKeyStore } from './postgres/keys.js';
import { ResponseStore } from './sqlite/responses.js';
import { SqliteBatchStore } from './sqlite/batches.js';
import { SqliteDashboardReads } from './sqlite/dashboard-reads.js';
import { SqliteKeyStore } from './sqlite/keys.js';
import { SqliteLedgerWriter, type LedgerWriterOptions } from './sqlite/ledger-writer.js';
import { WorkerDashboardReads, type ReadWorker } from './sqlite/read-worker.js';
import { disableOutbox, enableOutbox } from './sqlite/outbox.js';
import { pgAdmins } from './postgres/admins.js';
import { pgAuditReads } from './postgres/audit.js';
import { pgClaims } from './postgres/alert-claims.js';
import { pgDashboardTokens } from './postgres/tenant-tokens.js';
import { pgReconciliations } from './postgres/reconciliations.js';
import { pgSharedResponses } from './postgres/responses.js';
import { postgresLedgerCells } from './postgres/ledger-cells.js';
import { postgresLedgerExport } from './postgres/ledger-export.js';
import { postgresRequestReads } from './postgres/request-reads.js';
import { postgresSpendReads } from './postgres/spend-reads.js';
import { sqliteAdmins } from './sqlite/admins.js';
import { sqliteAuditReads } from './sqlite/audit.js';
import { sqliteClaims } from './sqlite/alert-claims.js';
import { sqliteDashboardTokens } from './sqlite/tenant-tokens.js';
import { sqliteLedgerCells } from './sqlite/ledger-cells.js';
import { sqliteLedgerExport } from './sqlite/ledger-export.js';
import { sqliteReconciliations } from './sqlite/reconciliations.js';
import { sqliteRequestReads } from './sqlite/request-reads.js';
import { sqliteSpendReads, workerSpendReads } from './sqlite/spend-reads.js';

export function openAlertClaims(
  backend: Backend,
  options: {
    /** The SQLite connection to claim on (the alerts' own, with its short busy timeout); default: the backend's. */
    readonly connection?: Database.Database | undefined;
    /** Claims the hosts share without a replica (Redis), before the file of one host. */
    readonly shared?: AlertClaims | undefined;
  } = {},
): AlertClaims {
  if (backend.kind === 'postgres') return pgClaims(backend.pool);
  return options.shared ?? sqliteClaims(options.connection ?? backend.database.sqlite);
}

/**
 * Batch files and jobs where every node sees them: PostgreSQL on a replica (a batch created through one
 * node is listed, retrieved and cancelled through any), else the SQLite file.
 */
export function openBatchStore(backend: SharedBackend): BatchStore {
  return backend.kind === 'sqlite' ? new SqliteBatchStore(backend.database) : new PostgresBatchStore(backend.pool);
}

export function openDashboardReads(backend: Backend, options: { readonly readWorker?: ReadWorker | undefined } = {}): DashboardReads {
  if (backend.kind === 'postgres') return new PostgresDashboardReads(backend.pool);
  return options.readWorker === undefined ? new SqliteDashboardReads(backend.database) : new WorkerDashboardReads(backend.database, options.readWorker);
}

export function openKeyStore(backend: SharedBackend, options: { now?: () => number } = {}): KeyStore {
  return backend.kind === 'sqlite' ? new SqliteKeyStore(backend.database, options.now).async() : new PostgresKeyStore(backend.pool, options.now);
}

/** Where a backend's ledger sums are read. */
export function openLedgerCells(backend: SharedBackend): LedgerCellSource {
  return backend.kind === 'postgres' ? postgresLedgerCells(backend.pool) : sqliteLedgerCells(backend.database);
}

/** The ledger export of a backend; none for an in-memory SQLite database (a second connection would open another, empty one). */
export function openLedgerExport(backend: SharedBackend): LedgerExportSource | undefined {
  if (backend.kind === 'postgres') return postgresLedgerExport(backend.pool);
  return backend.database.path === ':memory:' ? undefined : sqliteLedgerExport(backend.database.path);
}

export function openLedgerWriter(backend: Backend, options: LedgerWriterOptions = {}): LedgerWriter {
  if (backend.kind === 'postgres') enableOutbox(backend.database);
  else disableOutbox(backend.database);
  return new SqliteLedgerWriter(backend.database, options);
}

export function openReconciliations<R extends ReconciliationSummary>(backend: SharedBackend): ReconciliationStore<R> {
  return backend.kind === 'sqlite' ? sqliteReconciliations<R>(backend.database) : pgReconciliations<R>(backend.pool);
}

/** The node's stored responses, which on a replica also look up what the other nodes stored. */
export function openResponseStore(backend: Backend, options: { onError?: (error: unknown) => void } = {}): ResponseStore {
  return new ResponseStore(backend.database, { ...options, shared: backend.kind === 'postgres' ? pgSharedResponses(backend.pool) : undefined });
}

/** One ledger row by its request id, for its key (the node's own file first on PostgreSQL). */
export function openRequestReads(backend: SharedBackend): RequestReads {
  if (backend.kind === 'postgres') return postgresRequestReads(backend.pool, 'database' in backend ? backend.database : undefined);
  return sqliteRequestReads(backend.database);
}

export function openSpendReads(backend: SharedBackend, options: { readonly readWorker?: ReadWorker | undefined } = {}): SpendReads {
  if (backend.kind === 'postgres') return postgresSpendReads(backend.pool);
  return options.readWorker === undefined ? sqliteSpendReads(backend.database) : workerSpendReads(options.readWorker);
}

/** The tenants' dashboard tokens where every node reads them. */
export function openDashboardTokens(backend: SharedBackend): DashboardTokenStore {
  return backend.kind === 'sqlite' ? sqliteDashboardTokens(backend.database) : pgDashboardTokens(backend.pool);
}

/** Named admins where every node reads them (PostgreSQL on a replica). */
export function openAdmins(backend: SharedBackend): AdminStore {
  return backend.kind === 'sqlite' ? sqliteAdmins(backend.database) : pgAdmins(backend.pool);
}

/** The audit trail where every node's changes are written. */
export function openAuditReads(backend: SharedBackend): AuditReads {
  return backend.kind === 'sqlite' ? sqliteAuditReads(backend.database) : pgAuditReads(backend.pool);
}
