/**
 * The fake's Anthropic Message Batches API: `POST /v1/messages/batches`
 * (`{requests: [{custom_id, params}]}`), `GET /v1/messages/batches` (newest
 * first, `limit` / `after_id` / `before_id`), `GET …/{id}`, `POST …/{id}/cancel`,
 * `GET …/{id}/results` (JSONL, once ended) and `DELETE …/{id}` (once ended:
 * `{id, type: "message_batch_deleted"}`), authenticated as the Messages API is.
 *
 * A batch is `in_progress` from its creation, `canceling` once cancelled,
 * `ended` at the end; its timing and end come from the create request's
 * scenario (batch-run.ts). A request is answered as `POST /v1/messages` would
 * answer its params (anthropic.ts) — `succeeded` with the message, or
 * `errored` (invalid params, `batchFail`) — and requests never processed are
 * `expired` or `canceled`. `batchEnd=failed` errors every request with an
 * `api_error`. The create request is refused (400) for an empty list, a
 * malformed or duplicate `custom_id`; a body over `maxFileBytes` is a 413.
 *
 * A succeeded request is a record of its own in `requests` (path
 * `/v1/messages`, body its params) whose `billed` carries `batchId` and
 * `customId`: priced at half the synchronous rate. An errored request's
 * record (status 400, or 500 for `api_error`) bills nothing; unprocessed
 * requests have none.
 */
import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { finishedMessage, invalidMessageBody, planAnthropicMessage, sendAnthropicError, sendAnthropicJson } from './anthropic.js';
import { batchTiming, LineRunner, type BatchTiming } from './batch-run.js';
import { num, type Scenario } from './scenario.js';
import type { BatchLimits, RecordedRequest } from './types.js';

interface BatchRequest {
  readonly customId: string;
  readonly params: Record<string, unknown>;
}

interface Counts {
  processing: number;
  succeeded: number;
  errored: number;
  canceled: number;
  expired: number;
}

interface MessageBatch {
  object: Record<string, unknown>;
  readonly requests: BatchRequest[];
  readonly results: string[];
  readonly counts: Counts;
  readonly scenario: Scenario;
  readonly timing: BatchTiming;
  readonly headers: IncomingMessage['headers'];
  readonly runner: LineRunner;
  readonly origin: string;
}

const CUSTOM_ID = /^[a-zA-Z0-9_-]{1,64}$/;

/** The create body's requests, or why it is refused. */
export function readBatchRequests(body: unknown): { ok: true; requests: BatchRequest[] } | { ok: false; message: string } {
  const list = (body as { requests?: unknown } | null)?.requests;
  if (!Array.isArray(list) || list.length === 0) return { ok: false, message: 'requests: List should have at least 1 item after validation, not 0' };
  const requests: BatchRequest[] = [];
  const seen = new Set<string>();
  for (const [index, item] of list.entries()) {
    const { custom_id: customId, params } = (item ?? {}) as { custom_id?: unknown; params?: unknown };
    if (typeof customId !== 'string' || !CUSTOM_ID.test(customId)) {
      return { ok: false, message: `requests.${index}.custom_id: String should match pattern '^[a-zA-Z0-9_-]{1,64}$'` };
    }
    if (params === null || typeof params !== 'object' || Array.isArray(params)) return { ok: false, message: `requests.${index}.params: Field required` };
    if (seen.has(customId)) return { ok: false, message: `Duplicate custom_id: '${customId}'. Each request in a batch must have a unique custom_id.` };
    seen.add(customId);
    requests.push({ customId, params: params as Record<string, unknown> });
  }
  return { ok: true, requests };
}

export class AnthropicBatches {
  private readonly batches = new Map<string, MessageBatch>();
  private readonly maxBatches: number;
  private readonly maxBytes: number;

  constructor(
    /** Where a processed request's record goes (the fake's `requests`). */
    private readonly recordLine: (record: RecordedRequest) => void,
    limits: BatchLimits = {},
    private readonly now: () => number = Date.now,
  ) {
    this.maxBatches = limits.maxBatches ?? 1000;
    this.maxBytes = limits.maxFileBytes ?? 256 * 1024 * 1024;
  }

