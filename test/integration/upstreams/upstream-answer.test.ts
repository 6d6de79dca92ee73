/**
 * The upstream pool's answers (src/upstreams/upstream-answer.ts) against a real HTTP server: read
 * whole or as a stream, held back when nobody reads, aborted by a reader that stops or by the
 * request's signal, failures reported either way, and the connection's slot given back however
 * the exchange ends.
 */
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { TollgateError } from '../../../src/domain/errors.js';
import { createUpstream, type Upstream } from '../../../src/upstreams/pool.js';
import { UpstreamStop } from '../../../src/upstreams/upstream-stop.js';
import { waitFor } from '../../support/wait.js';

const open: Array<{ server: Server; upstream: Upstream }> = [];
afterEach(async () => {
  for (const { server, upstream } of open.splice(0)) {
    await upstream.close().catch(() => undefined);
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

/** A server answering with `handle`, and a pool of `connections` in front of it. */
async function serve(handle: (req: IncomingMessage, res: ServerResponse) => void, connections = 1): Promise<Upstream> {
  const server = createServer(handle);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  const upstream = createUpstream({
    url: `http://127.0.0.1:${port}/v1`,
    apiKey: 'sk-test',
    connectTimeoutMs: 2000,
    headersTimeoutMs: 5000,
    idleTimeoutMs: 5000,
    connections,
    queueTimeoutMs: 3000,
  });
  open.push({ server, upstream });
  return upstream;
}

const get = (signal: AbortSignal | UpstreamStop = new UpstreamStop()) => ({ method: 'GET' as const, path: '/x', headers: {}, signal });

/** Writes `total` bytes in 64 KB pieces, waiting for drain, and records how far it got. */
function writeMany(res: ServerResponse, total: number, progress: { written: number; finished: boolean }): void {
  const piece = Buffer.alloc(64 * 1024, 'a');
  const next = (): void => {
    while (progress.written < total) {
      progress.written += piece.length;
      if (!res.write(piece)) return void res.once('drain', next);
    }
    res.end(() => (progress.finished = true));
  };
  next();
}

describe('an upstream answer', () => {
  it('is read whole without a stream, its status and headers as sent', async () => {
    const json = JSON.stringify({ id: 'chatcmpl-1', text: 'x'.repeat(200_000) });
    const upstream = await serve((_req, res) => {
      res.writeHead(201, { 'content-type': 'application/json', 'x-request-id': 'req-1', 'set-cookie': ['a=1', 'b=2'] });
      // Several writes, so the answer arrives in several chunks.
      for (let i = 0; i < json.length; i += 10_000) res.write(json.slice(i, i + 10_000));
      res.end();
    });
    const answer = await upstream.send(get());
    expect(answer.status).toBe(201);
    expect(answer.headers['x-request-id']).toBe('req-1');
    expect(answer.headers['set-cookie']).toEqual(['a=1', 'b=2']);
    expect((await answer.whole()).toString()).toBe(json);
    await expect(answer.whole()).rejects.toThrow(/already being read/);
  });

  it('is read as a stream, byte for byte, when the reader asks for one', async () => {
    const upstream = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      let n = 0;
      const tick = (): void => {
        if (n === 50) return void res.end();
        res.write(`data: ${n}\n\n`);
        n += 1;
        setImmediate(tick);
      };
      tick();
    });
    const answer = await upstream.send(get());
    let text = '';
    for await (const chunk of answer.body) text += (chunk as Buffer).toString();
    expect(text).toBe(Array.from({ length: 50 }, (_, n) => `data: ${n}\n\n`).join(''));
  });

  it('holds back what nobody reads: the upstream waits, and a later reader gets every byte', async () => {
    const total = 32 * 1024 * 1024;
    const progress = { written: 0, finished: false };
    const upstream = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      writeMany(res, total, progress);
    });
    const answer = await upstream.send(get());
    // The answer is far larger than what the sockets' buffers take: without the pause the server would finish.
    await waitFor(() => progress.written > 0, 'the server to start writing');
    // Stalled: nothing more written over a quarter of a second (real time is the point: the socket's pause).
    for (let last = -1, tries = 0; progress.written !== last; tries += 1) {
      if (tries === 40) throw new Error('the server never stalled on a full socket');
      last = progress.written;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    expect(progress.finished).toBe(false);
    expect(progress.written).toBeLessThan(total / 2);
    let read = 0;
    for await (const chunk of answer.body) read += (chunk as Buffer).length;
    expect(read).toBe(total);
  });

  it('is aborted by a reader that stops early, and its slot is given back', async () => {
    const closed: boolean[] = [];
    let calls = 0;
    const upstream = await serve((_req, res) => {
      calls += 1;
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: first\n\n');
      if (calls === 1) res.once('close', () => closed.push(res.writableFinished));
      else res.end('data: [DONE]\n\n');
    }, 1);
    const first = await upstream.send(get());
    const errors: Error[] = [];
    first.body.on('error', (error) => errors.push(error));
    first.body.destroy();
    await waitFor(() => closed.length === 1, 'the upstream to see the request end');
    expect(closed).toEqual([false]);
    expect(errors.map((error) => (error as { code?: string }).code)).toEqual(['UND_ERR_ABORTED']);
    // One connection: the second request needs the first one's slot.
    const second = await upstream.send(get());
    expect((await second.whole()).toString()).toBe('data: first\n\ndata: [DONE]\n\n');
  });

  it('gives the slot back when the answer ends, before anyone reads it', async () => {
    const upstream = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"ok":true}');
    }, 1);
    const first = await upstream.send(get());
    const second = await upstream.send(get());
    expect((await second.whole()).toString()).toBe('{"ok":true}');
    expect((await first.whole()).toString()).toBe('{"ok":true}');
  });

  it("is stopped by Tollgate's signal before and after its headers", async () => {
    let requests = 0;
    const upstream = await serve((_req, res) => {
      requests += 1;
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: 1\n\n');
    }, 1);
    const stopped = new UpstreamStop();
    stopped.abort();
    await expect(upstream.send(get(stopped))).rejects.toBeInstanceOf(TollgateError);
    expect(requests).toBe(0);

    const stop = new UpstreamStop();
    const answer = await upstream.send(get(stop));
    const whole = answer.whole();
    stop.abort();
    await expect(whole).rejects.toMatchObject({ code: 'UND_ERR_ABORTED' });

    const client = new AbortController();
    const streamed = await upstream.send(get(client.signal));
    const failed = new Promise<Error>((resolve) => streamed.body.once('error', resolve));
    client.abort(new Error('the client left'));
    expect((await failed).message).toBe('the client left');
  });

  it('reports a broken answer to a reader who comes after the break, read whole or streamed', async () => {
    let calls = 0;
    const upstream = await serve((_req, res) => {
      calls += 1;
      if (calls % 2 === 0) return void res.end('ok');
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '1000' });
      res.write('{"partial":', () => setImmediate(() => res.socket?.destroy()));
    }, 1);
    // One connection: the request after a broken one is answered only once the break reached the pool.
    const whole = await upstream.send(get());
    expect((await (await upstream.send(get())).whole()).toString()).toBe('ok');
    await expect(whole.whole()).rejects.toMatchObject({ code: 'UND_ERR_SOCKET' });
    const streamed = await upstream.send(get());
    expect((await (await upstream.send(get())).whole()).toString()).toBe('ok');
    // As request()'s stream did, the break ends it with the error (what was held before it is dropped).
    const ended = new Promise((resolve, reject) => streamed.body.on('error', reject).on('end', resolve).resume());
    await expect(ended).rejects.toMatchObject({ code: 'UND_ERR_SOCKET' });
  });
});
