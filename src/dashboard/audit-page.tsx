/** @jsxRuntime automatic @jsxImportSource hono/jsx */
/**
 * The audit trail's page (/dashboard/audit): every change to keys, tenants,
 * admins and tenant tokens, newest first, filtered by key, actor, action and
 * time, with what each change did, and links to the whole filtered trail as
 * CSV or NDJSON (the admin API's `GET /audit`, which the session may read).
 * Any operator session reads it, viewers too; a tenant's gets 404.
 */
import type { FC } from 'hono/jsx';
import { AUDIT_ACTIONS, type AuditEntry, type AuditState } from '../domain/audit.js';
import { formatMicrosExact } from '../domain/money.js';
import { formatLimit, type Budget, type LimitSpec } from '../domain/policy.js';
import { timestamp } from './format.js';
import { Layout } from './layout.js';

/** The page's filters, as typed (empty: not filtered). */
export interface AuditFilters {
  readonly key: string;
  readonly actor: string;
  readonly action: string;
  readonly since: string;
}

const FILTER_NAMES = ['key', 'actor', 'action', 'since'] as const;

/** The filters of a query string. */
export function auditFiltersOf(query: (name: string) => string | undefined): AuditFilters {
  const value = (name: (typeof FILTER_NAMES)[number]) => (query(name) ?? '').trim();
  return { key: value('key'), actor: value('actor'), action: value('action'), since: value('since') };
}

function queryOf(filters: AuditFilters, extra: Record<string, string> = {}): string {
  const params = new URLSearchParams();
  for (const name of FILTER_NAMES) if (filters[name] !== '') params.set(name, filters[name]);
  for (const [name, value] of Object.entries(extra)) params.set(name, value);
  const text = params.toString();
  return text === '' ? '' : `?${text}`;
}

const isBudget = (value: unknown): value is Budget => typeof value === 'object' && value !== null && 'microUsd' in value && 'period' in value;
const budgetText = (budget: Budget) => `${formatMicrosExact(budget.microUsd)} ${budget.period === 'total' ? 'in total' : `per ${budget.period}`}`;

/** A state's value as one short line: budgets in dollars, limits in the CLI's syntax, the rest as JSON. */
function shown(name: string, value: unknown): string {
  if (value === undefined || value === null) return '-';
  let text: string;
  if (isBudget(value)) text = budgetText(value);
  else if (name === 'budgets' && Array.isArray(value) && value.every(isBudget)) text = value.map(budgetText).join(', ') || 'none';
  else if (name === 'limits' && Array.isArray(value)) text = (value as LimitSpec[]).map(formatLimit).join(', ') || 'none';
  else text = typeof value === 'string' ? value : JSON.stringify(value);
  return text.length > 160 ? `${text.slice(0, 157)}...` : text;
}

/** What a change did, field by field (a policy part by part): `budget: {…} → {…}`. */
function changedFields(before: AuditState | null, after: AuditState | null): string[] {
  if (before === null) return after === null ? [] : ['created'];
  if (after === null) return ['removed'];
  const lines: string[] = [];
  const compare = (prefix: string, a: Readonly<Record<string, unknown>>, b: Readonly<Record<string, unknown>>) => {
    for (const name of new Set([...Object.keys(a), ...Object.keys(b)])) {
      const was = a[name];
      const now = b[name];
      if (JSON.stringify(was) === JSON.stringify(now)) continue;
      if (name === 'policy' && typeof was === 'object' && was !== null && typeof now === 'object' && now !== null) {
        compare('', was as Record<string, unknown>, now as Record<string, unknown>);
      } else lines.push(`${prefix}${name}: ${shown(name, was)} → ${shown(name, now)}`);
    }
  };
  compare('', before, after);
  return lines;
}

export interface AuditView {
  readonly filters: AuditFilters;
  readonly entries: readonly AuditEntry[];
  readonly nextCursor: string | null;
  readonly error?: string | undefined;
}

const EntryRow: FC<{ entry: AuditEntry }> = ({ entry }) => {
  const target = entry.target;
  return (
    <tr data-audit-row={entry.action}>
      <td class="nowrap">{timestamp(entry.at)}</td>
      <td data-actor="">{entry.actor.name}</td>
      <td class="mono">{entry.action}</td>
      <td>
        {target.kind === 'key' ? <a href={`/dashboard/keys/${encodeURIComponent(target.id)}`}>{target.name}</a> : target.name}{' '}
        <span class="muted">{target.kind}</span>
      </td>
      <td class="mono wrap">
        {changedFields(entry.before, entry.after).map((line) => (
          <div>{line}</div>
        ))}
      </td>
    </tr>
  );
};

export const AuditPage: FC<{ view: AuditView }> = ({ view }) => {
  const { filters } = view;
  return (
    <Layout title="Audit trail" section="keys" signedIn={true}>
      <p class="subtitle">
        <a href="/dashboard/keys">Keys</a> /
      </p>
      <h1>Audit trail</h1>
      <p class="subtitle">Every change to keys, tenants, admins and tenant tokens, from the dashboard, the admin API and the CLI; newest first.</p>
      <form method="get" action="/dashboard/audit" class="filters">
        <label>
          Key (id, name or prefix)
          <input name="key" value={filters.key} />
        </label>
        <label>
          Actor
          <input name="actor" value={filters.actor} placeholder="alice, bootstrap, cli:bob" />
        </label>
        <label>
          Action
          <select name="action">
            <option value="">any</option>
            {AUDIT_ACTIONS.map((action) => (
              <option value={action} selected={action === filters.action}>
                {action}
              </option>
            ))}
          </select>
        </label>
        <label>
          Since
          <input name="since" value={filters.since} placeholder="7d, today, 2026-11-01" />
        </label>
        <button type="submit">Apply</button>
        <span class="muted">
          Export: <a href={`/admin/api/audit${queryOf(filters, { format: 'csv' })}`}>CSV</a> ·{' '}
          <a href={`/admin/api/audit${queryOf(filters, { format: 'ndjson' })}`}>NDJSON</a>
        </span>
      </form>
      {view.error === undefined ? null : (
        <p class="notice" role="alert">
          {view.error}
        </p>
      )}
      <section class="panel">
        {view.entries.length === 0 ? (
          <p class="empty">No changes match.</p>
        ) : (
          <table>
            <thead>
              <tr>
                <th>When</th>
                <th>Who</th>
                <th>Action</th>
                <th>What</th>
                <th>Change</th>
              </tr>
            </thead>
            <tbody>
              {view.entries.map((entry) => (
                <EntryRow entry={entry} />
              ))}
            </tbody>
          </table>
        )}
        {view.nextCursor === null ? null : (
          <p class="pager">
            <a href={`/dashboard/audit${queryOf(filters, { cursor: view.nextCursor })}`}>Older changes</a>
          </p>
        )}
      </section>
    </Layout>
  );
};
