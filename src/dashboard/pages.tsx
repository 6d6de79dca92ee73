/** @jsxRuntime automatic @jsxImportSource hono/jsx */
/**
 * The dashboard's pages, server-rendered with Hono's JSX (every value is
 * escaped). Elements that change carry `data-bind…` attributes naming a path
 * in the page's view model; the browser script polls the same view model as
 * JSON and rebinds them (see client-script.ts). List rows are rendered by the
 * same component for the first paint and for the list's <template>, so both
 * always have the same cells.
 */
import type { Child, FC } from 'hono/jsx';
import type { JSX } from 'hono/jsx/jsx-runtime';
import { assetHref } from './assets.js';
import {
  keysQueryString,
  PAGE_SIZE,
  type BudgetItem,
  type KeyPageView,
  type KeyRowItem,
  type KeysQuery,
  type KeysView,
  type LimitItem,
  type ModelItem,
  type OverviewView,
  type RequestItem,
  type SortKey,
  type TopKeyItem,
} from './views.js';

/** How often pages poll their JSON, in ms. */
export const POLL_MS = 2000;

/** A whole HTML document from a page element. */
export async function renderDocument(page: JSX.Element): Promise<string> {
  return `<!DOCTYPE html>${await page.toString()}`;
}

type Section = 'overview' | 'keys' | undefined;

const Layout: FC<{ title: string; section: Section; poll?: string | undefined; signedIn: boolean; children?: Child }> = ({ title, section, poll, signedIn, children }) => (
  <html lang="en">
    <head>
      <meta charset="utf-8" />
      <meta name="viewport" content="width=device-width, initial-scale=1" />
      <meta name="referrer" content="no-referrer" />
      {/* No favicon request (it would be a 404 on every page). */}
      <link rel="icon" href="data:," />
      <title>{`${title} · Tollgate`}</title>
      <link rel="stylesheet" href={assetHref('uplot.min.css')} />
      <link rel="stylesheet" href={assetHref('dashboard.css')} />
      {poll === undefined ? null : <script src={assetHref('uplot.min.js')} defer></script>}
      <script src={assetHref('dashboard.js')} defer></script>
    </head>
    <body>
      <header class="top">
        <a class="brand" href="/dashboard">Tollgate</a>
        {signedIn ? (
          <nav>
            <a href="/dashboard" aria-current={section === 'overview' ? 'page' : undefined}>Overview</a>
            <a href="/dashboard/keys" aria-current={section === 'keys' ? 'page' : undefined}>Keys</a>
          </nav>
        ) : null}
        <span class="spacer"></span>
        {poll === undefined ? null : (
          <span class="live" data-live="" data-state="ok">
            Live
          </span>
        )}
        {signedIn ? (
          <form method="post" action="/dashboard/logout">
            <button class="link" type="submit">
              Log out
            </button>
          </form>
        ) : null}
      </header>
      {poll === undefined ? <main>{children}</main> : <main data-poll={poll} data-poll-ms={String(POLL_MS)}>{children}</main>}
    </body>
  </html>
);

/** The login form; `next` is where to go afterwards (a /dashboard path). */
export const LoginPage: FC<{ next: string; error?: string | undefined; info?: string | undefined }> = ({ next, error, info }) => (
  <Layout title="Log in" section={undefined} signedIn={false}>
    <div class="login">
      <h1>Tollgate dashboard</h1>
      <p class="subtitle">Log in with the admin token (TOLLGATE_ADMIN_TOKEN).</p>
      {error === undefined ? null : (
        <p class="notice" role="alert">
          {error}
        </p>
      )}
      {info === undefined ? null : <p class="notice info">{info}</p>}
      <form method="post" action="/dashboard/login">
        <input type="hidden" name="next" value={next} />
        <label>
          Admin token
          <input type="password" name="token" autocomplete="current-password" required autofocus />
        </label>
        <button class="primary" type="submit">
          Log in
        </button>
      </form>
    </div>
  </Layout>
);

/** Shown on every page when no admin token is configured. */
export const DisabledPage: FC = () => (
  <Layout title="Dashboard disabled" section={undefined} signedIn={false}>
    <div class="login">
      <h1>The dashboard is disabled</h1>
      <p>
        It needs an admin token: set <code>TOLLGATE_ADMIN_TOKEN</code> (16 characters or more) and restart Tollgate. The same token protects the admin API.
      </p>
    </div>
  </Layout>
);

/** An unknown dashboard path or key. */
export const NotFoundPage: FC<{ message: string; signedIn: boolean }> = ({ message, signedIn }) => (
  <Layout title="Not found" section={undefined} signedIn={signedIn}>
    <h1>Not found</h1>
    <p class="subtitle">{message}</p>
    <p>
      <a href="/dashboard">Back to the overview</a>
    </p>
  </Layout>
);

