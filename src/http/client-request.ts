/**
 * The client's side of a proxied request: its headers, its body (read with a
 * limit) and a signal that fires when the client goes away.
 *
 * Served by Node, these come straight from `IncomingMessage`/`ServerResponse`:
 * touching `Request.body` or `Request.signal` makes @hono/node-server build a
 * full web Request and web streams for every call, which profiling showed to
 * be a large share of the proxy's own cost. In-process (`app.request`, tests)
 * the web Request is used instead; both behave the same.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { readBodyBytes, tooLarge } from './body.js';
import { TollgateError } from '../errors.js';
import type { NodeBindings } from '../app-env.js';

export type HeaderRecord = Readonly<Record<string, string | string[] | undefined>>;

export interface ClientRequest {
  /** Lower-case header names. */
  readonly headers: HeaderRecord;
  /** The whole body, refusing more than `limit` bytes while it arrives. */
  readBody(limit: number): Promise<Buffer>;
  /**
   * Aborted when the client closes the connection before the response is
   * complete. It does not stop a request already sent upstream: that one is
   * read on to its usage (src/pipeline/relay.ts).
   */
  readonly abort: AbortController;
  /**
   * The Node response, when served by Node: a relayed stream is written
   * straight to it (src/http/node-stream.ts). Absent in-process.
   */
  readonly outgoing?: ServerResponse;
}

/** The client request behind a Hono context, Node-native when possible. */
export function clientRequestOf(raw: Request, env: Partial<NodeBindings> | undefined): ClientRequest {
  if (env?.incoming !== undefined && env.outgoing !== undefined) return fromNode(env.incoming, env.outgoing);
  return fromWeb(raw);
}

function fromNode(incoming: IncomingMessage, outgoing: ServerResponse): ClientRequest {
  let controller: AbortController | undefined;
  return {
    headers: incoming.headers,
    outgoing,
    readBody: (limit) => readIncoming(incoming, limit),
    get abort() {
      if (controller === undefined) {
        const created = new AbortController();
        controller = created;
        outgoing.once('close', () => {
          if (!outgoing.writableFinished) created.abort();
        });
        if (outgoing.destroyed && !outgoing.writableFinished) created.abort();
      }
      return controller;
    },
  };
}

function fromWeb(raw: Request): ClientRequest {
  const headers: Record<string, string> = {};
  raw.headers.forEach((value, name) => {
    headers[name] = value;
  });
  const abort = new AbortController();
  if (raw.signal.aborted) abort.abort();
  else raw.signal.addEventListener('abort', () => abort.abort(), { once: true });
  return { headers, readBody: (limit) => readBodyBytes(raw, limit), abort };
}

function readIncoming(incoming: IncomingMessage, limit: number): Promise<Buffer> {
  const declared = incoming.headers['content-length'];
  if (declared !== undefined && Number(declared) > limit) return Promise.reject(tooLarge(limit));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let total = 0;
    const cleanup = (): void => {
      incoming.off('data', onData);
      incoming.off('end', onEnd);
      incoming.off('error', onError);
      incoming.off('aborted', onAborted);
    };
    const onData = (chunk: Buffer): void => {
      total += chunk.byteLength;
      if (total > limit) {
        cleanup();
        // Stop reading; the response (413) is sent and the connection closed after it.
        incoming.pause();
        reject(tooLarge(limit));
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = (): void => {
      cleanup();
      resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, total));
    };
    const onError = (error: Error): void => {
      cleanup();
      reject(new TollgateError('invalid_request', 'The request body could not be read.', { cause: error }));
    };
    const onAborted = (): void => {
      cleanup();
      reject(new TollgateError('client_closed_request', 'The client closed the connection while sending the body.'));
    };
    incoming.on('data', onData);
    incoming.on('end', onEnd);
    incoming.on('error', onError);
    incoming.on('aborted', onAborted);
  });
}
