/**
 * The fake upstream's Anthropic Admin API reports, built from what its
 * Anthropic dialect billed (`/v1/messages` records and Message Batches lines):
 * the Usage report (`GET /v1/organizations/usage_report/messages`) and the
 * Cost report (`GET /v1/organizations/cost_report`), in Anthropic's shapes —
 * daily UTC buckets with RFC 3339 `starting_at` / `ending_at`, `group_by[]`
 * model / service_tier (usage) and description (cost), amounts in cents as
 * decimal strings, pages of at most `pageSize` buckets (so paging is always
 * exercised) with `has_more` / `next_page`. They answer only the admin key,
 * sent as `x-api-key` with `anthropic-version`.
 *
 * The deliberate differences of billing-reports.ts apply here too (days left
 * out, models priced differently, requests the proxy never sent). Batch lines
 * cost half, as Message Batches bill them, and report `service_tier: batch`.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { builtinPriceTable, resolvePrice } from '../../estimate/prices.js';
import { cacheWrite1hPrice, cacheWrite5mPrice } from '../../estimate/price-cost.js';
import { isAnthropicPath } from './anthropic.js';
import type { BillingReportOptions, RecordedRequest } from './types.js';

const DAY_MS = 86_400_000;
/** Dated names the reports use for requested models, as the real API reports snapshots. */
const DEFAULT_SNAPSHOTS: Readonly<Record<string, string>> = {
  'claude-sonnet-4-5': 'claude-sonnet-4-5-20250929',
  'claude-haiku-4-5': 'claude-haiku-4-5-20251001',
};
const BATCH_PRICE_FACTOR = 0.5;

interface Billed {
  readonly day: number;
  readonly model: string;
  readonly uncached: number;
  readonly cacheRead: number;
  readonly write5m: number;
  readonly write1h: number;
  readonly output: number;
  readonly batch: boolean;
}

/** The token types of the cost report, in its order, with how a billed line counts them and a line item's label. */
const TOKEN_TYPES = [
  { type: 'uncached_input_tokens', label: 'Input Tokens', of: (b: Billed) => b.uncached },
  { type: 'cache_read_input_tokens', label: 'Cache Read Input Tokens', of: (b: Billed) => b.cacheRead },
  { type: 'cache_creation.ephemeral_5m_input_tokens', label: 'Cache Write (5m) Input Tokens', of: (b: Billed) => b.write5m },
  { type: 'cache_creation.ephemeral_1h_input_tokens', label: 'Cache Write (1h) Input Tokens', of: (b: Billed) => b.write1h },
  { type: 'output_tokens', label: 'Output Tokens', of: (b: Billed) => b.output },
] as const;

function billedMessages(requests: readonly RecordedRequest[], options: BillingReportOptions): Billed[] {
  const out: Billed[] = [];
  for (const record of requests) {
    if (!isAnthropicPath(record.path) || record.path === '/v1/messages/count_tokens') continue;
    const { promptTokens, cachedTokens, completionTokens } = record.billed;
    if (promptTokens + completionTokens === 0) continue;
    const model = (record.body as { model?: unknown } | null)?.model;
    if (typeof model !== 'string') continue;
    const write5m = record.billed.cacheWrite5mTokens ?? 0;
    const write1h = record.billed.cacheWrite1hTokens ?? 0;
    out.push({
      day: Math.floor(record.startedAt / DAY_MS) * DAY_MS,
      model,
      uncached: promptTokens - cachedTokens - write5m - write1h,
      cacheRead: cachedTokens,
      write5m,
      write1h,
      output: completionTokens,
      batch: record.billed.batchId !== undefined,
    });
  }
  for (const extra of options.deviations?.extraRequests ?? []) {
    const day = Date.parse(`${extra.day}T00:00:00Z`);
    out.push({ day, model: extra.model, uncached: extra.inputTokens, cacheRead: 0, write5m: 0, write1h: 0, output: extra.outputTokens, batch: false });
  }
  const dropped = new Set((options.deviations?.dropDays ?? []).map((day) => Date.parse(`${day}T00:00:00Z`)));
  return out.filter((billed) => !dropped.has(billed.day));
}

function sendAnthropic(res: ServerResponse, status: number, payload: unknown): void {
  const text = JSON.stringify(payload);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), 'request-id': 'req_fake_admin' });
  res.end(text);
}

function sendAnthropicError(res: ServerResponse, status: number, type: string, message: string): void {
  sendAnthropic(res, status, { type: 'error', error: { type, message } });
}

const iso = (ms: number) => new Date(ms).toISOString().replace('.000Z', 'Z');

/** Daily buckets from `starting_at` to `ending_at`, one page of them, as the Admin API pages. */
function page(res: ServerResponse, query: URLSearchParams, options: BillingReportOptions, resultsOf: (dayStart: number) => unknown[]): void {
  const start = Date.parse(query.get('starting_at') ?? '');
  if (Number.isNaN(start)) return sendAnthropicError(res, 400, 'invalid_request_error', 'starting_at: Field required');
  const endRaw = query.get('ending_at');
  const end = endRaw === null ? start + 7 * DAY_MS : Date.parse(endRaw);
  const limit = Math.min(Number(query.get('limit') ?? 7) || 7, 31, options.pageSize ?? 2);
  const days: number[] = [];
  for (let day = Math.floor(start / DAY_MS) * DAY_MS; day < end; day += DAY_MS) days.push(day);
  const token = query.get('page');
  const offset = token === null ? 0 : Number(Buffer.from(token.replace(/^page_/, ''), 'base64').toString('utf8'));
  const slice = days.slice(offset, offset + limit);
  const more = offset + limit < days.length;
  sendAnthropic(res, 200, {
    data: slice.map((day) => ({ starting_at: iso(day), ending_at: iso(day + DAY_MS), results: resultsOf(day) })),
    has_more: more,
    next_page: more ? `page_${Buffer.from(String(offset + limit)).toString('base64')}` : null,
  });
}

