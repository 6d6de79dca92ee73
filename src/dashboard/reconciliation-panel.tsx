/** @jsxRuntime automatic @jsxImportSource hono/jsx */
/**
 * The overview's reconciliation panel (operators only): the newest result of
 * each provider (`tollgate reconcile` or a scheduled run) — when it ran, over
 * which days, how many cells and price entries disagree with the provider's
 * bill, the totals' drift, and the first cells that do. Static between runs,
 * so it is rendered once, not polled.
 */
import type { FC } from 'hono/jsx';
import { driftOf } from '../reconcile/drift.js';
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
  /** Bill − ledger over the larger side, in percent; beyond the tolerance or not. */
  readonly driftPercent: number;
  readonly driftExceeded: boolean;
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
export function reconciliationView(stored: StoredReconciliation): ReconciliationView {
  const report = stored.report;
  const drift = driftOf(report);
  return {
    ranAt: stored.createdAt,
    provider: report.provider,
    since: report.since,
    until: report.until,
    differences: report.differences,
    priceFlags: report.priceFlags.length,
    ledgerCostMicros: report.totals.ledger.costMicros,
    providerCostMicros: report.totals.provider.costMicros,
    driftPercent: Math.round(drift.ratio * 10_000) / 100,
    driftExceeded: drift.exceeded,
    rows: report.rows
      .filter((row) => row.status !== 'match')
      .slice(0, SHOWN)
      .map((row) => ({ day: row.day, model: row.model, project: row.project, status: row.status, note: row.note })),
    flags: report.priceFlags.map((flag) => ({ model: flag.model, kind: flag.kind, note: flag.note })),
  };
}

const ProviderResult: FC<{ view: ReconciliationView }> = ({ view }) => (
  <div data-reconcile-provider={view.provider}>
    <h3>
      {view.provider} <span class="muted">{`${view.since} to ${view.until} (UTC), checked ${timestamp(view.ranAt)}`}</span>
    </h3>
    <p data-reconcile-summary="">
      {view.differences === 0 ? 'Every day and model agrees' : `${count(view.differences)} cell${view.differences === 1 ? ' differs' : 's differ'}`}
      {'; '}
      {view.priceFlags === 0 ? 'no price entry flagged' : `${count(view.priceFlags)} price entr${view.priceFlags === 1 ? 'y' : 'ies'} flagged`}. Ledger{' '}
      {usd(view.ledgerCostMicros)}, provider {usd(view.providerCostMicros)}
      {view.driftExceeded ? ` (drift ${view.driftPercent > 0 ? '+' : ''}${view.driftPercent}%, beyond the tolerance)` : ''}.
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
  </div>
);

/** One result per provider (the newest of each), by provider name; none: how to run one. */
export const ReconciliationPanel: FC<{ views: readonly ReconciliationView[] }> = ({ views }) => (
  <section class="panel" id="reconciliation">
    <h2>
      Ledger vs the provider's bill <span class="muted">{views.length === 0 ? 'never compared' : `newest of each provider`}</span>
    </h2>
    {views.length === 0 ? (
      <p class="empty">
        Run <code>tollgate reconcile --since 7d</code> (with TOLLGATE_PROVIDER_ADMIN_KEY or TOLLGATE_ANTHROPIC_ADMIN_KEY set), or set TOLLGATE_RECONCILE_EVERY,
        to compare the ledger with the provider's usage and cost reports.
      </p>
    ) : (
      views.map((view) => <ProviderResult view={view} />)
    )}
  </section>
);
