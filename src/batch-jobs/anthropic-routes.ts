/**
 * Anthropic's Message Batches through the proxy (docs/batches.md), with the
 * same control as OpenAI's batches (openai-routes.ts):
 *
 * - `POST /v1/messages/batches` checks every item of `requests` and prices it
 *   at its worst case at the batch price (src/batches/), then admits the batch
 *   whole, all or none (admit-batch.ts), before the upstream sees it; the body
 *   goes upstream unchanged. One model per batch: its ledger row names one.
 * - `GET /v1/messages/batches/{id}`, `POST …/{id}/cancel`, `DELETE …/{id}`,
 *   `GET …/{id}/results` (streamed through), `GET /v1/messages/batches` (the
 *   key's own, newest first). The follower (follower.ts) settles each batch
 *   from its results once it has ended.
 *
 * A key sees only the batches it created: any other id is Anthropic's 404,
 * answered without asking the upstream. Errors are in Anthropic's shape (the
 * Messages dialect's renderer). `results_url` in answers points at Tollgate
 * (the client's Host), where the results are read through the same checks.
 * Without an Anthropic upstream every route is refused, as `/v1/messages` is.
 */
import { Hono, type Context } from 'hono';
import { Readable } from 'node:stream';
import { setImmediate as nextTurn } from 'node:timers/promises';
import type { AppEnv } from '../app-env.js';
import { ANTHROPIC_BATCH_TARGET, AnthropicBatchRequests, anthropicBatchSizeError } from '../batches/anthropic-batch.js';
import type { BatchError } from '../batches/batch-errors.js';
import { BatchCost, batchErrorOf, batchLineCost } from '../batches/batch-estimate.js';
import { renderAnthropicError } from '../dialects/anthropic-errors.js';
import { checkModelAllowed } from '../domain/caller.js';
import { TollgateError } from '../domain/errors.js';
import { EstimateInputError, estimateRequest } from '../estimate/index.js';
import { parseJsonObject } from '../http/body.js';
import { toClientHeaders } from '../http/headers.js';
import type { Logger } from '../logger.js';
import { authenticate } from '../pipeline/authenticate.js';
import type { RequestContext } from '../pipeline/context.js';
import { countRequest } from '../pipeline/count-request.js';
import type { PipelineDeps } from '../pipeline/deps.js';
import type { BatchJobRecord, BatchStore } from '../storage/batches.js';
import type { Upstream } from '../upstreams/pool.js';
import { admitBatch } from './admit-batch.js';
import type { BatchFollower } from './follower.js';
import { createUpstreamBatch, ok, readAnswer, relayAnswer, sendCall } from './upstream-calls.js';

export interface AnthropicBatchRouteDeps {
  readonly store: BatchStore;
  readonly follower: BatchFollower;
  /** The node whose ledger holds the rows of the batches created here. */
  readonly node: string;
  /** The most bytes one batch-create body may have (TOLLGATE_MAX_BATCH_FILE). */
  readonly maxBodyBytes: number;
  /** Where Message Batches go; absent = the routes refuse, as /v1/messages does. */
  readonly anthropic: Upstream | undefined;
  readonly logger: Logger;
}

const BATCHES = '/v1/messages/batches';
/** Jobs the store hands over per page (its `listJobs` limit). */
const STORE_PAGE = 100;
/** Batches the list asks the upstream about at once. */
const LIST_CONCURRENCY = 16;
/** Items estimated between two turns of the event loop. */
const ITEMS_PER_TURN = 256;

export function mountAnthropicBatchRoutes(routes: Hono<AppEnv>, deps: PipelineDeps, batches: AnthropicBatchRouteDeps): void {
  const sub = new Hono<AppEnv>();
  const upstream = batches.anthropic;
  if (upstream === undefined) {
    const refuse = (): never => {
      throw new TollgateError('upstream_unreachable', `No Anthropic upstream is configured for ${BATCHES}.`);
    };
    sub.all(BATCHES, refuse);
    sub.all(`${BATCHES}/*`, refuse);
  } else {
    sub.post(BATCHES, (c) => createBatch(c, deps, batches, upstream));
    sub.get(BATCHES, (c) => listBatches(c, deps, batches, upstream));
    sub.get(`${BATCHES}/:id/results`, (c) => batchResults(c, deps, batches, upstream));
    sub.get(`${BATCHES}/:id`, (c) => batchCall(c, deps, batches, upstream, 'GET', ''));
    sub.post(`${BATCHES}/:id/cancel`, (c) => batchCall(c, deps, batches, upstream, 'POST', '/cancel'));
    sub.delete(`${BATCHES}/:id`, (c) => batchCall(c, deps, batches, upstream, 'DELETE', ''));
  }
  sub.onError((error, c) => renderAnthropicError(error, c, batches.logger));
  routes.route('/', sub);
}

