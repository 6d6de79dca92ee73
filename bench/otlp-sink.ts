/**
 * An OTLP/HTTP receiver that takes every export and throws it away (answering 200 as a collector
 * does), as its own process: the tracing bench's sink. Prints {"url": …} and, on SIGTERM, the
 * exports and bytes it took on stderr.
 * Usage: tsx bench/otlp-sink.ts
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

let exports = 0;
let bytes = 0;
const server = createServer((req, res) => {
  req.on('data', (chunk: Buffer) => (bytes += chunk.length));
  req.on('end', () => {
    exports += 1;
    res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
  });
});
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`${JSON.stringify({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` })}\n`);
});
process.on('SIGTERM', () => {
  process.stderr.write(`otlp sink: ${exports} exports, ${bytes} bytes\n`);
  server.close(() => process.exit(0));
});