const Card: FC<{ label: string; value: string; bind: string; detail?: Child }> = ({ label, value, bind, detail }) => (
  <div class="card">
    <div class="label">{label}</div>
    <div class="value" data-bind={bind}>
      {value}
    </div>
    {detail === undefined ? null : <div class="detail">{detail}</div>}
  </div>
);

const Chart: FC<{ title: string; path: string; note: string }> = ({ title, path, note }) => (
  <section class="panel">
    <h2>
      {title} <span class="muted">{note}</span>
    </h2>
    <div class="chart" data-chart={path}></div>
  </section>
);

/** A list's body: the first rows, the <template> the poller clones, and the "empty" line. */
function listBody<T>(path: string, items: readonly T[], row: (item: T | undefined) => JSX.Element): JSX.Element {
  return (
    <tbody data-list={path}>
      <template>{row(undefined)}</template>
      {items.map((item) => row(item))}
    </tbody>
  );
}

const EmptyNote: FC<{ path: string; shown: boolean; children?: Child }> = ({ path, shown, children }) => (
  <p class="empty" data-empty-for={path} hidden={!shown}>
    {children}
  </p>
);

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

function budgetRow(item: BudgetItem | undefined): JSX.Element {
  return (
    <tr data-item={item === undefined ? undefined : ''}>
      <td>
        <a href={item?.href ?? '#'} data-bind-href="href" data-bind="name">
          {item?.name}
        </a>{' '}
        <span class="muted" data-bind="text.owner">
          {item?.text.owner}
        </span>
      </td>
      <td class="num">
        <span data-bind="text.spent">{item?.text.spent}</span> of <span data-bind="text.cap">{item?.text.cap}</span> <span class="muted" data-bind="text.period">{item?.text.period}</span>
      </td>
      <td>
        <div class="budget-cell">
          <meter min={0} max={1} low={0.8} high={0.99} optimum={0} value={item?.meter ?? 0} data-bind-value="meter"></meter>
          <span class="level" data-bind-state="level" data-state={item?.level ?? 'ok'} data-bind="text.percent">
            {item?.text.percent}
          </span>
        </div>
      </td>
    </tr>
  );
}

