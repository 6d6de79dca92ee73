/**
 * `GET /v1/tollgate/requests/{id}`: a client reads its own request's ledger row by the request id
 * its answer carried (`x-request-id`, the receipt), with the key that made it; another key's
 * request, or an unknown id, is 404 (docs/ledger-and-exports.md, "Receipts"). Free and unrecorded:
 * a read of what is already recorded.
 *
 * The row's cost is itemised from its stored tokens at the price table's prices for its model
 * (src/estimate/price-cost.ts, the billing's own parts). The items add up to the row's cost:
 * `unitemised_usd` is what the stored tokens at today's prices leave over — rounding (each part
 * is rounded down, the whole once up), a price changed since, or an upstream's own reported cost.
 */
import type { Context } from 'hono';
import type { AppEnv } from '../app-env.js';
import { TollgateError } from '../domain/errors.js';
import { formatMicrosFixed } from '../domain/money.js';
import { costParts, resolvePrice } from '../estimate/prices.js';
import type { PriceTable } from '../estimate/price-types.js';
import type { KeyCache } from '../keys/cache.js';
import type { LedgerEntry, RequestReads } from '../storage/request-reads.js';
import { clientRequestOf } from '../http/client-request.js';
import { authenticateHeaders } from './authenticate.js';

/** Where the route is mounted. */
export const REQUEST_LOOKUP_PATH = '/v1/tollgate/requests/:id';

interface RequestLookupDeps {
  readonly keys: KeyCache;
  readonly now: () => number;
  readonly requests: RequestReads;
  readonly prices: PriceTable;
}

/** Request ids are Tollgate's (`req_…`, src/request-id.ts); anything longer is not one. */
const MAX_ID_LENGTH = 64;

export async function lookUpRequest(c: Context<AppEnv>, deps: RequestLookupDeps): Promise<Response> {
  const caller = authenticateHeaders(clientRequestOf(c.req.raw, c.env).headers, deps.keys, deps.now());
  const id = c.req.param('id') ?? '';
  const entry = id.length > MAX_ID_LENGTH ? undefined : await deps.requests.entryOf(caller.key.id, id);
  if (entry === undefined) throw new TollgateError('not_found', `No request ${JSON.stringify(id.slice(0, MAX_ID_LENGTH))} was made with this key.`);
  return c.json(describeEntry(entry, deps.prices), 200, { 'x-request-id': c.get('requestId') });
}

const usd = (micros: number | null): string | null => (micros === null ? null : formatMicrosFixed(micros));
const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

/** The row as the route answers it (snake_case, dollars as exact 6-decimal strings). */
function describeEntry(entry: LedgerEntry, prices: PriceTable): Record<string, unknown> {
  return {
    object: 'tollgate.request',
    id: entry.requestId,
    created_at: iso(entry.createdAt),
    completed_at: iso(entry.completedAt),
    endpoint: entry.endpoint,
    model: entry.model,
    stream: entry.stream,
    status: entry.status,
    http_status: entry.httpStatus,
    reserved_usd: usd(entry.estCostMicros),
    cost_usd: usd(entry.costMicros),
    cost_items: entry.costMicros === null ? null : costItems(entry, entry.costMicros, prices),
    usage: {
      prompt_tokens: entry.promptTokens,
      cached_tokens: entry.cachedTokens,
      audio_prompt_tokens: entry.audioPromptTokens,
      completion_tokens: entry.completionTokens,
      reasoning_tokens: entry.reasoningTokens,
      audio_completion_tokens: entry.audioCompletionTokens,
      cache_write_5m_tokens: entry.cacheWrite5mTokens,
      cache_write_1h_tokens: entry.cacheWrite1hTokens,
    },
    service_tier: entry.serviceTier,
    usage_source: entry.usageSource,
    price_known: entry.priceKnown,
    latency_ms: entry.latencyMs,
    ttft_ms: entry.ttftMs,
    upstream: entry.upstream,
    upstream_request_id: entry.upstreamRequestId,
    error_code: entry.errorCode,
    end_user: entry.endUser,
  };
}

/** The row's cost in parts that add up to it exactly (see the header). */
function costItems(entry: LedgerEntry, costMicros: number, prices: PriceTable): Record<string, string> {
  const price = resolvePrice(entry.model, prices, { highestForUnknown: true });
  const completion = entry.completionTokens ?? 0;
  const reasoning = Math.min(entry.reasoningTokens ?? 0, completion);
  const usage = {
    promptTokens: entry.promptTokens ?? 0,
    cachedTokens: entry.cachedTokens ?? 0,
    audioPromptTokens: entry.audioPromptTokens ?? 0,
    completionTokens: completion,
    audioCompletionTokens: entry.audioCompletionTokens ?? 0,
    cacheWrite5mTokens: entry.cacheWrite5mTokens ?? 0,
    cacheWrite1hTokens: entry.cacheWrite1hTokens ?? 0,
    ...(entry.serviceTier === null ? {} : { serviceTier: entry.serviceTier }),
  };
  const all = costParts(usage, price);
  const visible = costParts({ ...usage, completionTokens: completion - reasoning }, price);
  const tools = entry.toolCostMicros ?? 0;
  const items = {
    input: all.input,
    cached_input: all.cachedInput,
    cache_writes: all.cacheWrites,
    audio_input: all.audioInput,
    output: visible.output,
    reasoning: all.output - visible.output,
    audio_output: all.audioOutput,
    tools,
  };
  const itemised = Object.values(items).reduce((sum, micros) => sum + micros, 0);
  const out: Record<string, string> = {};
  for (const [name, micros] of Object.entries(items)) out[`${name}_usd`] = formatMicrosFixed(micros);
  // Below zero only when today's prices are above those the row was billed at.
  out.unitemised_usd = formatMicrosFixed(costMicros - itemised);
  return out;
}