  /** Answers a Message Batches call (the caller checked the path starts with /v1/messages/batches). */
  handle(req: IncomingMessage, res: ServerResponse, raw: string, scenario: Scenario, record: RecordedRequest, apiKey: string | undefined): void {
    if (apiKey !== undefined && req.headers['x-api-key'] !== apiKey) return sendAnthropicError(res, 401, record);
    if (typeof req.headers['anthropic-version'] !== 'string') return sendAnthropicError(res, 400, record, 'anthropic-version: header is required');
    // The shared `status=` setting answers with that error, as on /v1/messages.
    const status = num(scenario, 'status');
    if (status !== undefined && status >= 400) return sendAnthropicError(res, status, record);
    const method = req.method ?? 'GET';
    const url = new URL(req.url ?? '/', 'http://fake');
    if (record.path === '/v1/messages/batches') {
      if (method === 'POST') return this.create(req, res, raw, scenario, record);
      if (method === 'GET') return sendAnthropicJson(res, 200, this.list(url.searchParams), record);
      return sendAnthropicError(res, 405, record, `Method ${method} not allowed.`);
    }
    const match = /^\/v1\/messages\/batches\/([^/]+)(\/cancel|\/results)?$/.exec(record.path);
    const route = `${method} ${match?.[2] ?? ''}`;
    if (match === null || !['GET ', 'DELETE ', 'POST /cancel', 'GET /results'].includes(route)) return sendAnthropicError(res, 404, record);
    const id = decodeURIComponent(match[1]!);
    const batch = this.batches.get(id);
    if (batch === undefined) return sendAnthropicError(res, 404, record, `Message Batch ${id} not found.`);
    const ended = batch.object.processing_status === 'ended';
    if (route === 'GET ') return sendAnthropicJson(res, 200, batch.object, record);
    if (route === 'POST /cancel') {
      if (batch.object.processing_status === 'in_progress') this.beginCancel(batch);
      return sendAnthropicJson(res, 200, batch.object, record);
    }
    if (route === 'DELETE ') {
      if (!ended) return sendAnthropicError(res, 400, record, `Message Batch ${id} cannot be deleted while it is processing; cancel it first.`);
      this.batches.delete(id);
      return sendAnthropicJson(res, 200, { id, type: 'message_batch_deleted' }, record);
    }
    if (!ended) return sendAnthropicError(res, 400, record, `Message Batch ${id} has not ended; its results are available once it has.`);
    const text = batch.results.map((line) => `${line}\n`).join('');
    record.status = 200;
    record.finished = true;
    res.writeHead(200, { 'content-type': 'application/binary', 'content-length': Buffer.byteLength(text), 'request-id': record.id });
    res.end(text);
  }

  /** Newest first; `after_id` pages on to older batches, `before_id` back to newer ones. */
  private list(query: URLSearchParams): Record<string, unknown> {
    const all = [...this.batches.values()].map((batch) => batch.object).reverse();
    const limit = Math.min(1000, Math.max(1, Number(query.get('limit') ?? 20) || 20));
    const afterId = query.get('after_id');
    const beforeId = query.get('before_id');
    let data: Record<string, unknown>[];
    let hasMore: boolean;
    if (beforeId !== null) {
      const end = Math.max(
        0,
        all.findIndex((batch) => batch.id === beforeId),
      );
      data = all.slice(Math.max(0, end - limit), end);
      hasMore = end - limit > 0;
    } else {
      const start = afterId === null ? 0 : all.findIndex((batch) => batch.id === afterId) + 1;
      data = all.slice(start, start + limit);
      hasMore = start + limit < all.length;
    }
    return { data, has_more: hasMore, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null };
  }

  private create(req: IncomingMessage, res: ServerResponse, raw: string, scenario: Scenario, record: RecordedRequest): void {
    if (Buffer.byteLength(raw) > this.maxBytes) return sendAnthropicError(res, 413, record);
    let body: unknown;
    try {
      body = JSON.parse(raw);
    } catch {
      return sendAnthropicError(res, 400, record, 'There was an error parsing the body of your request.');
    }
    (record as { body: unknown }).body = body;
    const read = readBatchRequests(body);
    if (!read.ok) return sendAnthropicError(res, 400, record, read.message);
    const created = this.now();
    const id = `msgbatch_${randomBytes(12).toString('hex')}`;
    const counts: Counts = { processing: read.requests.length, succeeded: 0, errored: 0, canceled: 0, expired: 0 };
    const timing = batchTiming(scenario, read.requests.length);
    const batch: MessageBatch = {
      object: {
        id,
        type: 'message_batch',
        processing_status: 'in_progress',
        request_counts: { ...counts },
        ended_at: null,
        created_at: new Date(created).toISOString(),
        expires_at: new Date(created + 86_400_000).toISOString(),
        archived_at: null,
        cancel_initiated_at: null,
        results_url: null,
      },
      requests: read.requests,
      results: [],
      counts,
      scenario,
      timing,
      headers: req.headers,
      origin: `http://${req.headers.host ?? '127.0.0.1'}`,
      runner: new LineRunner(read.requests.length, timing, {
        line: (index) => this.processRequest(batch, index),
        done: () => this.end(batch, 'expired'),
        stopped: (end) => (end === 'expired' ? this.end(batch, 'expired') : this.beginCancel(batch)),
      }),
    };
    if (this.batches.size >= this.maxBatches) {
      const oldest = this.batches.keys().next().value as string;
      this.batches.get(oldest)?.runner.stop();
      this.batches.delete(oldest);
    }
    this.batches.set(id, batch);
    batch.runner.start(timing.validateMs);
    sendAnthropicJson(res, 200, batch.object, record);
  }

