/** @jsxRuntime automatic @jsxImportSource hono/jsx */
/**
 * The overview (/dashboard and GET /admin/api/dashboard/overview): today and
 * this month over every key: cards, charts of 48 hours and 90 days, top keys,
 * budgets.
 */
import type { FC } from 'hono/jsx';
import type { JSX } from 'hono/jsx/jsx-runtime';
import type { PeriodTotals } from '../storage/dashboard-reads.js';
import { budgetItem, keyBudget, spentInBudgetPeriod, type BudgetItem } from './budget-view.js';
import { budgetsOf } from '../domain/policy.js';
import { chartOfDays, chartOfHours, type ChartData } from './chart-view.js';
import { budgetRow, Card, Chart, EmptyNote, listBody } from './components.js';
import { count, percent, usd, usdTotal } from './format.js';
import { Layout } from './layout.js';
import { inFlightText, keyHref, tokensOf, updatedText, type ViewContext } from './view-context.js';
import type { StoredReconciliation } from '../reconcile/store.js';
import { ReconciliationPanel, reconciliationView, type ReconciliationView } from './reconciliation-panel.js';

/** A row of the overview's top keys. */
interface TopKeyItem {
  readonly id: string;
  readonly href: string;
  readonly name: string;
  readonly tenant: string | null;
  readonly prefix: string;
  readonly costMonthMicros: number;
  readonly costTodayMicros: number;
  readonly requestsMonth: number;
  /** Share of the month's spend. */
  readonly share: number;
  readonly text: { readonly tenant: string; readonly spendMonth: string; readonly spendToday: string; readonly requestsMonth: string; readonly share: string };
}

/** The overview page and GET /admin/api/dashboard/overview. */
export interface OverviewView {
  readonly page: 'overview';
  readonly generatedAt: number;
  readonly today: string;
  readonly monthStart: string;
  /** Equal to `tollgate spend --since today` and `--since month` totals. */
  readonly totals: { readonly today: PeriodTotals; readonly month: PeriodTotals };
  readonly text: Readonly<Record<OverviewText, string>>;
  readonly topKeys: readonly TopKeyItem[];
  readonly budgets: readonly BudgetItem[];
  readonly charts: { readonly hourly: ChartData; readonly daily: ChartData };
  /** The tenant a read-only tenant session sees (null for the operator). */
  readonly tenant: { readonly id: string; readonly name: string } | null;
  /** The newest reconciliation with each provider, by provider (operators only: null for a tenant; empty when none ran). */
  readonly reconciliations: readonly ReconciliationView[] | null;
}

type OverviewText =
  | 'spendToday'
  | 'spendMonth'
  | 'requestsToday'
  | 'requestsMonth'
  | 'tokensToday'
  | 'tokensMonth'
  | 'rateLimitedToday'
  | 'overBudgetToday'
  | 'rateLimitedMonth'
  | 'overBudgetMonth'
  | 'errorsToday'
  | 'pending'
  | 'budgetsOver'
  | 'updated';

const TOP_KEYS = 10;
const TOP_BUDGETS = 12;

