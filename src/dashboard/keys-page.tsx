/** @jsxRuntime automatic @jsxImportSource hono/jsx */
/**
 * The keys table (/dashboard/keys and GET /admin/api/dashboard/keys): every
 * key filtered by tenant, status and text, sorted, 50 a page, with its spend,
 * budget use and last use.
 */
import type { Child, FC } from 'hono/jsx';
import type { JSX } from 'hono/jsx/jsx-runtime';
import { formatLimit } from '../domain/policy.js';
import { keyBudget, type BudgetItem, type Level } from './budget-view.js';
import { EmptyNote, listBody } from './components.js';
import { keyStatusOf, type KeyStatus } from '../domain/keys.js';
import type { KeyRecord } from '../storage/directory.js';
import { count, relativeTime, timestamp, usd } from './format.js';
import { keysQueryString, PAGE_SIZE, type KeysQuery, type SortKey } from './keys-query.js';
import { Layout } from './layout.js';
import { keyHref, updatedText, type ViewContext } from './view-context.js';

/** A row of the keys table. */
interface KeyRowItem {
  readonly id: string;
  readonly href: string;
  readonly name: string;
  readonly tenant: string | null;
  readonly prefix: string;
  readonly status: KeyStatus;
  readonly costTodayMicros: number;
  readonly costMonthMicros: number;
  readonly requestsMonth: number;
  readonly lastUsedAt: number | null;
  readonly budget: BudgetItem | null;
  /** The meter's value (0 without a budget). */
  readonly budgetMeter: number;
  readonly budgetLevel: Level | 'none';
  readonly text: {
    readonly tenant: string;
    readonly limits: string;
    readonly budget: string;
    readonly budgetPercent: string;
    readonly spendToday: string;
    readonly spendMonth: string;
    readonly requestsMonth: string;
    readonly lastUsed: string;
    readonly lastUsedAt: string;
  };
}

/** The keys table and GET /admin/api/dashboard/keys. */
export interface KeysView {
  readonly page: 'keys';
  readonly generatedAt: number;
  readonly query: KeysQuery;
  /** Keys matching the filters. */
  readonly matching: number;
  readonly pages: number;
  readonly rows: readonly KeyRowItem[];
  readonly tenants: ReadonlyArray<{ readonly id: string; readonly name: string }>;
  readonly text: { readonly showing: string; readonly updated: string };
}

const STATUS_ORDER: Record<KeyStatus, number> = { active: 0, suspended: 1, expired: 2, revoked: 3 };

