/**
 * A fake OpenAI API on a free loopback port. It answers like the real one
 * (JSON with a `usage` block, SSE chunks with an optional final usage chunk,
 * OpenAI-shaped errors, embeddings in float or base64, models) and it can
 * misbehave on request: slow streams, streams that break or hang halfway,
 * error events inside a stream, garbage SSE, 4xx/5xx/429, slow headers.
 *
 * It also keeps a record of every request and what it "billed", so tests can
 * hold Tollgate's ledger against it. `tollgate demo` runs it too. It bills as
 * the API does when a client leaves: a JSON answer is finished and billed in
 * full; a stream stops and bills the prompt, the reasoning generated (hidden,
 * and generated before the first visible token) and the tokens sent.

 *
 * Behaviour is chosen per request with the header
 * `x-fake-scenario: key=value,key=value` (or per server with `setScenario`):
 *   status=429|500|…   answer with that error (errorCode=… to set its code)
 *   delay=MS           pause between stream chunks (and before a JSON answer)
 *   headersDelay=MS    pause before sending anything
 *   breakAfter=N       destroy the connection after N content chunks
 *   breakAtStart=1     destroy a stream's connection right after its headers, before any event
 *   hangAfter=N        stop sending (connection stays open) after N content chunks
 *   errorAfter=N       send an error event after N content chunks, then end
 *   garbage=1          interleave lines that are not valid SSE/JSON
 *   words=N            length of the answer in words (default 12)
 *   cached=N           report N prompt tokens as cached
 *   reasoning=N        think N hidden reasoning tokens before answering (within the output limit)
 *   reasoningMs=MS     the reasoning takes this long (default 0); a stream's client that leaves
 *                      meanwhile still pays for what was thought so far
 *   ignoreLimit=1      ignore max_completion_tokens / max_tokens / max_output_tokens (a misbehaving upstream)
 *   jobMs=MS           a background Response finishes this long after it was created (default 50)
 *   jobEnd=failed|incomplete   how a background Response ends (default completed)
 *   audioIn=N          add N audio tokens to the prompt (prompt_tokens_details.audio_tokens)
 *   audioOut=N         add N audio tokens to the completion (completion_tokens_details.audio_tokens)
 *   tier=T             report service_tier T (default: the tier asked for, else "default")
 *   retryAfter=S       with status=429|503: the Retry-After header's seconds (429 default 1)
 *   webSearch=N, fileSearch=N, codeInterpreter=N, images=N
 *                      Responses only: that many built-in tool calls in `output`
 *                      (codeInterpreter: N calls in N distinct containers)
 *   fileTokens=N, imageSize=WxH, toolTokens=N
 *                      input the request names but does not carry (files, remote images, hosted
 *                      tools' results), billed as input: see unseen-input.ts
 *
 * `options.kind` makes it Azure OpenAI (api-key header, deployment URLs with
 * api-version) or OpenRouter (usage.cost): see provider-kinds.ts.
 * With `billing` set it also serves the organization Usage and Costs reports
 * built from what it billed (billing-reports.ts), and Anthropic's Admin API
 * Usage and Cost reports from what its Anthropic dialect billed
 * (anthropic-billing-reports.ts).
 *
 * Responses are stored and have their lifecycle (retrieve, cancel, delete,
 * input items, background jobs), and a `previous_response_id` bills the
 * stored history again as input: see stored-responses.ts. Anthropic's
 * Messages API (`/v1/messages`, `/v1/messages/count_tokens`) is answered in
 * its own dialect: see anthropic.ts (the server's origin is its base URL).
 * Like the real APIs, it answers a wrong key with 401 (`invalid_api_key`;
 * Anthropic's `authentication_error`) and a path it does not serve with 404
 * `unknown_url`; Tollgate's start-up checks (`x-tollgate-probe`) are kept in
 * `probes`, apart from `requests`.
 *
 * Batches run as the providers run them: OpenAI's Files and Batch APIs
 * (files.ts, openai-batches.ts) and Anthropic's Message Batches
 * (anthropic-batches.ts). Each processed line is answered as its endpoint
 * would answer it and becomes a record of its own in `requests`, its `billed`
 * marked with `batchId` and `customId` (half price). The create request's
 * scenario drives the batch (batch-run.ts):
 *   batchMs=MS         how long the batch takes (default 100): a tenth validating, the lines
 *                      spread over the next eight tenths, a tenth finalizing
 *   batchEnd=completed|failed|expired|cancelled   how it ends (default completed; OpenAI
 *                      failed: `token_limit_exceeded` in `errors`; Anthropic: every request errored)
 *   batchStopAfter=N   with batchEnd=expired|cancelled: lines processed first (default half)
 *   batchExpireAfter=N short for batchEnd=expired,batchStopAfter=N
 *   batchHoldAfter=N   after N lines it waits, in progress, for a cancel
 *   batchFail=N        the first N lines are answered with a 400 error (billed nothing)
 * `options.batchLimits` bounds what is kept (files, batches, bytes of a file).
 * Lines run on the fake's timers: `settled()` does not wait for them; poll the batch.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import { modelObject, responseObject } from './openai-objects.js';
import { finishedOpenAIAnswer, planOpenAIAnswer } from './openai-answer.js';
import { streamAnswer } from './openai-stream.js';
import { ERROR_TYPES, sendEmbeddings, sendError, sendJson } from './respond.js';
import { answerAnthropicModels, handleAnthropic, isAnthropicPath, sendAnthropicError } from './anthropic.js';
import { StoredResponses } from './stored-responses.js';
import { FileStore, isMultipart } from './files.js';
import { OpenAIBatches } from './openai-batches.js';
import { AnthropicBatches } from './anthropic-batches.js';
import { fakeKind } from './provider-kinds.js';
import { handleBillingReport } from './billing-reports.js';
import { handleAnthropicBillingReport } from './anthropic-billing-reports.js';
import type { FakeUpstream, FakeUpstreamOptions, RecordedRequest } from './types.js';
import { MODELS, num, parseScenario, sleep, type Scenario } from './scenario.js';

export { FAKE_WORDS } from './scenario.js';

export type { BillingDeviations, BillingReportOptions, FakeBilling, FakeUpstream, FakeUpstreamOptions, RecordedRequest } from './types.js';

/** Starts the fake upstream. */
export async function startFakeUpstream(options: FakeUpstreamOptions = {}): Promise<FakeUpstream> {
  const requests: RecordedRequest[] = [];
  const probes: RecordedRequest[] = [];
  /** Where a request's record goes: Tollgate's upstream checks apart from the requests it serves. */
  const recordsOf = (req: IncomingMessage): RecordedRequest[] => (req.headers['x-tollgate-probe'] === undefined ? requests : probes);
  const maxRecords = options.maxRecords ?? Infinity;
  if (!(maxRecords >= 0)) throw new RangeError(`maxRecords must be 0 or more, not ${maxRecords}`);
  /** Keeps a record, dropping the oldest past `maxRecords` (shift on a V8 array trims its start in place). */
  const keep = (records: RecordedRequest[], record: RecordedRequest): void => {
    if (maxRecords === 0) return;
    records.push(record);
    while (records.length > maxRecords) records.shift();
  };
  const pending = new Set<Promise<void>>();
  let defaultScenario: Scenario = {};
  const stored = new StoredResponses();
  // Batches: their lines' records go to `requests` as they are processed.
  const files = new FileStore(options.batchLimits, options.now);
  const openAIBatches = new OpenAIBatches(files, (line) => keep(requests, line), options.batchLimits, options.now);
  const anthropicBatches = new AnthropicBatches((line) => keep(requests, line), options.batchLimits, options.now);
  const kind = fakeKind(options);

  const server: Server = createServer((req, res) => {
    const done = handle(req, res).catch(() => {
      if (!res.headersSent) res.writeHead(500);
      res.destroy();
    });
    pending.add(done);
    void done.finally(() => pending.delete(done));
  });
  server.keepAliveTimeout = 60_000;

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const rawBytes = Buffer.concat(chunks);
    const raw = rawBytes.toString('utf8');
    const urlPath = (req.url ?? '/').split('?')[0]!;
    if (isAnthropicPath(urlPath, req.headers)) return handleAnthropicRequest(req, res, raw);
    // Anthropic's Admin API reports (admin key): not requests the fake bills or records.
    if (handleAnthropicBillingReport(req, urlPath, res, requests, options.billing)) return;
    let body: Record<string, unknown> = {};
    // An upload (multipart, files.ts) is not JSON.
    if (raw !== '' && !isMultipart(req.headers)) {
      try {
        body = JSON.parse(raw) as Record<string, unknown>;
      } catch {
        return sendError(
          res,
          400,
          { type: 'invalid_request_error', code: 'invalid_json', message: 'We could not parse the JSON body of your request.' },
          undefined,
        );
      }
    }
    const targeted = kind.target(req);
    const path = targeted.ok ? targeted.target.path : (req.url ?? '/').split('?')[0]!;
    const deployment = targeted.ok ? targeted.target.deployment : undefined;
    // Organization usage and cost reports (admin key): not requests the fake bills or records.
    if (handleBillingReport(req, path, res, requests, options.billing)) return;
    const scenario: Scenario = req.headers['x-fake-scenario'] !== undefined ? parseScenario(String(req.headers['x-fake-scenario'])) : defaultScenario;
    const record: RecordedRequest = {
      id: `req_${randomBytes(12).toString('hex')}`,
      method: req.method ?? 'GET',
      path,
      url: req.url ?? '/',
      headers: req.headers,
      body,
      rawBody: raw,
      startedAt: (options.now ?? Date.now)(),
      status: 0,
      billed: { promptTokens: 0, cachedTokens: 0, completionTokens: 0, reasoningTokens: 0 },
      chunksSent: 0,
      closedEarly: false,
      finished: false,
    };
    keep(recordsOf(req), record);
    res.on('close', () => {
      if (!record.finished) record.closedEarly = true;
    });

    if (!kind.authorized(req)) return sendError(res, 401, ERROR_TYPES[401]!, record);
    if (!targeted.ok) return sendError(res, targeted.status, { type: 'invalid_request_error', code: targeted.code, message: targeted.message }, record);
    const status = num(scenario, 'status');
    if (status !== undefined && status >= 400) {
      await sleep(num(scenario, 'headersDelay') ?? 0);
      const base = ERROR_TYPES[status] ?? { type: 'server_error', code: 'server_error', message: `Fake error ${status}.` };
      return sendError(res, status, { ...base, code: scenario.errorCode ?? base.code }, record, scenario.retryAfter);
    }

    if (stored.handle(req.method ?? 'GET', path, new URL(req.url ?? '/', 'http://fake').searchParams, res, record)) return;
    // Files and batches: files.ts, openai-batches.ts.
    if (files.handle(req, path, rawBytes, res, record) || openAIBatches.handle(req, path, body, scenario, res, record)) return;
    const route = `${req.method} ${path}`;
    if (route === 'GET /v1/models') {
      return sendJson(res, 200, { object: 'list', data: MODELS.map((id) => modelObject(id)) }, record);
    }
    if (req.method === 'GET' && path.startsWith('/v1/models/')) {
      const id = decodeURIComponent(path.slice('/v1/models/'.length));
      return MODELS.includes(id) ? sendJson(res, 200, modelObject(id), record) : sendError(res, 404, ERROR_TYPES[404]!, record);
    }
    const endpoint =
      route === 'POST /v1/chat/completions'
        ? 'chat'
        : route === 'POST /v1/completions'
          ? 'completions'
          : route === 'POST /v1/embeddings'
            ? 'embeddings'
            : route === 'POST /v1/responses'
              ? 'responses'
              : undefined;
    if (endpoint === undefined) {
      return sendError(res, 404, { type: 'invalid_request_error', code: 'unknown_url', message: `Invalid URL (${route})` }, record);
    }
    // A deployment URL names the model in its path (Azure ignores the body's).
    const model = deployment ?? (typeof body.model === 'string' ? body.model : '');
    if (model === '') {
      return sendError(res, 400, { type: 'invalid_request_error', code: 'missing_model', message: 'you must provide a model parameter' }, record);
    }
    // Stored history and referenced items bill as input; an id the fake does not hold is a 404.
    const storedInput = endpoint === 'responses' ? stored.storedInput(body, model) : { ok: true as const, tokens: 0 };
    if (!storedInput.ok) return sendJson(res, 404, storedInput.error, record);
    // Accepted: the prompt is processed (and billed) from here on, even if the
    // client goes away before the answer starts, as with the real API.
    const plan = planOpenAIAnswer(endpoint, body, model, scenario, storedInput.tokens);
    const { extras, promptTokens, cachedTokens, n, reasoning, words, answer, finishReason } = plan;
    record.billed = { promptTokens, cachedTokens, completionTokens: 0, reasoningTokens: 0 };

    await sleep(num(scenario, 'headersDelay') ?? 0);
    // A stream whose client left before its first byte is not generated; any other answer is
    // finished and billed whether or not its client stays, as the API does.
    if (res.destroyed && body.stream === true) return;

    if (endpoint === 'embeddings') return sendEmbeddings(res, body, model, promptTokens, record);

    if (endpoint === 'responses') {
      const id = `resp_${randomBytes(8).toString('hex')}`;
      const background = body.background === true;
      const job = { model, answer, promptTokens, cachedTokens, reasoning };
      if (body.stream === true) {
        const createdStatus = background ? 'queued' : 'in_progress';
        stored.keep(body, { ...responseObject(model, '', createdStatus, null, id), background }, record);
        const streamPlan = {
          endpoint: 'responses' as const,
          body,
          model,
          words,
          n,
          scenario,
          reasoning,
          promptTokens,
          cachedTokens,
          finishReason,
          responseId: id,
          createdStatus,
          extras,
        };
        await streamAnswer(res, streamPlan, record);
        // A background job runs on when its client goes away; a stream that reached its end finished it.
        if (record.finished) stored.finish(id, 'completed', job);
        else if (background) stored.run(id, scenario, job);
        return;
      }
      if (background) {
        const queued = { ...responseObject(model, '', 'queued', null, id), background: true };
        stored.keep(body, queued, record);
        stored.run(id, scenario, job);
        return sendJson(res, 200, queued, record);
      }
    }
    if (body.stream === true) {
      return streamAnswer(
        res,
        { endpoint, body, model, words, n, scenario, reasoning, promptTokens, cachedTokens, finishReason, extras, cost: kind.cost },
        record,
      );
    }
    await sleep((reasoning > 0 ? (num(scenario, 'reasoningMs') ?? 0) : 0) + (num(scenario, 'delay') ?? 0));
    const finished = finishedOpenAIAnswer(endpoint, body, model, plan, kind.cost);
    record.billed = finished.billed;
    if (endpoint === 'responses') stored.keep(body, finished.payload, record);
    return sendJson(res, 200, finished.payload, record);
  }

  /** Anthropic's dialect (anthropic.ts): its own auth, errors and events. */
  async function handleAnthropicRequest(req: IncomingMessage, res: ServerResponse, raw: string): Promise<void> {
    const scenario: Scenario = req.headers['x-fake-scenario'] !== undefined ? parseScenario(String(req.headers['x-fake-scenario'])) : defaultScenario;
    const record: RecordedRequest = {
      id: `req_${randomBytes(12).toString('hex')}`,
      method: req.method ?? 'GET',
      path: (req.url ?? '/').split('?')[0]!,
      headers: req.headers,
      body: {},
      startedAt: Date.now(),
      status: 0,
      billed: { promptTokens: 0, cachedTokens: 0, completionTokens: 0, reasoningTokens: 0 },
      chunksSent: 0,
      closedEarly: false,
      finished: false,
    };
    keep(recordsOf(req), record);
    res.on('close', () => {
      if (!record.finished) record.closedEarly = true;
    });
    if (req.method === 'GET' && record.path === '/v1/models') return answerAnthropicModels(req, res, record, options.apiKey);
    if (record.path.startsWith('/v1/messages/batches')) return anthropicBatches.handle(req, res, raw, scenario, record, options.apiKey);
    if (req.method !== 'POST') return sendAnthropicError(res, 405, record, `Method ${req.method} not allowed.`);
    return handleAnthropic(req, res, raw, scenario, record, options.apiKey);
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const host = options.host ?? '127.0.0.1';

  return {
    url: `http://${host}:${port}/v1`,
    port,
    requests,
    probes,
    setScenario(scenario) {
      defaultScenario = parseScenario(scenario);
    },
    async settled() {
      while (pending.size > 0) await Promise.allSettled([...pending]);
    },
    async close() {
      stored.close();
      openAIBatches.close();
      anthropicBatches.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