/** Today and this month over every key: cards, charts, top keys, budgets. */
export const OverviewPage: FC<{ view: OverviewView }> = ({ view }) => (
  <Layout title="Overview" section="overview" poll="/admin/api/dashboard/overview" signedIn={true}>
    <h1>Spend overview</h1>
    <p class="subtitle">
      Today is {view.today} (UTC); this month started {view.monthStart}. In-flight requests count at their estimate until they settle.
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
    <div class="grid2">
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
          Budgets <span class="muted" data-bind="text.budgetsOver">{view.text.budgetsOver}</span>
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
  </Layout>
);

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
export const KeysPage: FC<{ view: KeysView }> = ({ view }) => {
  const query = view.query;
  const link = (page: number) => `/dashboard/keys${keysQueryString(query, { page })}`;
  return (
    <Layout title="Keys" section="keys" poll={`/admin/api/dashboard/keys${keysQueryString(query)}`} signedIn={true}>
      <h1>Keys</h1>
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

function limitRow(live: boolean): (item: LimitItem | undefined) => JSX.Element {
  return (item) => (
    <tr data-item={item === undefined ? undefined : ''}>
      <td data-bind="name">{item?.name}</td>
      <td class="mono" data-bind="text.spec">
        {item?.text.spec}
      </td>
      <td>
        <div class="budget-cell">
          {live ? <meter min={0} max={1} low={0.2} high={0.5} optimum={1} value={item?.meter ?? 0} data-bind-value="meter"></meter> : null}
          <span data-bind="text.live">{item?.text.live}</span>
        </div>
      </td>
    </tr>
  );
}

function modelRow(item: ModelItem | undefined): JSX.Element {
  return (
    <tr data-item={item === undefined ? undefined : ''}>
      <td class="mono" data-bind="model">
        {item?.model}
      </td>
      <td class="num" data-bind="text.requests">
        {item?.text.requests}
      </td>
      <td class="num" data-bind="text.tokens">
        {item?.text.tokens}
      </td>
      <td class="num" data-bind="text.spend">
        {item?.text.spend}
      </td>
      <td class="num">
        <meter min={0} max={1} value={item?.share ?? 0} data-bind-value="share"></meter> <span data-bind="text.share">{item?.text.share}</span>
      </td>
    </tr>
  );
}

function requestRow(item: RequestItem | undefined): JSX.Element {
  return (
    <tr data-item={item === undefined ? undefined : ''}>
      <td data-bind="text.when" data-bind-title="text.at" title={item?.text.at}>
        {item?.text.when}
      </td>
      <td class="mono" data-bind="model">
        {item?.model}
      </td>
      <td data-bind="text.endpoint">{item?.text.endpoint}</td>
      <td class="num" data-bind="text.tokens">
        {item?.text.tokens}
      </td>
      <td class="num" data-bind="text.cost">
        {item?.text.cost}
      </td>
      <td class="num" data-bind="text.latency">
        {item?.text.latency}
      </td>
      <td>
        <span class="tone" data-bind-state="tone" data-state={item?.tone ?? ''} data-bind="text.outcome">
          {item?.text.outcome}
        </span>
      </td>
      <td class="mono muted" data-bind="requestId">
        {item?.requestId}
      </td>
    </tr>
  );
}

const RequestTableHead: FC = () => (
  <thead>
    <tr>
      <th>When</th>
      <th>Model</th>
      <th>Endpoint</th>
      <th class="num">Tokens in → out</th>
      <th class="num">Cost</th>
      <th class="num">Latency</th>
      <th>Outcome</th>
      <th>Request id</th>
    </tr>
  </thead>
);

/** One key: facts, totals, charts, budget and limits, models, 429s and latest requests. */
export const KeyPage: FC<{ view: KeyPageView }> = ({ view }) => {
  const key = view.key;
  return (
    <Layout title={key.name} section="keys" poll={`/admin/api/dashboard/keys/${encodeURIComponent(key.id)}`} signedIn={true}>
      <p class="subtitle">
        <a href="/dashboard/keys">Keys</a> /
      </p>
      <h1>
        {key.name}{' '}
        <span class="status" data-bind-state="key.status" data-state={key.status} data-bind="key.status">
          {key.status}
        </span>
      </h1>
      <section class="panel">
        <dl class="facts">
          <dt>Id</dt>
          <dd class="mono">{key.id}</dd>
          <dt>Prefix</dt>
          <dd class="mono">{key.prefix}</dd>
          <dt>Tenant</dt>
          <dd data-bind="text.tenant">{view.text.tenant}</dd>
          <dt>Models</dt>
          <dd data-bind="text.models">{view.text.models}</dd>
          <dt>Created</dt>
          <dd>{view.text.created}</dd>
          <dt>Expires</dt>
          <dd data-bind="text.expires">{view.text.expires}</dd>
          <dt>Last used</dt>
          <dd data-bind="text.lastUsed" data-bind-title="text.lastUsedAt" title={view.text.lastUsedAt}>
            {view.text.lastUsed}
          </dd>
        </dl>
        {key.policyError === null ? null : <p class="notice">This key's stored policy is invalid, so its requests are refused: {key.policyError}</p>}
      </section>
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
          label="Rejected (429) today"
          value={view.text.rejectedToday}
          bind="text.rejectedToday"
          detail={
            <>
              <span data-bind="text.rejectedMonth">{view.text.rejectedMonth}</span> this month
            </>
          }
        />
        <Card label="Errors this month" value={view.text.errorsMonth} bind="text.errorsMonth" />
      </div>
      <div class="grid2">
        <Chart title="Spend and tokens by hour" path="charts.hourly" note="last 48 hours, UTC" />
        <Chart title="Spend and tokens by day" path="charts.daily" note="last 90 days, UTC" />
      </div>
      <div class="grid2">
        <section class="panel">
          <h2>Budget</h2>
          {view.budget === null ? (
            <p class="empty">No budget on this key.</p>
          ) : (
            <table>
              <tbody data-scope="budget">{budgetRow(view.budget)}</tbody>
            </table>
          )}
          <h2>
            Limits <span class="muted">{view.limitsLive ? 'live from the limiter' : 'live utilisation not available'}</span>
          </h2>
          <table>
            <thead>
              <tr>
                <th>Name</th>
                <th>Limit</th>
                <th>Remaining now</th>
              </tr>
            </thead>
            {listBody('limits', view.limits, limitRow(view.limitsLive))}
          </table>
          <EmptyNote path="limits" shown={view.limits.length === 0}>
            No limits on this key.
          </EmptyNote>
        </section>
        <section class="panel">
          <h2>
            By model <span class="muted">this month</span>
          </h2>
          <table>
            <thead>
              <tr>
                <th>Model</th>
                <th class="num">Requests</th>
                <th class="num">Tokens in → out</th>
                <th class="num">Spend</th>
                <th class="num">Share</th>
              </tr>
            </thead>
            {listBody('models', view.models, modelRow)}
          </table>
          <EmptyNote path="models" shown={view.models.length === 0}>
            No requests this month.
          </EmptyNote>
        </section>
      </div>
      <section class="panel">
        <h2>
          Recent 429s <span class="muted">refused by a limit or budget, or passed on from the upstream</span>
        </h2>
        <table>
          <RequestTableHead />
          {listBody('recent429', view.recent429, requestRow)}
        </table>
        <EmptyNote path="recent429" shown={view.recent429.length === 0}>
          No 429s.
        </EmptyNote>
      </section>
      <section class="panel">
        <h2>
          Latest requests <span class="muted">newest first, from the ledger</span>
        </h2>
        <table>
          <RequestTableHead />
          {listBody('latest', view.latest, requestRow)}
        </table>
        <EmptyNote path="latest" shown={view.latest.length === 0}>
          No requests yet.
        </EmptyNote>
      </section>
    </Layout>
  );
};
