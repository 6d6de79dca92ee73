/**
 * The fake upstream's organization reports, built from what it billed: the
 * Usage API (`GET /v1/organization/usage/completions`, `/usage/embeddings`)
 * and the Costs API (`GET /v1/organization/costs`), in OpenAI's shapes —
 * daily UTC buckets, `group_by` model / project_id / line_item, pages of
 * `limit` buckets (at most `pageSize`, so paging is always exercised) with
 * `has_more` / `next_page`. They answer only the admin key.
 *
 * A few deliberate differences from what was billed can be configured, so
 * tests can check that `tollgate reconcile` finds exactly those: days left
 * out of both reports, models whose costs are multiplied, and extra requests
 * the proxy never sent.
 *
 * Batch lines (`billed.batchId`) cost half, as the Batch APIs bill them, and
 * the Usage API tells them apart with `group_by=batch` (`batch: true|false`).
 * Anthropic's requests are on Anthropic's bill (anthropic-billing-reports.ts),
 * not on these.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { builtinPriceTable, resolvePrice } from '../../estimate/prices.js';
import { sendError, sendJson } from './respond.js';
import { isAnthropicPath } from './anthropic.js';
import type { BillingReportOptions, RecordedRequest } from './types.js';

const DAY_S = 86_400;
const DEFAULT_SNAPSHOTS: Readonly<Record<string, string>> = { 'gpt-4o-mini': 'gpt-4o-mini-2024-07-18', 'gpt-4o': 'gpt-4o-2024-08-06' };

interface Billed {
  readonly day: number;
  readonly model: string;
  readonly project: string;
  readonly kind: 'completions' | 'embeddings';
  readonly input: number;
  readonly cached: number;
  readonly output: number;
  /** A batch line: half price. */
  readonly batch: boolean;
}

/** What a batch line pays of the synchronous price. */
const BATCH_PRICE_FACTOR = 0.5;

function billedRequests(requests: readonly RecordedRequest[], options: BillingReportOptions): Billed[] {
  const out: Billed[] = [];
  const project = options.project ?? 'proj_fake';
  for (const record of requests) {
    if (isAnthropicPath(record.path)) continue;
    const { promptTokens, cachedTokens, completionTokens } = record.billed;
    if (promptTokens + completionTokens === 0) continue;
    const model = (record.body as { model?: unknown }).model;
    if (typeof model !== 'string') continue;
    const header = record.headers['openai-project'];
    out.push({
      day: Math.floor(record.startedAt / 1000 / DAY_S) * DAY_S,
      model,
      project: typeof header === 'string' && header !== '' ? header : project,
      kind: record.path === '/v1/embeddings' ? 'embeddings' : 'completions',
      input: promptTokens,
      cached: cachedTokens,
      output: completionTokens,
      batch: record.billed.batchId !== undefined,
    });
  }
  for (const extra of options.deviations?.extraRequests ?? []) {
    out.push({
      day: Date.parse(`${extra.day}T00:00:00Z`) / 1000,
      model: extra.model,
      project,
      kind: 'completions',
      input: extra.inputTokens,
      cached: 0,
      output: extra.outputTokens,
      batch: false,
    });
  }
  const dropped = new Set((options.deviations?.dropDays ?? []).map((day) => Date.parse(`${day}T00:00:00Z`) / 1000));
  return out.filter((billed) => !dropped.has(billed.day));
}

/** Buckets from `start_time` to `end_time`, one page of them, as the API pages. */
function page(
  res: ServerResponse,
  query: URLSearchParams,
  options: BillingReportOptions,
  resultsOf: (dayStart: number) => Array<Record<string, unknown>>,
): void {
  const start = Number(query.get('start_time'));
  if (!Number.isInteger(start) || start < 0) {
    return sendError(res, 400, { type: 'invalid_request_error', code: 'invalid_value', message: 'start_time is required (Unix seconds).' }, undefined);
  }
  const endRaw = query.get('end_time');
  const end = endRaw === null ? start + 7 * DAY_S : Number(endRaw);
  const limit = Math.min(Number(query.get('limit') ?? 7) || 7, options.pageSize ?? 2);
  const first = Math.floor(start / DAY_S) * DAY_S;
  const days: number[] = [];
  for (let day = first; day < end; day += DAY_S) days.push(day);
  const offset = query.get('page') === null ? 0 : Number(Buffer.from(query.get('page')!, 'base64').toString('utf8'));
  const slice = days.slice(offset, offset + limit);
  const more = offset + limit < days.length;
  sendJson(
    res,
    200,
    {
      object: 'page',
      data: slice.map((day) => ({ object: 'bucket', start_time: day, end_time: day + DAY_S, results: resultsOf(day) })),
      has_more: more,
      next_page: more ? Buffer.from(String(offset + limit)).toString('base64') : null,
    },
    undefined,
  );
}