/** Answers an Anthropic Admin API report request; false when the path is not one. */
export function handleAnthropicBillingReport(
  req: IncomingMessage,
  path: string,
  res: ServerResponse,
  requests: readonly RecordedRequest[],
  options: BillingReportOptions | undefined,
): boolean {
  if (!path.startsWith('/v1/organizations/')) return false;
  if (options === undefined || req.headers['x-api-key'] !== options.adminKey) {
    sendAnthropicError(res, 401, 'authentication_error', 'invalid x-api-key');
    return true;
  }
  if (typeof req.headers['anthropic-version'] !== 'string') {
    sendAnthropicError(res, 400, 'invalid_request_error', 'anthropic-version: header is required');
    return true;
  }
  const query = new URL(req.url ?? '/', 'http://fake').searchParams;
  const groups = new Set(query.getAll('group_by[]'));
  const snapshots = options.snapshots ?? DEFAULT_SNAPSHOTS;
  const reported = (model: string) => snapshots[model] ?? model;
  const billed = billedMessages(requests, options);
  const tierOf = (b: Billed) => (b.batch ? 'batch' : 'standard');

  const usage = (day: number) => {
    const cells = new Map<string, { model: string | null; tier: string | null; sums: Billed }>();
    for (const b of billed) {
      if (b.day !== day) continue;
      const model = groups.has('model') ? reported(b.model) : null;
      const tier = groups.has('service_tier') ? tierOf(b) : null;
      const key = `${model}|${tier}`;
      const cell = cells.get(key) ?? { model, tier, sums: { day, model: '', uncached: 0, cacheRead: 0, write5m: 0, write1h: 0, output: 0, batch: false } };
      const s = cell.sums;
      cell.sums = {
        ...s,
        uncached: s.uncached + b.uncached,
        cacheRead: s.cacheRead + b.cacheRead,
        write5m: s.write5m + b.write5m,
        write1h: s.write1h + b.write1h,
        output: s.output + b.output,
      };
      cells.set(key, cell);
    }
    return [...cells.values()].map(({ model, tier, sums }) => ({
      uncached_input_tokens: sums.uncached,
      cache_creation: { ephemeral_1h_input_tokens: sums.write1h, ephemeral_5m_input_tokens: sums.write5m },
      cache_read_input_tokens: sums.cacheRead,
      output_tokens: sums.output,
      server_tool_use: { web_search_requests: 0 },
      api_key_id: null,
      workspace_id: null,
      model,
      service_tier: tier,
      context_window: null,
    }));
  };

  const costs = (day: number) => {
    const lines = new Map<string, { model: string; tier: string; type: string; label: string; cents: number }>();
    for (const b of billed) {
      if (b.day !== day) continue;
      const price = resolvePrice(b.model, builtinPriceTable);
      const factor = (options.deviations?.priceMultipliers?.[b.model] ?? 1) * (b.batch ? BATCH_PRICE_FACTOR : 1);
      const per1M: Record<string, number> = {
        uncached_input_tokens: price.inputMicroUsdPer1M,
        cache_read_input_tokens: price.cachedInputMicroUsdPer1M,
        'cache_creation.ephemeral_5m_input_tokens': cacheWrite5mPrice(price),
        'cache_creation.ephemeral_1h_input_tokens': cacheWrite1hPrice(price),
        output_tokens: price.outputMicroUsdPer1M,
      };
      for (const { type, label, of } of TOKEN_TYPES) {
        const tokens = of(b);
        if (tokens === 0) continue;
        const key = `${b.model}|${tierOf(b)}|${type}`;
        const line = lines.get(key) ?? { model: b.model, tier: tierOf(b), type, label, cents: 0 };
        // Exact cents: µUSD per 1M tokens × tokens ÷ 10^6 is µUSD, ÷ 10^4 is cents.
        line.cents += (tokens * per1M[type]! * factor) / 1e10;
        lines.set(key, line);
      }
    }
    if (!groups.has('description')) {
      const cents = [...lines.values()].reduce((sum, line) => sum + line.cents, 0);
      if (cents === 0) return [];
      return [
        {
          currency: 'USD',
          amount: cents.toFixed(6),
          workspace_id: null,
          description: null,
          cost_type: null,
          context_window: null,
          model: null,
          service_tier: null,
          token_type: null,
        },
      ];
    }
    return [...lines.values()].map((line) => ({
      currency: 'USD',
      amount: line.cents.toFixed(6),
      workspace_id: null,
      description: `${reported(line.model)}${line.tier === 'batch' ? ' Batch' : ''} Usage - ${line.label}`,
      cost_type: 'tokens',
      context_window: '0-200k',
      model: reported(line.model),
      service_tier: line.tier,
      token_type: line.type,
    }));
  };

  if (req.method === 'GET' && path === '/v1/organizations/usage_report/messages') page(res, query, options, usage);
  else if (req.method === 'GET' && path === '/v1/organizations/cost_report') page(res, query, options, costs);
  else sendAnthropicError(res, 404, 'not_found_error', `Not found (${req.method} ${path})`);
  return true;
}
