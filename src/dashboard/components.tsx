/** @jsxRuntime automatic @jsxImportSource hono/jsx */
/**
 * Pieces several pages share. Elements that change carry `data-bind…`
 * attributes naming a path in the page's view model; the browser script
 * polls the same view model as JSON and rebinds them (see client-script.ts).
 * List rows are rendered by the same function for the first paint and for
 * the list's <template>, so both always have the same cells.
 */
import type { Child, FC } from 'hono/jsx';
import type { JSX } from 'hono/jsx/jsx-runtime';
import type { BudgetItem } from './budget-view.js';

/** A number with its label, and a detail line under it. */
export const Card: FC<{ label: string; value: string; bind: string; detail?: Child }> = ({ label, value, bind, detail }) => (
  <div class="card">
    <div class="label">{label}</div>
    <div class="value" data-bind={bind}>
      {value}
    </div>
    {detail === undefined ? null : <div class="detail">{detail}</div>}
  </div>
);

/** A panel holding a chart drawn from the view model at `path`. */
export const Chart: FC<{ title: string; path: string; note: string }> = ({ title, path, note }) => (
  <section class="panel">
    <h2>
      {title} <span class="muted">{note}</span>
    </h2>
    <div class="chart" data-chart={path}></div>
  </section>
);

/** A list's body: the first rows, the <template> the poller clones, and the "empty" line. */
export function listBody<T>(path: string, items: readonly T[], row: (item: T | undefined) => JSX.Element): JSX.Element {
  return (
    <tbody data-list={path}>
      <template>{row(undefined)}</template>
      {items.map((item) => row(item))}
    </tbody>
  );
}

/** The "nothing yet" line of a list, shown while it is empty. */
export const EmptyNote: FC<{ path: string; shown: boolean; children?: Child }> = ({ path, shown, children }) => (
  <p class="empty" data-empty-for={path} hidden={!shown}>
    {children}
  </p>
);

/** A budget bar as a table row (overview list, key page). */
export function budgetRow(item: BudgetItem | undefined): JSX.Element {
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
      <td class="num wrap">
        <span class="nowrap">
          <span data-bind="text.spent">{item?.text.spent}</span> of <span data-bind="text.cap">{item?.text.cap}</span>
        </span>{' '}
        <span class="muted nowrap" data-bind="text.period">
          {item?.text.period}
        </span>
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
