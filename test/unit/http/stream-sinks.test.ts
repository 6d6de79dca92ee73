/** The Node sink of a relayed stream (src/http/stream-sinks.ts), on a real node:http server. */
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { nodeStreamResponse, sendDeferred, type StreamSource } from '../../../src/http/stream-sinks.js';
import { waitFor } from '../../support/wait.js';

let server: Server | undefined;
afterEach(async () => {
  await new Promise<void>((resolve) => (server === undefined ? resolve() : server.close(() => resolve())));
  server = undefined;
});

function recordingSource(): StreamSource & { events: string[] } {
  const events: string[] = [];
  return {
    events,
    start(sink) {
      events.push('start');
      sink.write(new TextEncoder().encode('data: one\n\n'));
      sink.end();
    },
    resume: () => events.push('resume'),
    cancel: () => events.push('cancel'),
  };
}

/** A server whose every request gets a stream response; `send` says whether the app sends it on. */
let handled = 0;
async function serveStreams(source: StreamSource, send: boolean): Promise<number> {
  handled = 0;
  server = createServer((_req, res) => {
    handled += 1;
    const placeholder = nodeStreamResponse(res, 200, { 'content-type': 'text/event-stream' }, source, () => false);
    if (send) sendDeferred(placeholder);
  });
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

describe('nodeStreamResponse', () => {
  it('writes the stream once the app sends the final response', async () => {
    const source = recordingSource();
    const port = await serveStreams(source, true);
    const body = await new Promise<string>((resolve, reject) => {
      request({ port, host: '127.0.0.1' }, (res) => {
        let text = '';
        res.on('data', (chunk: Buffer) => (text += chunk.toString()));
        res.on('end', () => resolve(text));
      })
        .on('error', reject)
        .end();
    });
    expect(body).toBe('data: one\n\n');
    expect(source.events).toEqual(['start']);
  });

  it('cancels a stream that was never sent when the client leaves, so the relay still ends and settles', async () => {
    const source = recordingSource();
    const port = await serveStreams(source, false);
    const client = request({ port, host: '127.0.0.1' });
    client.on('error', () => {});
    client.end();
    await waitFor(() => handled === 1, 'the server to take the request');
    // Nothing is ever written; the client gives up.
    client.destroy();
    await waitFor(() => source.events.includes('cancel'), 'the source cancelled');
    expect(source.events).toEqual(['cancel']);
  });
});
