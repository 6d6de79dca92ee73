/** @jsxRuntime automatic @jsxImportSource hono/jsx */
/**
 * The panels of a key's page below its cards: budget and limits, spend by model, top end users and
 * tags, and the lists of ledger rows (recent 429s, latest requests). Each panel's rows carry the
 * `data-bind` paths the page's polling script fills from the next {@link KeyPageView}.
 */
import type { FC } from 'hono/jsx';
import type { JSX } from 'hono/jsx/jsx-runtime';
import { budgetRow, EmptyNote, listBody } from './components.js';
import { TOP_ROWS, type KeyPageView, type LimitItem, type ModelItem, type SessionItem, type TopItem } from './key-view.js';
import { requestRow, RequestTableHead, type RequestItem } from './request-list.js';

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

function topRow(item: TopItem | undefined): JSX.Element {
  return (
    <tr data-item={item === undefined ? undefined : ''}>
      <td class="mono" data-bind="name">
        {item?.name}
      </td>
      <td class="num" data-bind="text.requests">
        {item?.text.requests}
      </td>
      <td class="num" data-bind="text.spend">
        {item?.text.spend}
      </td>
      <td class="num" data-bind="text.rejected">
        {item?.text.rejected}
      </td>
      <td class="num">
        <meter min={0} max={1} value={item?.share ?? 0} data-bind-value="share"></meter> <span data-bind="text.share">{item?.text.share}</span>
      </td>
    </tr>
  );
}

/** A table of top end users or tags. */
export const TopTable: FC<{ title: string; path: 'topUsers' | 'topTags'; items: readonly TopItem[]; first: string; empty: string }> = (props) => (
  <section class="panel" data-section={props.path}>
    <h2>
      {props.title} <span class="muted">this month, the {TOP_ROWS} that spent the most</span>
    </h2>
    <table>
      <thead>
        <tr>
          <th>{props.first}</th>
          <th class="num">Requests</th>
          <th class="num">Spend</th>
          <th class="num">Rejected</th>
          <th class="num">Share of the key</th>
        </tr>
      </thead>
      {listBody(props.path, props.items, topRow)}
    </table>
    <EmptyNote path={props.path} shown={props.items.length === 0}>
      {props.empty}
    </EmptyNote>
  </section>
);

function sessionRow(item: SessionItem | undefined): JSX.Element {
  return (
    <tr data-item={item === undefined ? undefined : ''}>
      <td class="mono" data-bind="name">
        {item?.name}
      </td>
      <td class="num" data-bind="text.spend">
        {item?.text.spend}
      </td>
      <td class="num" data-bind="text.duration">
        {item?.text.duration}
      </td>
      <td class="num" data-bind="text.requests">
        {item?.text.requests}
      </td>
      <td class="num" data-bind="text.rejected">
        {item?.text.rejected}
      </td>
    </tr>
  );
}

/** The key's agent sessions (src/endusers/session.ts): spend, duration from first to last request, requests. */
export const SessionsTable: FC<{ items: readonly SessionItem[] }> = ({ items }) => (
  <section class="panel" data-section="topSessions">
    <h2>
      Agent sessions <span class="muted">this month, the {TOP_ROWS} that spent the most</span>
    </h2>
    <table>
      <thead>
        <tr>
          <th>Session</th>
          <th class="num">Spend</th>
          <th class="num">Duration</th>
          <th class="num">Requests</th>
          <th class="num">Rejected</th>
        </tr>
      </thead>
      {listBody('topSessions', items, sessionRow)}
    </table>
    <EmptyNote path="topSessions" shown={items.length === 0}>
      No requests named an agent session this month.
    </EmptyNote>
  </section>
);

/** The key's budget with its burn-rate forecast, and its limits with their live state. */
export const BudgetAndLimitsPanel: FC<{ view: KeyPageView }> = ({ view }) => (
  <section class="panel">
    <h2>Budget</h2>
    {view.budget === null ? (
      <p class="empty">No budget on this key.</p>
    ) : (
      <>
        <table>
          <tbody data-scope="budget">{budgetRow(view.budget)}</tbody>
        </table>
        <p class="muted forecast" data-bind="text.budgetForecast">
          {view.text.budgetForecast}
        </p>
      </>
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
);

/** The key's spend this month by model. */
export const ModelsPanel: FC<{ models: readonly ModelItem[] }> = ({ models }) => (
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
      {listBody('models', models, modelRow)}
    </table>
    <EmptyNote path="models" shown={models.length === 0}>
      No requests this month.
    </EmptyNote>
  </section>
);

/** A list of the key's ledger rows: its recent 429s or its latest requests. */
export const RequestsPanel: FC<{ title: string; note: string; path: 'recent429' | 'latest'; items: readonly RequestItem[]; empty: string }> = (props) => (
  <section class="panel">
    <h2>
      {props.title} <span class="muted">{props.note}</span>
    </h2>
    <table>
      <RequestTableHead />
      {listBody(props.path, props.items, requestRow)}
    </table>
    <EmptyNote path={props.path} shown={props.items.length === 0}>
      {props.empty}
    </EmptyNote>
  </section>
);
