/** @jsxRuntime automatic @jsxImportSource hono/jsx */
/**
 * The overview's reconciliation panel (operators only): the newest
 * `tollgate reconcile` result — when it ran, over which days, how many cells
 * and price entries disagree with the provider's bill, and the first cells
 * that do. Static between runs, so it is rendered once, not polled.
 */
import type { FC } from 'hono/jsx';
import type { StoredReconciliation } from '../reconcile/store.js';
import { count, timestamp, usd } from './format.js';

/** How many differing cells the panel lists. */
const SHOWN = 10;

export interface ReconciliationView {
  readonly ranAt: number;
  readonly provider: string;
  readonly since: string;
  readonly until: string;
  readonly differences: number;
  readonly priceFlags: number;
  readonly ledgerCostMicros: number;
  readonly providerCostMicros: number;
  readonly rows: ReadonlyArray<{
    readonly day: string;
    readonly model: string;
    readonly project: string | null;
    readonly status: string;
    readonly note: string;
  }>;
  readonly flags: ReadonlyArray<{ readonly model: string; readonly kind: string; readonly note: string }>;
}

/** What the overview shows of a stored result. */
export function reconciliationView(stored: StoredReconciliation | undefined): ReconciliationView | null {
  if (stored === undefined) return null;
  const report = stored.report;
  return {
    ranAt: stored.createdAt,
    provider: report.provider,
    since: report.since,
    until: report.until,
    differences: report.differences,
    priceFlags: report.priceFlags.length,
    ledgerCostMicros: report.totals.ledger.costMicros,
    providerCostMicros: report.totals.provider.costMicros,
    rows: report.rows
      .filter((row) => row.status !== 'match')
      .slice(0, SHOWN)
      .map((row) => ({ day: row.day, model: row.model, project: row.project, status: row.status, note: row.note })),
    flags: report.priceFlags.map((flag) => ({ model: flag.model, kind: flag.kind, note: flag.note })),
  };
}

export const ReconciliationPanel: FC<{ view: ReconciliationView | null }> = ({ view }) => (
  <section class="panel" id="reconciliation">
    <h2>
      Ledger vs the provider's bill{' '}
      <span class="muted">{view === null ? 'never compared' : `${view.provider}, ${view.since} to ${view.until} (UTC), checked ${timestamp(view.ranAt)}`}</span>
    </h2>
    {view === null ? (
      <p class="empty">
        Run <code>tollgate reconcile --since 7d</code> (with TOLLGATE_PROVIDER_ADMIN_KEY set) to compare the ledger with the provider's usage and cost reports.
      </p>
    ) : (
      <>
        <p data-reconcile-summary="">
          {view.differences === 0 ? 'Every day and model agrees' : `${count(view.differences)} cell${view.differences === 1 ? ' differs' : 's differ'}`}
          {'; '}
          {view.priceFlags === 0 ? 'no price entry flagged' : `${count(view.priceFlags)} price entr${view.priceFlags === 1 ? 'y' : 'ies'} flagged`}. Ledger{' '}
          {usd(view.ledgerCostMicros)}, provider {usd(view.providerCostMicros)}.
        </p>
        {view.rows.length === 0 ? null : (
          <table>
            <thead>
              <tr>
                <th>Day</th>
                <th>Model</th>
                <th>Project</th>
                <th>Status</th>
                <th>What differs</th>
              </tr>
            </thead>
            <tbody>
              {view.rows.map((row) => (
                <tr data-reconcile-row="">
                  <td>{row.day}</td>
                  <td>{row.model}</td>
                  <td>{row.project ?? '-'}</td>
                  <td>{row.status.replaceAll('_', ' ')}</td>
                  <td>{row.note}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
        {view.flags.length === 0 ? null : (
          <ul>
            {view.flags.map((flag) => (
              <li data-reconcile-flag="">
                {flag.model} ({flag.kind}): {flag.note}
              </li>
            ))}
          </ul>
        )}
      </>
    )}
  </section>
);