/** What a checked batch reserves: its one model and its worst case at the batch price. */
interface PricedBatch {
  readonly model: string;
  readonly requests: number;
  readonly promptTokens: number;
  readonly completionTokens: number;
  readonly costMicros: number;
}

async function createBatch(c: Context<AppEnv>, deps: PipelineDeps, batches: AnthropicBatchRouteDeps, upstream: Upstream): Promise<Response> {
  const request = authenticate(c, ANTHROPIC_BATCH_TARGET.endpoint, deps);
  const bytes = await request.client.readBody(batches.maxBodyBytes);
  const size = anthropicBatchSizeError(bytes.byteLength);
  if (size !== undefined) throw new TollgateError('body_too_large', size.message);
  // Parsed on the event loop (the worker reads single requests, not batches): bounded by maxBodyBytes.
  const body = parseJsonObject(bytes);
  const priced = await priceBatch(body, request, deps);
  checkModelAllowed(request.caller.policy, priced.model);
  const admitted = await admitBatch(
    {
      caller: request.caller,
      requestId: request.requestId,
      startedAt: request.startedAt,
      endpoint: ANTHROPIC_BATCH_TARGET.endpoint,
      model: priced.model,
      promptTokens: priced.promptTokens,
      completionTokens: priced.completionTokens,
      costMicros: priced.costMicros,
      headers: request.client.headers,
      url: request.url,
    },
    deps,
  );
  const { response, answer, id } = await createUpstreamBatch(request, deps, upstream, { method: 'POST', path: '/messages/batches', body: bytes }, admitted);
  // The upstream refused it (or answered what is no batch): nothing runs, nothing is billed.
  if (id === undefined) return relayAnswer(request, response, answer, admitted.headers);
  const created = readObject(answer);
  await batches.store.addJob({
    id,
    provider: 'anthropic',
    keyId: request.caller.key.id,
    tenantId: request.caller.key.tenantId,
    requestId: request.requestId,
    node: batches.node,
    createdAt: request.startedAt,
    inputFileId: null,
    model: priced.model,
    reservedMicros: priced.costMicros,
    status: typeof created?.processing_status === 'string' ? created.processing_status : 'in_progress',
    settledAt: null,
  });
  batches.follower.track(id, admitted.reservation);
  return relayAnswer(request, response, withTollgateResultsUrl(answer, request), admitted.headers);
}

/**
 * Checks every item of `requests` (anthropic-batch.ts) and estimates it at its worst case at the
 * batch price, as an upload's lines are (upload.ts); the first bad item refuses the batch with a
 * 400 that names it. Yields to the event loop every {@link ITEMS_PER_TURN} items.
 */
async function priceBatch(body: Record<string, unknown>, request: RequestContext, deps: PipelineDeps): Promise<PricedBatch> {
  const items = body['requests'];
  if (!Array.isArray(items)) {
    const message = items === undefined ? "Missing required parameter: 'requests'." : "Invalid type for 'requests': expected an array.";
    throw new TollgateError('invalid_request', message, { param: 'requests' });
  }
  const checks = new AnthropicBatchRequests();
  const cost = new BatchCost();
  let model: string | undefined;
  for (const [index, item] of items.entries()) {
    if (index % ITEMS_PER_TURN === ITEMS_PER_TURN - 1) {
      await nextTurn();
      if (request.client.left.aborted) throw new TollgateError('client_closed_request', 'The client closed the connection.');
    }
    const checked = checks.add(item);
    if (!checked.ok) throw batchError(checked.error);
    const entry = checked.value;
    model ??= entry.model;
    if (entry.model !== model) {
      throw new TollgateError(
        'invalid_value',
        `${entry.bodyParam}.model: Tollgate needs one model per batch (a batch is one ledger row, of one model): ` +
          `this request names "${clip(entry.model)}", the batch's first names "${clip(model)}". Send one batch per model.`,
        { param: `${entry.bodyParam}.model` },
      );
    }
    try {
      const estimate = await estimateRequest(entry.target.endpoint, entry.body, deps.estimate);
      cost.add(batchLineCost(estimate, entry.target.endpoint));
    } catch (error) {
      if (error instanceof EstimateInputError) throw batchError(batchErrorOf(error, entry));
      throw error;
    }
  }
  const empty = checks.finish();
  if (empty !== undefined || model === undefined) throw batchError(empty ?? { code: 'empty_file', message: 'No requests.', line: null, param: 'requests' });
  const total = cost.total;
  return { model, requests: total.requests, promptTokens: total.promptTokens, completionTokens: total.completionTokens, costMicros: total.microUsd };
}

