/** @jsxRuntime automatic @jsxImportSource hono/jsx */
/**
 * A key's page (/dashboard/keys/:id): its facts and cards, the charts, then the panels of
 * key-panels.tsx. The data comes from buildKeyPage (key-view.ts), which the page's
 * polling fetches again from GET /admin/api/dashboard/keys/:id.
 */
import type { Child, FC } from 'hono/jsx';
import { Card, Chart } from './components.js';
import { BudgetAndLimitsPanel, ModelsPanel, RequestsPanel, SessionsTable, TopTable } from './key-panels.js';
import type { KeyPageView } from './key-view.js';
import { Layout } from './layout.js';

/** What the key is: id, prefix, tenant, models, end-user rules, expiry and last use. */
const KeyFacts: FC<{ view: KeyPageView }> = ({ view }) => {
  const key = view.key;
  return (
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
        {key.perUser.map(([label, text]) => (
          <>
            <dt>{label === 'per user' ? 'Per end user' : 'Tag budgets'}</dt>
            <dd class="mono">{text}</dd>
          </>
        ))}
        <dt>Last used</dt>
        <dd data-bind="text.lastUsed" data-bind-title="text.lastUsedAt" title={view.text.lastUsedAt}>
          {view.text.lastUsed}
        </dd>
      </dl>
      {key.policyError === null ? null : <p class="notice">This key's stored policy is invalid, so its requests are refused: {key.policyError}</p>}
    </section>
  );
};

/** Today's and this month's spend, requests, tokens, 429s and errors. */
const KeyCards: FC<{ view: KeyPageView }> = ({ view }) => (
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
);

/** One key: facts, totals, charts, budget and limits, models, 429s and latest requests. */
export const KeyPage: FC<{ view: KeyPageView; actions?: Child }> = ({ view, actions }) => {
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
      {actions}
      <KeyFacts view={view} />
      <KeyCards view={view} />
      <div class="grid2">
        <Chart title="Spend and tokens by hour" path="charts.hourly" note="last 48 hours, UTC" />
        <Chart title="Spend and tokens by day" path="charts.daily" note="last 90 days, UTC" />
      </div>
      <div class="grid2">
        <BudgetAndLimitsPanel view={view} />
        <ModelsPanel models={view.models} />
      </div>
      <div class="grid2">
        <TopTable title="Top end users" path="topUsers" items={view.topUsers} first="End user" empty="No requests named an end user this month." />
        <TopTable title="Top tags" path="topTags" items={view.topTags} first="Tag" empty="No tagged requests this month." />
      </div>
      <SessionsTable items={view.topSessions} />
      <RequestsPanel
        title="Recent 429s"
        note="refused by a limit or budget, or passed on from the upstream"
        path="recent429"
        items={view.recent429}
        empty="No 429s."
      />
      <RequestsPanel title="Latest requests" note="newest first, from the ledger" path="latest" items={view.latest} empty="No requests yet." />
    </Layout>
  );
};
