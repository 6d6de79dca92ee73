/**
 * OpenAI's Files and Batch APIs through the proxy (docs/batches.md):
 *
 * - `POST /v1/files` (`purpose=batch`) streams the upload to the upstream,
 *   checking and pricing every line on the way (upload.ts);
 *   `GET /v1/files/{id}`, `GET /v1/files/{id}/content`, `DELETE /v1/files/{id}`.
 * - `POST /v1/batches` admits the batch whole at its worst case, all or none
 *   (admit-batch.ts), before the upstream sees it; `GET /v1/batches/{id}`,
 *   `POST /v1/batches/{id}/cancel`, `GET /v1/batches`. The follower
 *   (follower.ts) settles each batch from its output file once it ends.
 *
 * A key sees only the files it uploaded (and its batches' output and error
 * files) and the batches it created: any other id is the API's own 404,
 * answered without asking the upstream. Each call is one request of the key;
 * only creating a batch costs tokens and dollars.
 */
import type { Context, Hono } from 'hono';
import { Readable } from 'node:stream';
import type { AppEnv } from '../app-env.js';
import { checkModelAllowed } from '../domain/caller.js';
import { TollgateError } from '../domain/errors.js';
import type { Endpoint } from '../endpoints.js';
import { toClientHeaders } from '../http/headers.js';
import { authenticate } from '../pipeline/authenticate.js';
import type { RequestContext } from '../pipeline/context.js';
import { countRequest } from '../pipeline/count-request.js';
import type { PipelineDeps } from '../pipeline/deps.js';
import type { BatchFileRecord, BatchStore } from '../storage/batches.js';
import type { UpstreamResponse } from '../upstreams/pool.js';
import { openAiBatchTarget } from '../batches/batch-lines.js';
import { admitBatch } from './admit-batch.js';
import type { BatchFollower } from './follower.js';
import { streamUpload } from './upload.js';
import {
  createUpstreamBatch,
  ok,
  readAnswer,
  relayAnswer,
  sendCall,
  stringField,
  upstreamHeadersOf,
  withLimitHeaders,
  type UpstreamCall,
} from './upstream-calls.js';

export interface BatchRouteDeps {
  readonly store: BatchStore;
  readonly follower: BatchFollower;
  /** The node whose ledger holds the rows of the batches created here. */
  readonly node: string;
  /** The most bytes one uploaded file (its multipart body) may have. */
  readonly maxFileBytes: number;
}

/** Files of a batch answer the key may read: its output and error files. */
const RESULT_FILES = ['output_file_id', 'error_file_id'] as const;

export function mountBatchRoutes(routes: Hono<AppEnv>, deps: PipelineDeps, batches: BatchRouteDeps): void {
  routes.post('/v1/files', (c) => uploadFile(c, deps, batches));
  routes.get('/v1/files/:id/content', (c) => fileCall(c, deps, batches, 'GET', '/content'));
  routes.get('/v1/files/:id', (c) => fileCall(c, deps, batches, 'GET', ''));
  routes.delete('/v1/files/:id', (c) => fileCall(c, deps, batches, 'DELETE', ''));
  routes.post('/v1/batches', (c) => createBatch(c, deps, batches));
  routes.get('/v1/batches', (c) => listBatches(c, deps, batches));
  routes.get('/v1/batches/:id', (c) => batchCall(c, deps, batches, 'GET', ''));
  routes.post('/v1/batches/:id/cancel', (c) => batchCall(c, deps, batches, 'POST', '/cancel'));
}