  /** Answers one request as `POST /v1/messages` would, billed at the batch rate. */
  private processRequest(batch: MessageBatch, index: number): void {
    const { customId, params } = batch.requests[index]!;
    const lineRecord = {
      id: `req_${randomBytes(12).toString('hex')}`,
      method: 'POST',
      path: '/v1/messages',
      url: '/v1/messages',
      headers: batch.headers,
      body: params,
      startedAt: this.now(),
      chunksSent: 0,
      closedEarly: false,
      finished: true,
    };
    batch.counts.processing -= 1;
    const invalid = invalidMessageBody(params);
    const failing = index < batch.timing.failFirst || batch.timing.end === 'failed' || invalid !== undefined || params.stream === true;
    if (failing) {
      const error =
        batch.timing.end === 'failed' && invalid === undefined && index >= batch.timing.failFirst
          ? { type: 'api_error', message: 'Internal server error' }
          : {
              type: 'invalid_request_error',
              message: invalid ?? (params.stream === true ? 'stream: batch requests cannot stream' : 'The fake upstream was told to reject this request.'),
            };
      batch.results.push(JSON.stringify({ custom_id: customId, result: { type: 'errored', error: { type: 'error', error } } }));
      this.recordLine({
        ...lineRecord,
        status: error.type === 'api_error' ? 500 : 400,
        billed: { promptTokens: 0, cachedTokens: 0, completionTokens: 0, reasoningTokens: 0, batchId: batch.object.id as string, customId },
      });
      batch.counts.errored += 1;
    } else {
      const { plan, billPrompt } = planAnthropicMessage(params, params.model as string, batch.scenario);
      const { message, billed } = finishedMessage(plan, billPrompt);
      // Anthropic reports a batch message's tier as `batch`.
      const usage = { ...(message.usage as Record<string, unknown>), service_tier: 'batch' };
      batch.results.push(JSON.stringify({ custom_id: customId, result: { type: 'succeeded', message: { ...message, usage } } }));
      this.recordLine({ ...lineRecord, status: 200, billed: { ...billed, batchId: batch.object.id as string, customId } });
      batch.counts.succeeded += 1;
    }
    batch.object = { ...batch.object, request_counts: { ...batch.counts } };
  }

  private beginCancel(batch: MessageBatch): void {
    batch.runner.stop();
    batch.object = { ...batch.object, processing_status: 'canceling', cancel_initiated_at: new Date(this.now()).toISOString() };
    batch.runner.after(batch.timing.finalizeMs, () => this.end(batch, 'canceled'));
  }

  /** Ends a batch: requests never processed are `expired` or `canceled`; the results are ready. */
  private end(batch: MessageBatch, unprocessed: 'expired' | 'canceled'): void {
    for (const { customId } of batch.requests.slice(batch.runner.processed)) {
      batch.results.push(JSON.stringify({ custom_id: customId, result: { type: unprocessed } }));
      batch.counts[unprocessed] += 1;
    }
    batch.counts.processing = 0;
    batch.requests.length = 0;
    const id = batch.object.id as string;
    batch.object = {
      ...batch.object,
      processing_status: 'ended',
      ended_at: new Date(this.now()).toISOString(),
      request_counts: { ...batch.counts },
      results_url: `${batch.origin}/v1/messages/batches/${id}/results`,
    };
  }

  /** Stops every batch (the server is closing). */
  close(): void {
    for (const batch of this.batches.values()) batch.runner.stop();
  }
}
