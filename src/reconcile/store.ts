/**
 * What `tollgate reconcile` and the scheduled runs store: the report, kept
 * by the reconciliation store of src/storage/reconciliations.ts (the newest
 * of each provider is what the dashboard and /metrics show).
 */
import type { ReconcileReport } from './compare.js';
import type { DriftEpisode } from './drift.js';
import type { ReconciliationStore as Store, StoredReconciliation as Stored } from '../storage/reconciliations.js';

/**
 * What a run stores; `pending` is the ledger's unsettled rows in the range when it ran, `drift` its
 * drift episode (src/reconcile/drift.ts; absent from results stored before drift was tracked).
 */
export type ReconciliationReport = ReconcileReport & { readonly pending?: number; readonly drift?: DriftEpisode };

export type StoredReconciliation = Stored<ReconciliationReport>;
export type ReconciliationStore = Store<ReconciliationReport>;
