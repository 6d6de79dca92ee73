/**
 * A fake OpenAI API on a free loopback port. It answers like the real one
 * (JSON with a `usage` block, SSE chunks with an optional final usage chunk,
 * OpenAI-shaped errors, embeddings in float or base64, models) and it can
 * misbehave on request: slow streams, streams that break or hang halfway,
 * error events inside a stream, garbage SSE, 4xx/5xx/429, slow headers.
 *
 * It also keeps a record of every request and what it "billed", so tests can
 * hold Tollgate's ledger against it. `tollgate demo` runs it too.
 *
 * Behaviour is chosen per request with the header
 * `x-fake-scenario: key=value,key=value` (or per server with `setScenario`):
 *   status=429|500|…   answer with that error (errorCode=… to set its code)
 *   delay=MS           pause between stream chunks (and before a JSON answer)
 *   headersDelay=MS    pause before sending anything
 *   breakAfter=N       destroy the connection after N content chunks
 *   hangAfter=N        stop sending (connection stays open) after N content chunks
 *   errorAfter=N       send an error event after N content chunks, then end
 *   garbage=1          interleave lines that are not valid SSE/JSON
 *   words=N            length of the answer in words (default 12)
 *   cached=N           report N prompt tokens as cached
 *   reasoning=N        add N hidden reasoning tokens to the completion
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import { getEncoding, type Tiktoken } from 'js-tiktoken';

/** Words that are one token each in both cl100k_base and o200k_base (checked by a test). */
export const FAKE_WORDS = [
  ' the', ' quick', ' brown', ' fox', ' jumps', ' over', ' lazy', ' dog', ' and', ' then', ' runs', ' far',
  ' away', ' from', ' home', ' to', ' find', ' a', ' new', ' place', ' in', ' the', ' green', ' hills',
] as const;

export interface FakeBilling {
  readonly promptTokens: number;
  readonly cachedTokens: number;
  readonly completionTokens: number;
  readonly reasoningTokens: number;
}

export interface RecordedRequest {
  readonly id: string;
  readonly method: string;
  readonly path: string;
  readonly headers: IncomingMessage['headers'];
  readonly body: unknown;
  readonly startedAt: number;
  status: number;
  /** What this request cost on the fake's books: prompt + what was actually generated and sent. */
  billed: FakeBilling;
  /** Content chunks written to the socket. */
  chunksSent: number;
  /** The client went away before the answer was complete. */
  closedEarly: boolean;
  finished: boolean;
}

export interface FakeUpstream {
  readonly url: string;
  readonly port: number;
  readonly requests: RecordedRequest[];
  /** Default scenario for requests without an `x-fake-scenario` header. */
  setScenario(scenario: string): void;
  /** Resolves when every request seen so far has finished or closed. */
  settled(): Promise<void>;
  close(): Promise<void>;
}

export interface FakeUpstreamOptions {
  readonly port?: number;
  readonly host?: string;
  /** When set, requests must carry `Authorization: Bearer <apiKey>`. */
  readonly apiKey?: string;
}

type Scenario = Readonly<Record<string, string>>;

const MODELS = ['gpt-4o', 'gpt-4o-mini', 'gpt-4.1', 'gpt-4.1-mini', 'gpt-5', 'gpt-5-mini', 'o4-mini', 'gpt-3.5-turbo', 'text-embedding-3-small'];

let cl100k: Tiktoken | undefined;
let o200k: Tiktoken | undefined;

/** The fake's own tokenizer choice (deliberately simple, independent of src/estimate). */
function encoderFor(model: string): Tiktoken {
  if (/^(gpt-3\.5|gpt-4(?!o|\.)|text-embedding)/.test(model)) return (cl100k ??= getEncoding('cl100k_base'));
  return (o200k ??= getEncoding('o200k_base'));
}

const counted = new Map<string, number>();

/** Token count, memoized so a benchmark's upstream is not slowed by its own tokenizer. */
function tokens(model: string, text: string): number {
  const encoder = encoderFor(model);
  const key = `${encoder === cl100k ? 'c' : 'o'}${text}`;
  let n = counted.get(key);
  if (n === undefined) {
    n = encoder.encode(text, 'all').length;
    if (counted.size >= 10_000) counted.clear();
    counted.set(key, n);
  }
  return n;
}

