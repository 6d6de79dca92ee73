/**
 * The SSE relay written straight to the Node response (src/http/stream-sinks.ts):
 * the first chunk is never held back, a slow client pauses the upstream instead
 * of filling the proxy's memory, and a stream carries the same headers as a JSON
 * answer and as the in-process (web stream) path.
 */
import { serve } from '@hono/node-server';
import { createServer, request as httpRequest, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { rmSync } from 'node:fs';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config/index.js';
import { Metrics } from '../../../src/metrics.js';
import { buildTollgate, type Tollgate } from '../../../src/tollgate.js';
import { tempDatabasePath } from '../../support/db.js';
import { captureLogs } from '../../support/logs.js';
import { waitFor } from '../../support/wait.js';
import { RECEIPT_COMMENT, withoutReceipt } from '../../support/receipt.js';

const UPSTREAM_KEY = 'sk-stream-relay-upstream';
const CHUNK = (text: string): string =>
  `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{"content":${JSON.stringify(text)}},"finish_reason":null}]}\n\n`;
const ENDING =
  'data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7}}\n\ndata: [DONE]\n\n';
const UPSTREAM_HEADERS = { 'x-request-id': 'req_up', 'openai-processing-ms': '12', 'x-ratelimit-remaining-requests': '99' };

/** What the upstream does with the next request (each test sets it). */
let answer: (body: { stream?: boolean }, res: ServerResponse) => void = (_body, res) => res.end();
let upstream: Server;
let tollgate: Tollgate;
let proxy: Server;
let origin: string;
let key: string;
let dir: string;
/** The proxy's Node response of the latest request. */
let outgoing: ServerResponse | undefined;

beforeAll(async () => {
  upstream = createServer((req, res) => {
    // Tollgate's start-up check of its upstream (src/upstreams/probe.ts) lists the models, as a real upstream answers it.
    if (req.method === 'GET') {
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"object":"list","data":[]}');
      return;
    }
    let text = '';
    req.setEncoding('utf8');
    req.on('data', (part: string) => (text += part));
    req.on('end', () => answer(JSON.parse(text) as { stream?: boolean }, res));
  });
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  const database = tempDatabasePath();
  dir = database.dir;
  const config = loadConfig({
    TOLLGATE_DB: database.path,
    TOLLGATE_UPSTREAM_URL: `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/v1`,
    TOLLGATE_UPSTREAM_KEY: UPSTREAM_KEY,
    TOLLGATE_DEFAULT_MAX_TOKENS: '1000',
  });
  tollgate = buildTollgate(config, { logger: captureLogs('info').logger, metrics: new Metrics({ defaultMetrics: false }) });
  await tollgate.start();
  key = tollgate.keyStore.createKey({ name: 'relay', policy: { limits: [] } }).key;
  proxy = await new Promise<Server>((resolve) => {
    const created = serve({ fetch: tollgate.app.fetch, port: 0, hostname: '127.0.0.1' }, () => resolve(created as Server)) as Server;
  });
  proxy.on('request', (_req: IncomingMessage, res: ServerResponse) => (outgoing = res));
  origin = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
});

afterEach(() => {
  tollgate.lifecycle.shuttingDown = false;
});

afterAll(async () => {
  proxy.closeAllConnections();
  await new Promise<void>((resolve) => proxy.close(() => resolve()));
  await tollgate.close();
  upstream.closeAllConnections();
  await new Promise<void>((resolve) => upstream.close(() => resolve()));
  rmSync(dir, { recursive: true, force: true });
});

function chat(stream: boolean): RequestInit {
  return {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], stream, max_tokens: 20 }),
  };
}

/** Header names a client sees, without the framing and date Node adds to any response. */
function names(headers: Headers): string[] {
  const framing = new Set(['content-type', 'content-length', 'transfer-encoding', 'date', 'connection', 'keep-alive']);
  return [...headers.keys()].filter((name) => !framing.has(name)).sort();
}

function answerBoth(body: { stream?: boolean }, res: ServerResponse): void {
  if (body.stream === true) {
    res.writeHead(200, { ...UPSTREAM_HEADERS, 'content-type': 'text/event-stream' });
    res.end(CHUNK('Hello') + ENDING);
    return;
  }
  const json = JSON.stringify({
    id: 'c1',
    object: 'chat.completion',
    created: 1,
    model: 'gpt-4o-mini',
    choices: [{ index: 0, message: { role: 'assistant', content: 'Hello' }, finish_reason: 'stop' }],
    usage: { prompt_tokens: 5, completion_tokens: 1, total_tokens: 6 },
  });
  res.writeHead(200, { ...UPSTREAM_HEADERS, 'content-type': 'application/json' });
  res.end(json);
}