/** The keys table: filter, sort and one page, with each key's spend. */
export async function buildKeys(ctx: ViewContext, query: KeysQuery): Promise<KeysView> {
  const { reads, now } = ctx;
  const [directory, spend] = await Promise.all([reads.directory(), reads.spendByKey(now)]);
  const tenantFilter =
    query.tenant === undefined
      ? undefined
      : query.tenant === '-'
        ? null
        : (directory.tenantsById.get(query.tenant) ?? directory.tenants.find((t) => t.name === query.tenant))?.id;
  const needle = query.q?.toLowerCase();
  const keys = directory.keys.filter((key) => {
    if (query.tenant !== undefined && key.tenantId !== (tenantFilter === undefined ? '\u0000no such tenant' : tenantFilter)) return false;
    if (query.status !== undefined && keyStatusOf(key, now) !== query.status) return false;
    if (needle !== undefined && !key.name.toLowerCase().includes(needle) && !key.prefix.toLowerCase().includes(needle)) return false;
    return true;
  });

  // Budgets and last use only where the sort needs them for every key; otherwise for the page's keys.
  const budgets = new Map<string, BudgetItem | null>();
  const budgetOf = (key: KeyRecord): BudgetItem | null => {
    if (!budgets.has(key.id)) budgets.set(key.id, keyBudget(spend, key));
    return budgets.get(key.id)!;
  };
  const lastUsed = spend.lastRequestAtByKey;
  const month = (key: KeyRecord) => spend.monthByKey.get(key.id);
  const sortValue = (key: KeyRecord): number | string => {
    switch (query.sort) {
      case 'name':
        return key.name.toLowerCase();
      case 'tenant':
        return (key.tenant ?? '\uffff').toLowerCase();
      case 'status':
        return STATUS_ORDER[keyStatusOf(key, now)];
      case 'today':
        return spend.todayByKey.get(key.id)?.costMicros ?? 0;
      case 'month':
        return month(key)?.costMicros ?? 0;
      case 'requests':
        return month(key)?.requests ?? 0;
      case 'budget':
        return budgetOf(key)?.fraction ?? -1;
      case 'last_used':
        return lastUsed.get(key.id) ?? -1;
    }
  };
  const sign = query.dir === 'asc' ? 1 : -1;
  const decorated = keys.map((key) => ({ key, value: sortValue(key) }));
  decorated.sort((a, b) => {
    const order = a.value < b.value ? -1 : a.value > b.value ? 1 : 0;
    return order * sign || a.key.name.localeCompare(b.key.name) || a.key.id.localeCompare(b.key.id);
  });

  const pages = Math.max(1, Math.ceil(decorated.length / PAGE_SIZE));
  const page = Math.min(query.page, pages);
  const slice = decorated.slice((page - 1) * PAGE_SIZE, page * PAGE_SIZE).map((entry) => entry.key);
  const rows = slice.map((key): KeyRowItem => {
    const today = spend.todayByKey.get(key.id);
    const monthTotals = month(key);
    const budget = budgetOf(key);
    const at = lastUsed.get(key.id) ?? null;
    return {
      id: key.id,
      href: keyHref(key.id),
      name: key.name,
      tenant: key.tenant,
      prefix: key.prefix,
      status: keyStatusOf(key, now),
      costTodayMicros: today?.costMicros ?? 0,
      costMonthMicros: monthTotals?.costMicros ?? 0,
      requestsMonth: monthTotals?.requests ?? 0,
      lastUsedAt: at,
      budget,
      budgetMeter: budget?.meter ?? 0,
      budgetLevel: budget?.level ?? 'none',
      text: {
        tenant: key.tenant ?? '-',
        limits: key.policy === undefined ? 'invalid policy' : key.policy.limits.length === 0 ? 'none' : key.policy.limits.map(formatLimit).join(', '),
        budget: budget === null ? 'none' : `${budget.text.spent} of ${budget.text.cap} ${budget.text.period}`,
        budgetPercent: budget === null ? '' : budget.text.percent,
        spendToday: usd(today?.costMicros ?? 0),
        spendMonth: usd(monthTotals?.costMicros ?? 0),
        requestsMonth: count(monthTotals?.requests ?? 0),
        lastUsed: relativeTime(at, now),
        lastUsedAt: timestamp(at),
      },
    };
  });
  const first = decorated.length === 0 ? 0 : (page - 1) * PAGE_SIZE + 1;
  return {
    page: 'keys',
    generatedAt: now,
    query: { ...query, page },
    matching: decorated.length,
    pages,
    rows,
    tenants: directory.tenants.map((t) => ({ id: t.id, name: t.name })),
    text: {
      showing: decorated.length === 0 ? 'No keys match.' : `Showing ${count(first)}–${count(first + rows.length - 1)} of ${count(decorated.length)} keys`,
      updated: updatedText(now),
    },
  };
}

function SortHeader({ query, sort, label, numeric }: { query: KeysQuery; sort: SortKey; label: string; numeric: boolean }): JSX.Element {
  const active = query.sort === sort;
  const defaultDir = sort === 'name' || sort === 'tenant' || sort === 'status' ? 'asc' : 'desc';
  const dir = active ? (query.dir === 'asc' ? 'desc' : 'asc') : defaultDir;
  const arrow = active ? (query.dir === 'asc' ? ' ▲' : ' ▼') : '';
  return (
    <th class={numeric ? 'num' : undefined}>
      <a href={`/dashboard/keys${keysQueryString(query, { sort, dir, page: 1 })}`} data-active={active ? 'true' : 'false'}>
        {label}
        {arrow}
      </a>
    </th>
  );
}