async function batchCall(
  c: Context<AppEnv>,
  deps: PipelineDeps,
  batches: AnthropicBatchRouteDeps,
  upstream: Upstream,
  method: 'GET' | 'POST' | 'DELETE',
  suffix: string,
): Promise<Response> {
  const { request, job, limitHeaders } = await ownBatch(c, deps, batches);
  if (method === 'DELETE') await settleBeforeDelete(job, batches);
  const response = await sendCall(request, upstream, { method, path: `/messages/batches/${encodeURIComponent(job.id)}${suffix}` }, limitHeaders);
  const answer = await readAnswer(response, limitHeaders);
  if (!ok(response)) return relayAnswer(request, response, answer, limitHeaders);
  if (method === 'DELETE') await batches.store.deleteJob(job.id, deps.now());
  return relayAnswer(request, response, withTollgateResultsUrl(answer, request), limitHeaders);
}

/** The batch's results, streamed through as they come (they may be large). */
async function batchResults(c: Context<AppEnv>, deps: PipelineDeps, batches: AnthropicBatchRouteDeps, upstream: Upstream): Promise<Response> {
  const { request, job, limitHeaders } = await ownBatch(c, deps, batches);
  const response = await sendCall(request, upstream, { method: 'GET', path: `/messages/batches/${encodeURIComponent(job.id)}/results` }, limitHeaders);
  if (!ok(response)) return relayAnswer(request, response, await readAnswer(response, limitHeaders), limitHeaders);
  return new Response(Readable.toWeb(response.body) as ReadableStream, {
    status: response.status,
    headers: { ...toClientHeaders(response.headers, request.requestId, false, response.status), ...limitHeaders },
  });
}

/** The key's own batches, newest first, each as the upstream shows it now, in Anthropic's list shape. */
async function listBatches(c: Context<AppEnv>, deps: PipelineDeps, batches: AnthropicBatchRouteDeps, upstream: Upstream): Promise<Response> {
  const request = authenticate(c, ANTHROPIC_BATCH_TARGET.endpoint, deps);
  const limitHeaders = await countRequest(request, deps);
  const query = new URL(request.url).searchParams;
  const limit = Math.min(1000, Math.max(1, Number.parseInt(query.get('limit') ?? '20', 10) || 20));
  const beforeId = query.get('before_id');
  const keyId = request.caller.key.id;
  const { page, hasMore } =
    beforeId === null
      ? await jobsAfter(batches.store, keyId, query.get('after_id') ?? undefined, limit)
      : await jobsBefore(batches.store, keyId, beforeId, limit);
  const data: unknown[] = [];
  for (let start = 0; start < page.length; start += LIST_CONCURRENCY) {
    const looked = await Promise.all(
      page.slice(start, start + LIST_CONCURRENCY).map(async (job) => {
        const response = await sendCall(request, upstream, { method: 'GET', path: `/messages/batches/${encodeURIComponent(job.id)}` }, limitHeaders);
        const answer = await readAnswer(response, limitHeaders);
        const object = ok(response) ? readObject(withTollgateResultsUrl(answer, request)) : undefined;
        return object ?? { id: job.id, type: 'message_batch', processing_status: job.status };
      }),
    );
    data.push(...looked);
  }
  return c.json({ data, has_more: hasMore, first_id: page[0]?.id ?? null, last_id: page.at(-1)?.id ?? null }, 200, {
    ...limitHeaders,
    'x-request-id': request.requestId,
    'request-id': request.requestId,
  });
}

