/**
 * What `tollgate reconcile` stores: its report, kept by the reconciliation
 * store of src/storage/reconciliations.ts (the newest is what the dashboard
 * shows).
 */
import type { ReconcileReport } from './compare.js';
import type { ReconciliationStore as Store, StoredReconciliation as Stored } from '../storage/reconciliations.js';

/** What a run stores; `pending` is the ledger's unsettled rows in the range when it ran. */
export type ReconciliationReport = ReconcileReport & { readonly pending?: number };

export type StoredReconciliation = Stored<ReconciliationReport>;
export type ReconciliationStore = Store<ReconciliationReport>;