async function uploadFile(c: Context<AppEnv>, deps: PipelineDeps, batches: BatchRouteDeps): Promise<Response> {
  const request = authenticate(c, 'chat', deps);
  const limitHeaders = await countRequest(request, deps);
  const { response, file } = await withLimitHeaders(limitHeaders, () =>
    streamUpload({
      headers: request.client.headers,
      body: request.client.stream(),
      maxBytes: batches.maxFileBytes,
      maxLineBytes: deps.maxBodyBytes,
      estimate: deps.estimate,
      upstream: deps.upstream,
      upstreamHeaders: upstreamHeadersOf(request, false),
      signal: request.client.abort.signal,
      owner: request.caller.key.id,
    }),
  );
  const answer = await readAnswer(response, limitHeaders);
  if (ok(response)) {
    const id = stringField(answer, 'id');
    if (id !== undefined) await batches.store.addFile({ id, keyId: request.caller.key.id, createdAt: request.startedAt, ...file });
  }
  return relayAnswer(request, response, answer, limitHeaders);
}

async function fileCall(c: Context<AppEnv>, deps: PipelineDeps, batches: BatchRouteDeps, method: 'GET' | 'DELETE', suffix: string): Promise<Response> {
  const request = authenticate(c, 'chat', deps);
  const id = c.req.param('id') ?? '';
  const limitHeaders = await countRequest(request, deps);
  const file = await batches.store.file(id);
  if (file?.keyId !== request.caller.key.id) throw fileNotFound(id, limitHeaders);
  const response = await send(request, deps, { method, path: `/files/${encodeURIComponent(id)}${suffix}` }, limitHeaders);
  if (suffix === '/content' && ok(response)) {
    // A result file may be large: streamed through as it comes.
    return new Response(Readable.toWeb(response.body) as ReadableStream, {
      status: response.status,
      headers: { ...toClientHeaders(response.headers, request.requestId, false, response.status), ...limitHeaders },
    });
  }
  const answer = await readAnswer(response, limitHeaders);
  if (method === 'DELETE' && ok(response)) await batches.store.deleteFile(id, deps.now());
  return relayAnswer(request, response, answer, limitHeaders);
}

async function createBatch(c: Context<AppEnv>, deps: PipelineDeps, batches: BatchRouteDeps): Promise<Response> {
  const request = authenticate(c, 'chat', deps);
  const bytes = await request.client.readBody(deps.maxBodyBytes);
  const body = parseObject(bytes);
  const fileId = typeof body.input_file_id === 'string' ? body.input_file_id : undefined;
  if (fileId === undefined) throw new TollgateError('invalid_request', "Missing required parameter: 'input_file_id'.", { param: 'input_file_id' });
  const file = await batches.store.file(fileId);
  if (file?.keyId !== request.caller.key.id || file.lines === 0) throw fileNotFound(fileId, {});
  if (body.endpoint !== file.endpoint) {
    throw new TollgateError('invalid_value', `The batch's endpoint must be the url its file's lines name ("${file.endpoint}").`, { param: 'endpoint' });
  }
  const endpoint: Endpoint = openAiBatchTarget(file.endpoint)?.endpoint ?? 'chat';
  checkModelAllowed(request.caller.policy, file.model);
  const admitted = await admitBatch(
    {
      caller: request.caller,
      requestId: request.requestId,
      startedAt: request.startedAt,
      endpoint,
      model: file.model,
      promptTokens: file.promptTokens,
      completionTokens: file.completionTokens,
      costMicros: file.costMicros,
      headers: request.client.headers,
      url: request.url,
    },
    deps,
  );
  const { response, answer, id } = await createUpstreamBatch(request, deps, deps.upstream, { method: 'POST', path: '/batches', body: bytes }, admitted);
  // The upstream refused it (or answered what is no batch): nothing runs, nothing is billed.
  if (id === undefined) return relayAnswer(request, response, answer, admitted.headers);
  await batches.store.addJob({
    id,
    provider: 'openai',
    keyId: request.caller.key.id,
    tenantId: request.caller.key.tenantId,
    requestId: request.requestId,
    node: batches.node,
    createdAt: request.startedAt,
    inputFileId: file.id,
    model: file.model,
    reservedMicros: file.costMicros,
    status: stringField(answer, 'status') ?? 'validating',
    settledAt: null,
  });
  batches.follower.track(id, admitted.reservation);
  return relayAnswer(request, response, answer, admitted.headers);
}

