/**
 * A lean, slow streaming upstream for the many-open-streams bench: every chat
 * request is answered with `chunks` SSE chunks, one every `intervalMs`, each
 * carrying in its content the moment it was written (`@<µs>` on the
 * system-wide monotonic clock, which the load generator reads too), then a
 * usage chunk and `[DONE]`. Chunks are built from a prepared prefix with no
 * JSON work per chunk: the upstream shares its core with the load generator,
 * and the general fake upstream (src/demo/fake-upstream) spends enough per
 * chunk to swamp that core at 40k chunks/s (shared/BENCH-NOTES.md).
 *
 * Usage: tsx bench/slow-upstream.ts <intervalMs> <chunks>   (prints {"url": …})
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

const intervalMs = Number(process.argv[2] ?? 50);
const chunks = Number(process.argv[3] ?? 200);

/** Monotonic microseconds, comparable across processes on one machine. */
function nowMicros(): number {
  const [s, ns] = process.hrtime();
  return s * 1e6 + Math.floor(ns / 1e3);
}

let counter = 0;
const server = createServer((req, res) => {
  let body = '';
  req.setEncoding('utf8');
  req.on('data', (part: string) => (body += part));
  req.on('end', () => {
    let model = 'gpt-4o-mini';
    try {
      model = String((JSON.parse(body) as { model?: unknown }).model ?? model);
    } catch {
      // keep the default
    }
    const id = `chatcmpl-slow${(counter += 1)}`;
    const created = Math.floor(Date.now() / 1000);
    const head = `data: {"id":"${id}","object":"chat.completion.chunk","created":${created},"model":"${model}","system_fingerprint":"fp_slow","choices":[{"index":0,"delta":{`;
    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', 'x-request-id': id });
    res.write(`${head}"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}\n\n`);
    let sent = 0;
    const next = (): void => {
      if (res.destroyed) return;
      if (sent < chunks) {
        sent += 1;
        res.write(`${head}"content":" @${nowMicros()}"},"logprobs":null,"finish_reason":null}]}\n\n`);
        timer = setTimeout(next, intervalMs);
        return;
      }
      const usage = `"usage":{"prompt_tokens":20,"completion_tokens":${chunks * 2},"total_tokens":${20 + chunks * 2}}`;
      res.write(`${head}},"logprobs":null,"finish_reason":"stop"}]}\n\n`);
      res.write(`data: {"id":"${id}","object":"chat.completion.chunk","created":${created},"model":"${model}","choices":[],${usage}}\n\ndata: [DONE]\n\n`);
      res.end();
    };
    let timer = setTimeout(next, intervalMs);
    res.on('close', () => clearTimeout(timer));
  });
});
server.keepAliveTimeout = 65_000;
server.maxRequestsPerSocket = 0;
server.listen(0, '127.0.0.1', () => {
  const { port } = server.address() as AddressInfo;
  process.stdout.write(`${JSON.stringify({ url: `http://127.0.0.1:${port}/v1` })}\n`);
});
process.on('SIGTERM', () => process.exit(0));