function parseScenario(text: string | undefined): Scenario {
  const scenario: Record<string, string> = {};
  for (const part of (text ?? '').split(',')) {
    const [key, value = '1'] = part.split('=').map((s) => s.trim());
    if (key) scenario[key] = value;
  }
  return scenario;
}

function num(scenario: Scenario, key: string): number | undefined {
  const value = scenario[key];
  return value === undefined || Number.isNaN(Number(value)) ? undefined : Number(value);
}

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content
      .map((part) => (part && typeof part === 'object' && typeof (part as { text?: unknown }).text === 'string' ? (part as { text: string }).text : ''))
      .join('');
  }
  return '';
}

/**
 * Prompt tokens as the fake bills them: the cookbook's rule for chat
 * (3 per message, +1 per name, +3 priming, +2 on reasoning models) over plain text, a flat 85 per
 * image, and tools as their JSON text. An independent, simple model of the
 * real API, so Tollgate's estimate and the bill can differ where they would.
 */
function promptTokensFor(endpoint: string, body: Record<string, unknown>, model: string): number {
  if (endpoint === 'chat') {
    // Reply priming: 3 tokens, one fewer on reasoning models (as the API bills them).
    let total = /^(o\d|gpt-5)/.test(model) ? 2 : 3;
    for (const message of Array.isArray(body.messages) ? body.messages : []) {
      const m = (message ?? {}) as Record<string, unknown>;
      total += 3 + tokens(model, String(m.role ?? '')) + tokens(model, textOf(m.content));
      if (Array.isArray(m.content)) {
        total += m.content.filter((p) => (p as { type?: unknown } | null)?.type === 'image_url').length * 85;
      }
      if (typeof m.name === 'string') total += 1 + tokens(model, m.name);
      if (m.tool_calls !== undefined) total += tokens(model, JSON.stringify(m.tool_calls));
    }
    if (Array.isArray(body.tools)) total += tokens(model, JSON.stringify(body.tools));
    return total;
  }
  if (endpoint === 'completions') {
    const prompt = body.prompt;
    return Array.isArray(prompt) ? prompt.reduce<number>((sum, p) => sum + tokens(model, String(p)), 0) : tokens(model, String(prompt ?? ''));
  }
  if (endpoint === 'embeddings') {
    const input = body.input;
    const items = Array.isArray(input) ? input : [input];
    return items.reduce<number>((sum, item) => sum + (Array.isArray(item) ? item.length : typeof item === 'number' ? 1 : tokens(model, String(item ?? ''))), 0);
  }
  // responses
  const input = body.input;
  let text = typeof body.instructions === 'string' ? body.instructions : '';
  if (typeof input === 'string') text += input;
  else if (Array.isArray(input)) for (const item of input) text += textOf((item as { content?: unknown } | null)?.content);
  return tokens(model, text) + 3;
}

function answerWords(scenario: Scenario, limit: number | undefined): string[] {
  const count = Math.max(0, Math.min(num(scenario, 'words') ?? 12, limit ?? Number.POSITIVE_INFINITY));
  const words: string[] = [];
  for (let i = 0; i < count; i += 1) {
    const word = FAKE_WORDS[i % FAKE_WORDS.length]!;
    words.push(i === 0 ? word.trimStart().replace(/^./, (c) => c.toUpperCase()) : word);
  }
  return words;
}

function sleep(ms: number): Promise<void> {
  return ms > 0 ? new Promise((resolve) => setTimeout(resolve, ms)) : Promise.resolve();
}

const ERROR_TYPES: Record<number, { type: string; code: string; message: string }> = {
  400: { type: 'invalid_request_error', code: 'invalid_value', message: 'The fake upstream was told to reject this request.' },
  401: { type: 'invalid_request_error', code: 'invalid_api_key', message: 'Incorrect API key provided.' },
  403: { type: 'invalid_request_error', code: 'unsupported_country_region_territory', message: 'Forbidden.' },
  404: { type: 'invalid_request_error', code: 'model_not_found', message: 'The model does not exist.' },
  429: { type: 'requests', code: 'rate_limit_exceeded', message: 'Rate limit reached for requests.' },
  500: { type: 'server_error', code: 'server_error', message: 'The server had an error while processing your request.' },
  503: { type: 'server_error', code: 'service_unavailable', message: 'The engine is currently overloaded.' },
};

