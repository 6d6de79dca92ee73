/** @jsxRuntime automatic @jsxImportSource hono/jsx */
/** A key page's lists of ledger rows (latest requests, recent 429s): their view model and row. */
import type { FC } from 'hono/jsx';
import type { JSX } from 'hono/jsx/jsx-runtime';
import { count, duration, relativeTime, timestamp, usd } from './format.js';
import type { RequestRow } from '../storage/dashboard-reads.js';

/** A ledger row as the key page lists it. */
export interface RequestItem {
  readonly requestId: string;
  readonly createdAt: number;
  readonly model: string;
  readonly endpoint: string;
  readonly status: string;
  readonly httpStatus: number | null;
  readonly promptTokens: number;
  readonly completionTokens: number;
  readonly costMicros: number;
  readonly latencyMs: number | null;
  readonly errorCode: string | null;
  /** ok | pending | error | rejected: the outcome cell's colour. */
  readonly tone: 'ok' | 'pending' | 'error' | 'rejected';
  readonly text: {
    readonly when: string;
    readonly at: string;
    readonly tokens: string;
    readonly cost: string;
    readonly latency: string;
    readonly outcome: string;
    readonly endpoint: string;
  };
}

function toneOf(row: RequestRow): RequestItem['tone'] {
  if (row.status === 'ok') return 'ok';
  if (row.status === 'pending') return 'pending';
  if (row.status === 'rejected' || row.httpStatus === 429) return 'rejected';
  return 'error';
}

function outcomeText(row: RequestRow): string {
  const detail = row.errorCode ?? (row.httpStatus !== null && row.httpStatus !== 200 ? `HTTP ${row.httpStatus}` : undefined);
  return detail === undefined ? row.status : `${row.status} · ${detail}`;
}

/** A ledger row as the page shows it. */
export function requestItem(row: RequestRow, now: number): RequestItem {
  const pending = row.status === 'pending';
  return {
    requestId: row.requestId,
    createdAt: row.createdAt,
    model: row.model,
    endpoint: row.endpoint,
    status: row.status,
    httpStatus: row.httpStatus,
    promptTokens: row.promptTokens,
    completionTokens: row.completionTokens,
    costMicros: row.costMicros,
    latencyMs: row.latencyMs,
    errorCode: row.errorCode,
    tone: toneOf(row),
    text: {
      when: relativeTime(row.createdAt, now),
      at: timestamp(row.createdAt),
      tokens: `${count(row.promptTokens)} → ${count(row.completionTokens)}${pending ? ' (est.)' : ''}`,
      cost: `${usd(row.costMicros)}${pending ? ' (est.)' : ''}`,
      latency: duration(row.latencyMs),
      outcome: outcomeText(row),
      endpoint: row.stream ? `${row.endpoint}, stream` : row.endpoint,
    },
  };
}

/** A ledger row's table row (first paint and the list's <template>). */
export function requestRow(item: RequestItem | undefined): JSX.Element {
  return (
    <tr data-item={item === undefined ? undefined : ''}>
      <td class="short" data-bind="text.when" data-bind-title="text.at" title={item?.text.at}>
        {item?.text.when}
      </td>
      <td class="mono" data-bind="model">
        {item?.model}
      </td>
      <td class="short" data-bind="text.endpoint">
        {item?.text.endpoint}
      </td>
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

/** The header of both lists of ledger rows. */
export const RequestTableHead: FC = () => (
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