/** Answers an organization report request; false when the path is not one. */
export function handleBillingReport(
  req: IncomingMessage,
  path: string,
  res: ServerResponse,
  requests: readonly RecordedRequest[],
  options: BillingReportOptions | undefined,
): boolean {
  if (!path.startsWith('/v1/organization/')) return false;
  if (options === undefined || req.headers.authorization !== `Bearer ${options.adminKey}`) {
    sendError(res, 401, { type: 'invalid_request_error', code: 'invalid_api_key', message: 'Incorrect API key provided. Admin keys only.' }, undefined);
    return true;
  }
  const query = new URL(req.url ?? '/', 'http://fake').searchParams;
  const groups = new Set(query.getAll('group_by'));
  const snapshots = options.snapshots ?? DEFAULT_SNAPSHOTS;
  const reported = (model: string) => snapshots[model] ?? model;
  const billed = billedRequests(requests, options);
  const usage = (kind: Billed['kind']) => (day: number) => {
    const cells = new Map<
      string,
      Record<string, unknown> & { input_tokens: number; output_tokens: number; input_cached_tokens: number; num_model_requests: number }
    >();
    for (const b of billed) {
      if (b.day !== day || b.kind !== kind) continue;
      const model = groups.has('model') ? reported(b.model) : null;
      const project = groups.has('project_id') ? b.project : null;
      const batch = groups.has('batch') ? b.batch : null;
      const key = `${model}|${project}|${batch}`;
      const cell = cells.get(key) ?? {
        object: `organization.usage.${kind}.result`,
        input_tokens: 0,
        output_tokens: 0,
        input_cached_tokens: 0,
        num_model_requests: 0,
        project_id: project,
        user_id: null,
        api_key_id: null,
        model,
        batch,
      };
      cell.input_tokens += b.input;
      cell.output_tokens += b.output;
      cell.input_cached_tokens += b.cached;
      cell.num_model_requests += 1;
      cells.set(key, cell);
    }
    return [...cells.values()].map((cell) => (kind === 'embeddings' ? { ...cell, output_tokens: undefined, input_cached_tokens: undefined } : cell));
  };
  const costs = (day: number) => {
    const amounts = new Map<string, { lineItem: string | null; project: string | null; value: number }>();
    const addCost = (lineItem: string, project: string, value: number) => {
      const item = groups.has('line_item') ? lineItem : null;
      const proj = groups.has('project_id') ? project : null;
      const key = `${item}|${proj}`;
      const entry = amounts.get(key) ?? { lineItem: item, project: proj, value: 0 };
      entry.value += value;
      amounts.set(key, entry);
    };
    for (const b of billed) {
      if (b.day !== day) continue;
      const price = resolvePrice(b.model, builtinPriceTable);
      const factor = (options.deviations?.priceMultipliers?.[b.model] ?? 1) * (b.batch ? BATCH_PRICE_FACTOR : 1);
      const name = reported(b.model);
      // Exact dollars of each line (µUSD per 1M tokens × tokens ÷ 10^12).
      addCost(`${name}, input`, b.project, ((b.input - b.cached) * price.inputMicroUsdPer1M * factor) / 1e12);
      if (b.cached > 0) addCost(`${name}, cached input`, b.project, (b.cached * price.cachedInputMicroUsdPer1M * factor) / 1e12);
      if (b.output > 0) addCost(`${name}, output`, b.project, (b.output * price.outputMicroUsdPer1M * factor) / 1e12);
    }
    return [...amounts.values()].map((entry) => ({
      object: 'organization.costs.result',
      amount: { value: entry.value, currency: 'usd' },
      line_item: entry.lineItem,
      project_id: entry.project,
    }));
  };
  if (req.method === 'GET' && path === '/v1/organization/usage/completions') page(res, query, options, usage('completions'));
  else if (req.method === 'GET' && path === '/v1/organization/usage/embeddings') page(res, query, options, usage('embeddings'));
  else if (req.method === 'GET' && path === '/v1/organization/costs') page(res, query, options, costs);
  else sendError(res, 404, { type: 'invalid_request_error', code: 'unknown_url', message: `Invalid URL (${req.method} ${path})` }, undefined);
  return true;
}