async function batchCall(c: Context<AppEnv>, deps: PipelineDeps, batches: BatchRouteDeps, method: 'GET' | 'POST', suffix: string): Promise<Response> {
  const request = authenticate(c, 'chat', deps);
  const id = c.req.param('id') ?? '';
  const limitHeaders = await countRequest(request, deps);
  const job = await batches.store.job(id);
  if (job?.keyId !== request.caller.key.id || job.provider !== 'openai') throw batchNotFound(id, limitHeaders);
  const response = await send(request, deps, { method, path: `/batches/${encodeURIComponent(id)}${suffix}` }, limitHeaders);
  const answer = await readAnswer(response, limitHeaders);
  if (ok(response)) await noteResultFiles(answer, job.keyId, request.startedAt, batches.store);
  return relayAnswer(request, response, answer, limitHeaders);
}

/** The key's own batches, newest first, each as the upstream shows it now. */
async function listBatches(c: Context<AppEnv>, deps: PipelineDeps, batches: BatchRouteDeps): Promise<Response> {
  const request = authenticate(c, 'chat', deps);
  const limitHeaders = await countRequest(request, deps);
  const query = new URL(request.url).searchParams;
  const limit = Math.min(100, Math.max(1, Number.parseInt(query.get('limit') ?? '20', 10) || 20));
  const jobs = await batches.store.listJobs(request.caller.key.id, 'openai', { after: query.get('after') ?? undefined, limit: limit + 1 });
  const page = jobs.slice(0, limit);
  const data = await Promise.all(
    page.map(async (job) => {
      const response = await send(request, deps, { method: 'GET', path: `/batches/${encodeURIComponent(job.id)}` }, limitHeaders);
      const answer = await readAnswer(response, limitHeaders);
      return ok(response) ? (JSON.parse(answer.toString('utf8')) as unknown) : { id: job.id, object: 'batch', status: job.status };
    }),
  );
  return c.json({ object: 'list', data, first_id: page[0]?.id ?? null, last_id: page.at(-1)?.id ?? null, has_more: jobs.length > limit }, 200, {
    ...limitHeaders,
    'x-request-id': request.requestId,
  });
}

/** The batch's output and error files become the key's to read. */
async function noteResultFiles(answer: Buffer, keyId: string, at: number, store: BatchStore): Promise<void> {
  for (const field of RESULT_FILES) {
    const id = stringField(answer, field);
    if (id === undefined || (await store.file(id)) !== undefined) continue;
    const record: BatchFileRecord = {
      id,
      keyId,
      createdAt: at,
      filename: field,
      bytes: 0,
      lines: 0,
      endpoint: '',
      model: '',
      promptTokens: 0,
      completionTokens: 0,
      costMicros: 0,
    };
    await store.addFile(record);
  }
}

function send(request: RequestContext, deps: PipelineDeps, call: UpstreamCall, limitHeaders: Record<string, string>): Promise<UpstreamResponse> {
  return sendCall(request, deps.upstream, call, limitHeaders);
}

function parseObject(bytes: Buffer): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(bytes.toString('utf8'));
  } catch {
    throw new TollgateError('invalid_json', 'The request body is not valid JSON.');
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed))
    throw new TollgateError('invalid_request', 'The request body must be a JSON object.');
  return parsed as Record<string, unknown>;
}

function fileNotFound(id: string, headers: Record<string, string>): TollgateError {
  return new TollgateError('file_not_found', `No such File object: ${id.slice(0, 200)}`, { param: 'id', headers });
}

function batchNotFound(id: string, headers: Record<string, string>): TollgateError {
  return new TollgateError('batch_not_found', `No such Batch object: ${id.slice(0, 200)}`, { param: 'id', headers });
}
