/**
 * The baseline: a bare node:http pass-through proxy with a keep-alive agent
 * and nothing else — no parsing, no auth, no accounting. Tollgate's overhead
 * is judged against this and against calling the upstream directly.
 *
 * Usage: tsx bench/bare-proxy.ts <upstream-base-url> [maxSockets]   (prints {"url": …} when listening;
 * maxSockets defaults to 256, the many-streams bench raises it to hold every stream open)
 */
import { Agent, createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';

const upstream = new URL(process.argv[2] ?? 'http://127.0.0.1:1/v1');
const agent = new Agent({ keepAlive: true, maxSockets: Number(process.argv[3] ?? 256) });
const basePath = upstream.pathname.replace(/\/+$/, '');

const server = createServer((req, res) => {
  const headers = { ...req.headers, host: upstream.host };
  const out = request(
    { host: upstream.hostname, port: upstream.port, method: req.method, path: basePath + (req.url ?? '/').replace(/^\/v1/, ''), headers, agent },
    (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    },
  );
  out.on('error', () => {
    if (!res.headersSent) res.writeHead(502);
    res.end();
  });
  req.pipe(out);
});
server.keepAliveTimeout = 65_000;
// Tollgate's default backlog (TOLLGATE_LISTEN_BACKLOG), so both hops queue a burst of connections alike.
server.listen({ port: 0, host: '127.0.0.1', backlog: 4096 }, () => {
  const { port } = server.address() as AddressInfo;
  process.stdout.write(`${JSON.stringify({ url: `http://127.0.0.1:${port}/v1` })}\n`);
});
process.on('SIGTERM', () => process.exit(0));