/** The overview: today and this month over every key. */
export async function buildOverview(ctx: ViewContext, reconciliations: readonly StoredReconciliation[] = []): Promise<OverviewView> {
  const { reads, now } = ctx;
  // At once: on PostgreSQL each read is a round trip.
  const [directory, spend, hourly, daily] = await Promise.all([reads.directory(), reads.spendByKey(now), reads.hourlySeries(now), reads.dailySeries(now)]);
  const { todayTotal: today, monthTotal: month } = spend;

  const top = [...spend.monthByKey.entries()].sort((a, b) => b[1].costMicros - a[1].costMicros || a[0].localeCompare(b[0])).slice(0, TOP_KEYS);
  const topKeys: TopKeyItem[] = [];
  for (const [id, totals] of top) {
    const key = directory.keysById.get(id);
    if (key === undefined) continue;
    const costToday = spend.todayByKey.get(id)?.costMicros ?? 0;
    const share = month.costMicros > 0 ? totals.costMicros / month.costMicros : 0;
    topKeys.push({
      id,
      href: keyHref(id),
      name: key.name,
      tenant: key.tenant,
      prefix: key.prefix,
      costMonthMicros: totals.costMicros,
      costTodayMicros: costToday,
      requestsMonth: totals.requests,
      share,
      text: {
        tenant: key.tenant ?? '-',
        spendMonth: usd(totals.costMicros),
        spendToday: usd(costToday),
        requestsMonth: count(totals.requests),
        share: percent(share),
      },
    });
  }

  // Budgets of live keys and of tenants (a tenant's spend is its keys' spend).
  const budgets: BudgetItem[] = [];
  for (const key of directory.keys) {
    if (key.revokedAt !== null) continue;
    const item = keyBudget(spend, key);
    if (item !== null) budgets.push(item);
  }
  for (const tenant of directory.tenants) {
    const keyIds = directory.keys.filter((key) => key.tenantId === tenant.id).map((key) => key.id);
    const href = `/dashboard/keys?tenant=${encodeURIComponent(tenant.id)}`;
    for (const budget of budgetsOf(tenant.policy)) {
      budgets.push(budgetItem('tenant', tenant.id, tenant.name, href, budget, spentInBudgetPeriod(spend, keyIds, budget.period)));
    }
  }
  budgets.sort((a, b) => b.fraction - a.fraction || a.name.localeCompare(b.name));
  const over = budgets.filter((b) => b.level === 'over').length;

  return {
    page: 'overview',
    generatedAt: now,
    today: spend.today,
    monthStart: spend.monthStart,
    totals: { today, month },
    text: {
      // Totals as precise as the top keys' rows beside them, so the rows visibly add up.
      spendToday: usdTotal(
        today.costMicros,
        topKeys.map((item) => item.costTodayMicros),
      ),
      spendMonth: usdTotal(
        month.costMicros,
        topKeys.map((item) => item.costMonthMicros),
      ),
      requestsToday: count(today.requests),
      requestsMonth: count(month.requests),
      tokensToday: count(tokensOf(today)),
      tokensMonth: count(tokensOf(month)),
      rateLimitedToday: count(today.rejectedRateLimit),
      overBudgetToday: count(today.rejectedBudget),
      rateLimitedMonth: count(month.rejectedRateLimit),
      overBudgetMonth: count(month.rejectedBudget),
      errorsToday: count(today.errors),
      pending: inFlightText(today.pending),
      budgetsOver: budgets.length === 0 ? 'no budgets set' : `${count(over)} of ${count(budgets.length)} over budget`,
      updated: updatedText(now),
    },
    topKeys,
    budgets: budgets.slice(0, TOP_BUDGETS),
    charts: {
      hourly: chartOfHours(hourly, ['spend', 'requests', 'rejected']),
      daily: chartOfDays(daily, ['spend', 'requests']),
    },
    tenant: ctx.tenant ?? null,
    reconciliations: ctx.tenant === undefined ? reconciliations.map(reconciliationView) : null,
  };
}

function topKeyRow(item: TopKeyItem | undefined): JSX.Element {
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
      <td class="num" data-bind="text.spendMonth">
        {item?.text.spendMonth}
      </td>
      <td class="num">
        <meter min={0} max={1} value={item?.share ?? 0} data-bind-value="share"></meter> <span data-bind="text.share">{item?.text.share}</span>
      </td>
      <td class="num" data-bind="text.spendToday">
        {item?.text.spendToday}
      </td>
      <td class="num" data-bind="text.requestsMonth">
        {item?.text.requestsMonth}
      </td>
    </tr>
  );
}