function keyRow(item: KeyRowItem | undefined): JSX.Element {
  return (
    <tr data-item={item === undefined ? undefined : ''}>
      <td>
        <a href={item?.href ?? '#'} data-bind-href="href" data-bind="name">
          {item?.name}
        </a>
      </td>
      <td data-bind="text.tenant">{item?.text.tenant}</td>
      <td class="mono" data-bind="prefix">
        {item?.prefix}
      </td>
      <td>
        <span class="status" data-bind-state="status" data-state={item?.status ?? ''} data-bind="status">
          {item?.status}
        </span>
      </td>
      <td class="wrap mono" data-bind="text.limits">
        {item?.text.limits}
      </td>
      <td>
        <div class="budget-cell">
          <meter min={0} max={1} low={0.8} high={0.99} optimum={0} value={item?.budgetMeter ?? 0} data-bind-value="budgetMeter"></meter>
          <span class="level" data-bind-state="budgetLevel" data-state={item?.budgetLevel ?? 'none'} data-bind="text.budgetPercent">
            {item?.text.budgetPercent}
          </span>
        </div>
        <div class="muted" data-bind="text.budget">
          {item?.text.budget}
        </div>
      </td>
      <td class="num" data-bind="text.spendToday">
        {item?.text.spendToday}
      </td>
      <td class="num" data-bind="text.spendMonth">
        {item?.text.spendMonth}
      </td>
      <td class="num" data-bind="text.requestsMonth">
        {item?.text.requestsMonth}
      </td>
      <td data-bind="text.lastUsed" data-bind-title="text.lastUsedAt" title={item?.text.lastUsedAt}>
        {item?.text.lastUsed}
      </td>
    </tr>
  );
}

/** The keys table with its filters, sort links and pages. */
export const KeysPage: FC<{ view: KeysView; toolbar?: Child }> = ({ view, toolbar }) => {
  const query = view.query;
  const link = (page: number) => `/dashboard/keys${keysQueryString(query, { page })}`;
  return (
    <Layout title="Keys" section="keys" poll={`/admin/api/dashboard/keys${keysQueryString(query)}`} signedIn={true}>
      <h1>Keys</h1>
      {toolbar}
      <p class="subtitle">Spend is in UTC days; "this month" is the month to date. The key itself is never shown, only its prefix.</p>
      <form class="filters" method="get" action="/dashboard/keys">
        <label>
          Tenant
          <select name="tenant" data-autosubmit="">
            <option value="" selected={query.tenant === undefined}>
              All tenants
            </option>
            <option value="-" selected={query.tenant === '-'}>
              (no tenant)
            </option>
            {view.tenants.map((tenant) => (
              <option value={tenant.id} selected={query.tenant === tenant.id || query.tenant === tenant.name}>
                {tenant.name}
              </option>
            ))}
          </select>
        </label>
        <label>
          Status
          <select name="status" data-autosubmit="">
            <option value="" selected={query.status === undefined}>
              Any status
            </option>
            <option value="active" selected={query.status === 'active'}>
              active
            </option>
            <option value="suspended" selected={query.status === 'suspended'}>
              suspended
            </option>
            <option value="expired" selected={query.status === 'expired'}>
              expired
            </option>
            <option value="revoked" selected={query.status === 'revoked'}>
              revoked
            </option>
          </select>
        </label>
        <label>
          Name or prefix
          <input type="search" name="q" value={query.q ?? ''} placeholder="search" />
        </label>
        {query.sort === 'month' ? null : <input type="hidden" name="sort" value={query.sort} />}
        <input type="hidden" name="dir" value={query.dir} />
        <button type="submit">Filter</button>
      </form>
      <section class="panel">
        <table>
          <thead>
            <tr>
              <SortHeader query={query} sort="name" label="Name" numeric={false} />
              <SortHeader query={query} sort="tenant" label="Tenant" numeric={false} />
              <th>Prefix</th>
              <SortHeader query={query} sort="status" label="Status" numeric={false} />
              <th>Limits</th>
              <SortHeader query={query} sort="budget" label="Budget used" numeric={false} />
              <SortHeader query={query} sort="today" label="Today" numeric={true} />
              <SortHeader query={query} sort="month" label="This month" numeric={true} />
              <SortHeader query={query} sort="requests" label="Requests (month)" numeric={true} />
              <SortHeader query={query} sort="last_used" label="Last used" numeric={false} />
            </tr>
          </thead>
          {listBody('rows', view.rows, keyRow)}
        </table>
        <EmptyNote path="rows" shown={view.rows.length === 0}>
          No keys match these filters.
        </EmptyNote>
        <div class="pager">
          {query.page > 1 ? (
            <a href={link(query.page - 1)} rel="prev">
              ← Previous
            </a>
          ) : (
            <span class="disabled">← Previous</span>
          )}
          <span data-bind="text.showing">{view.text.showing}</span>
          <span class="muted">
            page {query.page} of {view.pages} ({PAGE_SIZE} per page)
          </span>
          {query.page < view.pages ? (
            <a href={link(query.page + 1)} rel="next">
              Next →
            </a>
          ) : (
            <span class="disabled">Next →</span>
          )}
        </div>
      </section>
    </Layout>
  );
};