/** Starts the fake upstream. */
export async function startFakeUpstream(options: FakeUpstreamOptions = {}): Promise<FakeUpstream> {
  const requests: RecordedRequest[] = [];
  const pending = new Set<Promise<void>>();
  let defaultScenario: Scenario = {};

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
    const raw = Buffer.concat(chunks).toString('utf8');
    let body: Record<string, unknown> = {};
    if (raw !== '') {
      try {
        body = JSON.parse(raw) as Record<string, unknown>;
      } catch {
        return sendError(res, 400, { type: 'invalid_request_error', code: 'invalid_json', message: 'We could not parse the JSON body of your request.' }, undefined);
      }
    }
    const path = (req.url ?? '/').split('?')[0]!;
    const scenario: Scenario = req.headers['x-fake-scenario'] !== undefined ? parseScenario(String(req.headers['x-fake-scenario'])) : defaultScenario;
    const record: RecordedRequest = {
      id: `req_${randomBytes(12).toString('hex')}`,
      method: req.method ?? 'GET',
      path,
      headers: req.headers,
      body,
      startedAt: Date.now(),
      status: 0,
      billed: { promptTokens: 0, cachedTokens: 0, completionTokens: 0, reasoningTokens: 0 },
      chunksSent: 0,
      closedEarly: false,
      finished: false,
    };
    requests.push(record);
    res.on('close', () => {
      if (!record.finished) record.closedEarly = true;
    });

    if (options.apiKey !== undefined && req.headers.authorization !== `Bearer ${options.apiKey}`) {
      return sendError(res, 401, ERROR_TYPES[401]!, record);
    }
    const status = num(scenario, 'status');
    if (status !== undefined && status >= 400) {
      await sleep(num(scenario, 'headersDelay') ?? 0);
      const base = ERROR_TYPES[status] ?? { type: 'server_error', code: 'server_error', message: `Fake error ${status}.` };
      return sendError(res, status, { ...base, code: scenario.errorCode ?? base.code }, record);
    }

    const route = `${req.method} ${path}`;
    if (route === 'GET /v1/models') {
      return sendJson(res, 200, { object: 'list', data: MODELS.map((id) => modelObject(id)) }, record);
    }
    if (req.method === 'GET' && path.startsWith('/v1/models/')) {
      const id = decodeURIComponent(path.slice('/v1/models/'.length));
      return MODELS.includes(id) ? sendJson(res, 200, modelObject(id), record) : sendError(res, 404, ERROR_TYPES[404]!, record);
    }
    const endpoint =
      route === 'POST /v1/chat/completions' ? 'chat'
      : route === 'POST /v1/completions' ? 'completions'
      : route === 'POST /v1/embeddings' ? 'embeddings'
      : route === 'POST /v1/responses' ? 'responses'
      : undefined;
    if (endpoint === undefined) {
      return sendError(res, 404, { type: 'invalid_request_error', code: 'unknown_url', message: `Invalid URL (${route})` }, record);
    }
    const model = typeof body.model === 'string' ? body.model : '';
    if (model === '') {
      return sendError(res, 400, { type: 'invalid_request_error', code: 'missing_model', message: 'you must provide a model parameter' }, record);
    }
    // Accepted: the prompt is processed (and billed) from here on, even if the
    // client goes away before the answer starts, as with the real API.
    const promptTokens = promptTokensFor(endpoint, body, model);
    const cachedTokens = Math.min(promptTokens, num(scenario, 'cached') ?? 0);
    record.billed = { promptTokens, cachedTokens, completionTokens: 0, reasoningTokens: 0 };

    await sleep(num(scenario, 'headersDelay') ?? 0);
    if (res.destroyed) return;

    if (endpoint === 'embeddings') return sendEmbeddings(res, body, model, promptTokens, record);

    const n = endpoint === 'responses' ? 1 : Math.max(1, Number(body.n ?? 1) || 1);
    const limitRaw = body.max_completion_tokens ?? body.max_tokens ?? body.max_output_tokens;
    const limit = typeof limitRaw === 'number' ? limitRaw : undefined;
    const words = answerWords(scenario, limit);
    const reasoning = num(scenario, 'reasoning') ?? 0;
    const answer = words.join('');
    const perChoiceTokens = tokens(model, answer);
    const finishReason = limit !== undefined && (num(scenario, 'words') ?? 12) > limit ? 'length' : 'stop';

    if (body.stream === true) {
      return streamAnswer(res, { endpoint, body, model, words, n, scenario, reasoning, promptTokens, cachedTokens, finishReason }, record);
    }
    await sleep(num(scenario, 'delay') ?? 0);
    if (res.destroyed) return;
    const completionTokens = perChoiceTokens * n + reasoning;
    record.billed = { promptTokens, cachedTokens, completionTokens, reasoningTokens: reasoning };
    const usage = usageBlock(endpoint, promptTokens, cachedTokens, completionTokens, reasoning);
    const created = Math.floor(Date.now() / 1000);
    if (endpoint === 'chat') {
      return sendJson(res, 200, {
        id: `chatcmpl-${randomBytes(8).toString('hex')}`,
        object: 'chat.completion',
        created,
        model,
        choices: Array.from({ length: n }, (_, index) => ({
          index,
          message: { role: 'assistant', content: answer, refusal: null, annotations: [] },
          logprobs: null,
          finish_reason: finishReason,
        })),
        usage,
        service_tier: 'default',
        system_fingerprint: 'fp_fake',
      }, record);
    }
    if (endpoint === 'completions') {
      return sendJson(res, 200, {
        id: `cmpl-${randomBytes(8).toString('hex')}`,
        object: 'text_completion',
        created,
        model,
        choices: Array.from({ length: n }, (_, index) => ({ text: answer, index, logprobs: null, finish_reason: finishReason })),
        usage,
      }, record);
    }
    return sendJson(res, 200, responseObject(model, answer, 'completed', usage), record);
  }

  interface StreamPlan {
    endpoint: 'chat' | 'completions' | 'responses';
    body: Record<string, unknown>;
    model: string;
    words: string[];
    n: number;
    scenario: Scenario;
    reasoning: number;
    promptTokens: number;
    cachedTokens: number;
    finishReason: string;
  }

  async function streamAnswer(res: ServerResponse, plan: StreamPlan, record: RecordedRequest): Promise<void> {
    const { endpoint, model, words, n, scenario } = plan;
    const delay = num(scenario, 'delay') ?? 0;
    const breakAfter = num(scenario, 'breakAfter');
    const hangAfter = num(scenario, 'hangAfter');
    const errorAfter = num(scenario, 'errorAfter');
    const includeUsage = (plan.body.stream_options as { include_usage?: unknown } | undefined)?.include_usage === true;
    const id = endpoint === 'chat' ? `chatcmpl-${randomBytes(8).toString('hex')}` : `cmpl-${randomBytes(8).toString('hex')}`;
    const created = Math.floor(Date.now() / 1000);
    const sent: string[] = []; // text actually written, per content chunk
    let sequence = 0;
    const respId = `resp_${randomBytes(8).toString('hex')}`;

    record.status = 200;
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      'x-request-id': record.id,
      'openai-processing-ms': '5',
      'openai-version': '2020-10-01',
      'openai-organization': 'fake-org-do-not-leak',
    });

    let flushed: Promise<void> = Promise.resolve();
    const write = (text: string): boolean => {
      if (res.destroyed || res.writableEnded) return false;
      flushed = new Promise((resolve) => res.write(text, () => resolve()));
      return true;
    };
    const data = (payload: unknown): string => `data: ${JSON.stringify(payload)}\n\n`;
    const event = (type: string, payload: Record<string, unknown>): string =>
      `event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: sequence++, ...payload })}\n\n`;
    const chatChunk = (choices: unknown[], usage: unknown = null): unknown => ({
      id, object: 'chat.completion.chunk', created, model, service_tier: 'default', system_fingerprint: 'fp_fake', choices,
      ...(includeUsage ? { usage } : {}),
    });
    const bill = (): void => {
      const completionTokens = sent.length === 0 ? 0 : tokens(model, sent.join(''));
      const finishedAll = sent.length === words.length * n;
      const reasoningTokens = finishedAll ? plan.reasoning : 0;
      record.billed = { promptTokens: plan.promptTokens, cachedTokens: plan.cachedTokens, completionTokens: completionTokens + reasoningTokens, reasoningTokens };
    };

    if (endpoint === 'chat') {
      for (let index = 0; index < n; index += 1) {
        write(data(chatChunk([{ index, delta: { role: 'assistant', content: '', refusal: null }, logprobs: null, finish_reason: null }])));
      }
    } else if (endpoint === 'responses') {
      write(event('response.created', { response: responseObject(model, '', 'in_progress', null, respId) }));
      write(event('response.output_item.added', { output_index: 0, item: { id: 'msg_fake', type: 'message', status: 'in_progress', role: 'assistant', content: [] } }));
      write(event('response.content_part.added', { item_id: 'msg_fake', output_index: 0, content_index: 0, part: { type: 'output_text', text: '', annotations: [] } }));
    }
    bill();

    let contentChunks = 0;
    for (let i = 0; i < words.length; i += 1) {
      for (let index = 0; index < n; index += 1) {
        await sleep(delay);
        if (res.destroyed) return;
        if (breakAfter !== undefined && contentChunks >= breakAfter) {
          // Let what was written reach the wire first: a break, not a lost write.
          await flushed;
          res.destroy();
          return;
        }
        if (hangAfter !== undefined && contentChunks >= hangAfter) {
          return; // keep the connection open and say nothing more
        }
        if (errorAfter !== undefined && contentChunks >= errorAfter) {
          const error = { message: 'The server had an error while processing your request.', type: 'server_error', param: null, code: 'server_error' };
          write(endpoint === 'responses' ? event('error', { code: 'server_error', message: error.message, param: null }) : data({ error }));
          record.finished = true;
          res.end();
          return;
        }
        const word = words[i]!;
        if (scenario.garbage !== undefined) write(': keep-alive comment\n\nthis is not an sse field\n\ndata: {not json}\n\n');
        const ok = write(
          endpoint === 'chat' ? data(chatChunk([{ index, delta: { content: word }, logprobs: null, finish_reason: null }]))
          : endpoint === 'completions' ? data({ id, object: 'text_completion', created, model, choices: [{ text: word, index, logprobs: null, finish_reason: null }], ...(includeUsage ? { usage: null } : {}) })
          : event('response.output_text.delta', { item_id: 'msg_fake', output_index: 0, content_index: 0, delta: word, logprobs: [] }),
        );
        if (!ok) return;
        sent.push(word);
        contentChunks += 1;
        record.chunksSent = contentChunks;
        bill();
      }
    }
    const answer = words.join('');
    const completionTokens = tokens(model, answer) * n + plan.reasoning;
    const usage = usageBlock(endpoint, plan.promptTokens, plan.cachedTokens, completionTokens, plan.reasoning);
    if (endpoint === 'chat') {
      for (let index = 0; index < n; index += 1) {
        write(data(chatChunk([{ index, delta: {}, logprobs: null, finish_reason: plan.finishReason }])));
      }
      if (includeUsage) write(data(chatChunk([], usage)));
      write('data: [DONE]\n\n');
    } else if (endpoint === 'completions') {
      for (let index = 0; index < n; index += 1) {
        write(data({ id, object: 'text_completion', created, model, choices: [{ text: '', index, logprobs: null, finish_reason: plan.finishReason }], ...(includeUsage ? { usage: null } : {}) }));
      }
      if (includeUsage) write(data({ id, object: 'text_completion', created, model, choices: [], usage }));
      write('data: [DONE]\n\n');
    } else {
      write(event('response.output_text.done', { item_id: 'msg_fake', output_index: 0, content_index: 0, text: answer, logprobs: [] }));
      write(event('response.completed', { response: responseObject(model, answer, 'completed', usage, respId) }));
    }
    record.billed = { promptTokens: plan.promptTokens, cachedTokens: plan.cachedTokens, completionTokens, reasoningTokens: plan.reasoning };
    record.finished = true;
    res.end();
  }

  function sendEmbeddings(res: ServerResponse, body: Record<string, unknown>, model: string, promptTokens: number, record: RecordedRequest): void {
    const input = body.input;
    const items = Array.isArray(input) && input.length > 0 && typeof input[0] !== 'number' ? input : [input];
    const dimensions = typeof body.dimensions === 'number' ? body.dimensions : 8;
    const base64 = body.encoding_format === 'base64';
    const data = items.map((_, index) => {
      const vector = Array.from({ length: dimensions }, (__, d) => Math.fround(Math.sin(index + d + 1)));
      const embedding = base64 ? Buffer.from(new Float32Array(vector).buffer).toString('base64') : vector;
      return { object: 'embedding', index, embedding };
    });
    record.billed = { promptTokens, cachedTokens: 0, completionTokens: 0, reasoningTokens: 0 };
    sendJson(res, 200, { object: 'list', data, model, usage: { prompt_tokens: promptTokens, total_tokens: promptTokens } }, record);
  }

  function sendJson(res: ServerResponse, status: number, payload: unknown, record: RecordedRequest | undefined): void {
    if (res.destroyed) return;
    const text = JSON.stringify(payload);
    if (record) {
      record.status = status;
      record.finished = true;
    }
    res.writeHead(status, {
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(text),
      'x-request-id': record?.id ?? 'req_fake',
      'openai-processing-ms': '5',
      'openai-version': '2020-10-01',
      'openai-organization': 'fake-org-do-not-leak',
      'x-ratelimit-limit-requests': '10000',
      'x-ratelimit-remaining-requests': '9999',
    });
    res.end(text);
  }

  function sendError(res: ServerResponse, status: number, error: { type: string; code: string; message: string }, record: RecordedRequest | undefined): void {
    if (res.destroyed) return;
    const text = JSON.stringify({ error: { message: error.message, type: error.type, param: null, code: error.code } });
    if (record) {
      record.status = status;
      record.finished = true;
    }
    const headers: Record<string, string | number> = {
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(text),
      'x-request-id': record?.id ?? 'req_fake',
    };
    if (status === 429) {
      headers['retry-after'] = '1';
      headers['x-ratelimit-remaining-requests'] = '0';
    }
    res.writeHead(status, headers);
    res.end(text);
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
    setScenario(scenario) {
      defaultScenario = parseScenario(scenario);
    },
    async settled() {
      while (pending.size > 0) await Promise.allSettled([...pending]);
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function usageBlock(endpoint: string, prompt: number, cached: number, completion: number, reasoning: number): Record<string, unknown> {
  if (endpoint === 'responses') {
    return {
      input_tokens: prompt,
      input_tokens_details: { cached_tokens: cached },
      output_tokens: completion,
      output_tokens_details: { reasoning_tokens: reasoning },
      total_tokens: prompt + completion,
    };
  }
  return {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: prompt + completion,
    prompt_tokens_details: { cached_tokens: cached, audio_tokens: 0 },
    completion_tokens_details: { reasoning_tokens: reasoning, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
  };
}

function modelObject(id: string): Record<string, unknown> {
  return { id, object: 'model', created: 1_700_000_000, owned_by: 'system' };
}

function responseObject(model: string, text: string, status: string, usage: unknown, id = `resp_${randomBytes(8).toString('hex')}`): Record<string, unknown> {
  return {
    id,
    object: 'response',
    created_at: Math.floor(Date.now() / 1000),
    status,
    model,
    output: text === '' ? [] : [{
      type: 'message', id: 'msg_fake', status: 'completed', role: 'assistant',
      content: [{ type: 'output_text', text, annotations: [] }],
    }],
    usage,
    error: null,
    incomplete_details: null,
    instructions: null,
    parallel_tool_calls: true,
    tool_choice: 'auto',
    tools: [],
  };
}