/** Today and this month over every key: cards, charts, top keys, budgets. */
export const OverviewPage: FC<{ view: OverviewView }> = ({ view }) => (
  <Layout title="Overview" section="overview" poll="/admin/api/dashboard/overview" signedIn={true}>
    <h1>Spend overview{view.tenant === null ? '' : ` of tenant ${view.tenant.name}`}</h1>
    {view.tenant === null ? null : (
      <p class="subtitle" data-tenant-scope={view.tenant.id}>
        A read-only view of tenant {view.tenant.name}: its keys, spend and budgets only.
      </p>
    )}
    <p class="subtitle">
      Today is {view.today} (UTC); this month started {view.monthStart}. In-flight requests count at their estimate until they settle.
    </p>
    <p class="subtitle downloads">
      Download this month's spend as CSV:{' '}
      <a href={'/admin/api/spend.csv?since=month&by=day'} download>
        by day
      </a>
      ,{' '}
      <a href={'/admin/api/spend.csv?since=month&by=key'} download>
        by key
      </a>
      ,{' '}
      <a href={'/admin/api/spend.csv?since=month&by=model'} download>
        by model
      </a>
      ; the raw rows:{' '}
      <a href="/admin/api/ledger.csv?since=month" download>
        ledger CSV
      </a>
      .
    </p>
    <div class="cards">
      <Card label="Spend today" value={view.text.spendToday} bind="text.spendToday" detail={<span data-bind="text.pending">{view.text.pending}</span>} />
      <Card label="Spend this month" value={view.text.spendMonth} bind="text.spendMonth" />
      <Card
        label="Requests today"
        value={view.text.requestsToday}
        bind="text.requestsToday"
        detail={
          <>
            <span data-bind="text.requestsMonth">{view.text.requestsMonth}</span> this month
          </>
        }
      />
      <Card
        label="Tokens today"
        value={view.text.tokensToday}
        bind="text.tokensToday"
        detail={
          <>
            <span data-bind="text.tokensMonth">{view.text.tokensMonth}</span> this month
          </>
        }
      />
      <Card
        label="Rate-limited today"
        value={view.text.rateLimitedToday}
        bind="text.rateLimitedToday"
        detail={
          <>
            <span data-bind="text.rateLimitedMonth">{view.text.rateLimitedMonth}</span> this month
          </>
        }
      />
      <Card
        label="Over budget today"
        value={view.text.overBudgetToday}
        bind="text.overBudgetToday"
        detail={
          <>
            <span data-bind="text.overBudgetMonth">{view.text.overBudgetMonth}</span> this month
          </>
        }
      />
    </div>
    <div class="grid2">
      <Chart title="Spend by hour" path="charts.hourly" note="last 48 hours, UTC" />
      <Chart title="Spend by day" path="charts.daily" note="last 90 days, UTC" />
    </div>
    <div class="grid2 wide-first">
      <section class="panel">
        <h2>
          Top keys by spend <span class="muted">this month</span>
        </h2>
        <table>
          <thead>
            <tr>
              <th>Key</th>
              <th>Tenant</th>
              <th>Prefix</th>
              <th class="num">This month</th>
              <th class="num">Share</th>
              <th class="num">Today</th>
              <th class="num">Requests</th>
            </tr>
          </thead>
          {listBody('topKeys', view.topKeys, topKeyRow)}
        </table>
        <EmptyNote path="topKeys" shown={view.topKeys.length === 0}>
          No spend this month yet.
        </EmptyNote>
      </section>
      <section class="panel">
        <h2>
          Budgets{' '}
          <span class="muted" data-bind="text.budgetsOver">
            {view.text.budgetsOver}
          </span>
        </h2>
        <table>
          <thead>
            <tr>
              <th>Key or tenant</th>
              <th class="num">Spent</th>
              <th>Used</th>
            </tr>
          </thead>
          {listBody('budgets', view.budgets, budgetRow)}
        </table>
        <EmptyNote path="budgets" shown={view.budgets.length === 0}>
          No key or tenant has a budget.
        </EmptyNote>
      </section>
    </div>
    {view.reconciliations === null ? null : <ReconciliationPanel views={view.reconciliations} />}
  </Layout>
);