/** Up to `limit` of the key's batches older than `after` (from the newest without it), read from the store page by page. */
async function jobsAfter(store: BatchStore, keyId: string, after: string | undefined, limit: number): Promise<{ page: BatchJobRecord[]; hasMore: boolean }> {
  const jobs: BatchJobRecord[] = [];
  let cursor = after;
  // One more than asked for, to know whether there are more.
  while (jobs.length <= limit) {
    const wanted = Math.min(STORE_PAGE, limit + 1 - jobs.length);
    const next = await store.listJobs(keyId, 'anthropic', { after: cursor, limit: wanted });
    jobs.push(...next);
    if (next.length < wanted) break;
    cursor = next.at(-1)!.id;
  }
  return { page: jobs.slice(0, limit), hasMore: jobs.length > limit };
}

/**
 * Up to `limit` of the key's batches newer than `before` (the ones just above it): the store
 * pages only towards older jobs, so the key's jobs are read from the newest down to `before`,
 * keeping the last `limit + 1`. A `before` that is not one of the key's listed batches gives an
 * empty page.
 */
async function jobsBefore(store: BatchStore, keyId: string, before: string, limit: number): Promise<{ page: BatchJobRecord[]; hasMore: boolean }> {
  let newer: BatchJobRecord[] = [];
  let cursor: string | undefined;
  for (;;) {
    const next = await store.listJobs(keyId, 'anthropic', { after: cursor, limit: STORE_PAGE });
    const at = next.findIndex((job) => job.id === before);
    newer = [...newer, ...(at === -1 ? next : next.slice(0, at))].slice(-(limit + 1));
    if (at !== -1) break;
    if (next.length < STORE_PAGE) return { page: [], hasMore: false };
    cursor = next.at(-1)!.id;
  }
  return { page: newer.slice(-limit), hasMore: newer.length > limit };
}

/** Authenticates, counts the call as one request, and finds the key's own Anthropic batch (else Anthropic's 404, the upstream not asked). */
async function ownBatch(
  c: Context<AppEnv>,
  deps: PipelineDeps,
  batches: AnthropicBatchRouteDeps,
): Promise<{ request: RequestContext; job: BatchJobRecord; limitHeaders: Record<string, string> }> {
  const request = authenticate(c, ANTHROPIC_BATCH_TARGET.endpoint, deps);
  const id = c.req.param('id') ?? '';
  const limitHeaders = await countRequest(request, deps);
  const job = await batches.store.job(id);
  if (job?.keyId !== request.caller.key.id || job.provider !== 'anthropic') {
    throw new TollgateError('batch_not_found', `No Message Batch found with id ${id.slice(0, 200)}.`, { param: 'id', headers: limitHeaders });
  }
  return { request, job, limitHeaders };
}

/** A deleted batch's results are gone upstream: an ended one not settled yet is settled from them first. */
async function settleBeforeDelete(job: BatchJobRecord, batches: AnthropicBatchRouteDeps): Promise<void> {
  try {
    await batches.follower.followNow(job);
  } catch (error) {
    // Deleted anyway: the follower then settles it at its reservation, never under.
    batches.logger.warn({ err: error, batchId: job.id, requestId: job.requestId }, 'batch could not be settled before its deletion');
  }
}

/** A batch object with its `results_url` pointing at Tollgate (the client's own origin), not at the upstream. */
function withTollgateResultsUrl(answer: Buffer, request: RequestContext): Buffer {
  const object = readObject(answer);
  if (object === undefined || typeof object.results_url !== 'string' || typeof object.id !== 'string') return answer;
  const origin = new URL(request.url).origin;
  const rewritten = { ...object, results_url: `${origin}${BATCHES}/${encodeURIComponent(object.id)}/results` };
  return Buffer.from(JSON.stringify(rewritten), 'utf8');
}

function readObject(answer: Buffer): Record<string, unknown> | undefined {
  try {
    const parsed: unknown = JSON.parse(answer.toString('utf8'));
    return parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** A batch check's error, as the client is told it: the item's field first, Anthropic's shape around it. */
function batchError(error: BatchError): TollgateError {
  const where = error.param === null || error.message.includes(`'${error.param}'`) ? '' : `${error.param}: `;
  return new TollgateError('invalid_value', `${where}${error.message} [${error.code}]`, { param: error.param ?? 'requests' });
}

/** A client's string, shortened for an error message. */
function clip(text: string): string {
  return text.length <= 80 ? text : `${text.slice(0, 77)}...`;
}
