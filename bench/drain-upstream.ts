/**
 * An upstream that keeps nothing: `POST /v1/files` reads the upload to its end,
 * counting bytes, and answers a file object as OpenAI does. The demo's fake
 * keeps every uploaded file in memory and parses the whole multipart body, so
 * it cannot stand behind a bench of the proxy's memory; this one costs only
 * its socket buffers and is its own process. Any other call is a 404.
 *
 * Usage: node bench/drain-upstream.ts (as plain JS, bench/support.ts plainJs)   (prints {"url": …} when listening)
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

let files = 0;

const server = createServer((req, res) => {
  if (req.method !== 'POST' || req.url !== '/v1/files') {
    req.resume();
    res.writeHead(404, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ error: { message: `No route ${req.method ?? ''} ${req.url ?? ''}`, type: 'invalid_request_error', param: null, code: null } }));
    return;
  }
  let bytes = 0;
  req.on('data', (chunk: Buffer) => {
    bytes += chunk.byteLength;
  });
  req.on('end', () => {
    files += 1;
    const body = JSON.stringify({
      id: `file-drain${files}`,
      object: 'file',
      // The multipart body's size, not the file's: what the bench checks arrived whole.
      bytes,
      created_at: Math.floor(Date.now() / 1000),
      filename: 'batch.jsonl',
      purpose: 'batch',
      status: 'processed',
      status_details: null,
      expires_at: null,
    });
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    res.end(body);
  });
  req.on('error', () => res.destroy());
});
server.keepAliveTimeout = 65_000;
server.listen({ port: 0, host: '127.0.0.1' }, () => {
  const { port } = server.address() as AddressInfo;
  process.stdout.write(`${JSON.stringify({ url: `http://127.0.0.1:${port}/v1` })}\n`);
});
process.on('SIGTERM', () => process.exit(0));