describe('the first chunk', () => {
  it('reaches the client before the upstream sends the second', async () => {
    let releaseSecond!: () => void;
    const second = new Promise<void>((resolve) => (releaseSecond = resolve));
    answer = (_body, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(CHUNK('first'));
      void second.then(() => res.end(CHUNK('second') + ENDING));
    };
    const response = await fetch(`${origin}/v1/chat/completions`, chat(true));
    const reader = response.body!.getReader();
    const decoder = new TextDecoder();
    let text = '';
    // The upstream sends nothing more until the client has the first chunk.
    while (!text.includes('"first"')) text += decoder.decode((await reader.read()).value, { stream: true });
    expect(text).not.toContain('"second"');
    releaseSecond();
    for (let step = await reader.read(); !step.done; step = await reader.read()) text += decoder.decode(step.value, { stream: true });
    expect(text).toContain('"second"');
    expect(withoutReceipt(text).endsWith('data: [DONE]\n\n')).toBe(true);
  });
});

describe('headers', () => {
  it('are the same on a stream as on a JSON answer', async () => {
    answer = answerBoth;
    const json = await fetch(`${origin}/v1/chat/completions`, chat(false));
    await json.text();
    const stream = await fetch(`${origin}/v1/chat/completions`, chat(true));
    await stream.text();
    expect(stream.headers.get('content-type')).toBe('text/event-stream');
    // But the receipt: a JSON answer's in headers, a stream's in its last line.
    const receiptHeaders = ['x-tollgate-cost-usd', 'x-tollgate-reserved-usd'];
    expect(names(json.headers)).toEqual(expect.arrayContaining(receiptHeaders));
    expect(names(stream.headers)).toEqual(names(json.headers).filter((name) => !receiptHeaders.includes(name)));
    expect(stream.headers.get('x-upstream-request-id')).toBe('req_up');
    expect(stream.headers.get('x-ratelimit-remaining-requests')).toBeNull();
  });

  it('are the same from the Node response as from the in-process web stream', async () => {
    answer = answerBoth;
    const node = await fetch(`${origin}/v1/chat/completions`, chat(true));
    const nodeText = await node.text();
    const web = await tollgate.app.request('/v1/chat/completions', chat(true));
    const webText = await web.text();
    expect(names(node.headers)).toEqual(names(web.headers));
    expect(node.headers.get('content-type')).toBe(web.headers.get('content-type'));
    // Each with its own request's receipt.
    expect(nodeText).toMatch(RECEIPT_COMMENT);
    expect(webText).toMatch(RECEIPT_COMMENT);
    expect(withoutReceipt(nodeText)).toBe(withoutReceipt(webText));
  });

  it('say connection: close on a stream answered while shutting down, as on any response', async () => {
    answer = answerBoth;
    tollgate.lifecycle.shuttingDown = true;
    const stream = await fetch(`${origin}/v1/chat/completions`, chat(true));
    await stream.text();
    expect(stream.headers.get('connection')).toBe('close');
  });
});

describe('a client that reads slower than the upstream sends', () => {
  it('pauses the upstream instead of buffering in the proxy, and gets every byte once it reads again', async () => {
    const total = 48 * 1024 * 1024;
    // SSE comments: relayed byte for byte, nothing for the tap to parse.
    const padding = Buffer.from(`: ${'x'.repeat(64 * 1024 - 5)}\n\n`);
    let written = 0;
    let tail = '';
    let upstreamWaiting = false;
    answer = (_body, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const pump = (): void => {
        upstreamWaiting = false;
        while (written < total) {
          written += padding.byteLength;
          if (!res.write(padding)) {
            upstreamWaiting = true;
            res.once('drain', pump);
            return;
          }
        }
        res.end(CHUNK('done') + ENDING);
      };
      pump();
    };
    outgoing = undefined;
    const { response, done } = await new Promise<{ response: IncomingMessage; done: Promise<number> }>((resolve, reject) => {
      const req = httpRequest(`${origin}/v1/chat/completions`, { method: 'POST', headers: chat(true).headers as Record<string, string> }, (res) => {
        res.pause();
        const done = new Promise<number>((finish) => {
          let received = 0;
          res.on('data', (part: Buffer) => {
            received += part.byteLength;
            tail = (tail + part.toString('utf8')).slice(-400);
          });
          res.on('end', () => finish(received));
        });
        res.pause();
        resolve({ response: res, done });
      });
      req.on('error', reject);
      req.end(chat(true).body as string);
    });
    // The proxy was told to wait for the client, and the upstream for the proxy.
    await waitFor(() => upstreamWaiting && outgoing?.writableNeedDrain === true, 'the upstream to be paused', 20_000);
    expect(outgoing!.writableLength).toBeLessThan(1024 * 1024);
    expect(written).toBeLessThan(total);
    response.resume();
    const received = await done;
    // Everything but the usage chunk, which Tollgate asked for and the client did not, then the receipt.
    const receipt = RECEIPT_COMMENT.exec(tail);
    expect(receipt, tail).not.toBeNull();
    expect(received).toBe(written + Buffer.byteLength(`${CHUNK('done')}data: [DONE]\n\n`) + Buffer.byteLength(receipt![0]));
  });
});
