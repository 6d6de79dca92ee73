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
import { Readable } from 'node:stream';
import type { ReadableStream as NodeReadableStream } from 'node:stream/web';
import { BodyBuffer, declaredLength, readBodyBytes, tooLarge, type BodyAllowance } from './body.js';
import { TollgateError } from '../domain/errors.js';
import type { NodeBindings } from '../app-env.js';
import { abortControllerOf, ClientLeft } from './client-left.js';

export type HeaderRecord = Readonly<Record<string, string | string[] | undefined>>;

/** A header's first value (Node gives repeated ones as an array). */
export function firstHeader(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

export interface ClientRequest {
  /** Lower-case header names. */
  readonly headers: HeaderRecord;
  /**
   * The whole body, refusing more than `limit` bytes while it arrives; a
   * large one in a buffer of its own (transferable to a worker: body.ts,
   * BodyBuffer). `allowance` is asked before the bytes are taken
   * (src/http/body-intake.ts); reading waits for it.
   */
  readBody(limit: number, allowance?: BodyAllowance): Promise<Buffer>;
  /** The body as it arrives, for what streams through rather than being read whole (a batch file upload); the reader bounds it. */
  stream(): Readable;
  /**
   * Fires when the client closes the connection before the response is
   * complete. It does not stop a request already sent upstream: that one is
   * read on to its usage (src/pipeline/relay.ts).
   */
  readonly left: ClientLeft;
  /**
   * The same leaving as an AbortController's signal, for an API that takes
   * only an AbortSignal (made when first asked for: src/http/client-left.ts).
   */
  readonly abort: AbortController;
  /**
   * The Node response, when served by Node: a relayed stream is written
   * straight to it (src/http/stream-sinks.ts). Absent in-process.
   */
  readonly outgoing?: ServerResponse;
}

/** The client request behind a Hono context, Node-native when possible. */
export function clientRequestOf(raw: Request, env: Partial<NodeBindings> | undefined): ClientRequest {
  if (env?.incoming !== undefined && env.outgoing !== undefined) return fromNode(env.incoming, env.outgoing);
  return fromWeb(raw);
}

/**
 * A class, not an object literal: a literal with getters defines each accessor through V8's runtime
 * every time one is made (about 5 µs a request in a profile of the proxy, docs/performance.md
 * "Slow paths the profile named"); a class's getters are on its prototype, made once.
 */
class NodeClientRequest implements ClientRequest {
  readonly headers: HeaderRecord;
  private leftOnce: ClientLeft | undefined;
  private controller: AbortController | undefined;

  constructor(
    private readonly incoming: IncomingMessage,
    readonly outgoing: ServerResponse,
  ) {
    this.headers = incoming.headers;
  }

  readBody(limit: number, allowance?: BodyAllowance): Promise<Buffer> {
    return readIncoming(this.incoming, limit, allowance);
  }

  stream(): Readable {
    return this.incoming;
  }

  get left(): ClientLeft {
    if (this.leftOnce === undefined) {
      const created = new ClientLeft();
      const outgoing = this.outgoing;
      this.leftOnce = created;
      outgoing.once('close', () => {
        if (!outgoing.writableFinished) created.leave();
      });
      if (outgoing.destroyed && !outgoing.writableFinished) created.leave();
    }
    return this.leftOnce;
  }

  get abort(): AbortController {
    return (this.controller ??= abortControllerOf(this.left));
  }
}

function fromNode(incoming: IncomingMessage, outgoing: ServerResponse): ClientRequest {
  return new NodeClientRequest(incoming, outgoing);
}

function fromWeb(raw: Request): ClientRequest {
  const headers: Record<string, string> = {};
  raw.headers.forEach((value, name) => {
    headers[name] = value;
  });
  const left = new ClientLeft();
  if (raw.signal.aborted) left.leave();
  else raw.signal.addEventListener('abort', () => left.leave(), { once: true });
  let controller: AbortController | undefined;
  return {
    headers,
    readBody: (limit, allowance) => readBodyBytes(raw, limit, allowance),
    stream: () => (raw.body === null ? Readable.from([]) : Readable.fromWeb(raw.body as NodeReadableStream<Uint8Array>)),
    left,
    get abort() {
      return (controller ??= abortControllerOf(left));
    },
  };
}

function readIncoming(incoming: IncomingMessage, limit: number, allowance: BodyAllowance | undefined): Promise<Buffer> {
  const declared = declaredLength(incoming.headers['content-length']);
  if (declared !== undefined && declared > limit) return Promise.reject(tooLarge(limit));
  return new Promise((resolve, reject) => {
    const body = new BodyBuffer(declared, limit);
    let done = false;
    let waiting: Promise<void> | undefined;
    const cleanup = (): void => {
      done = true;
      incoming.off('data', onData);
      incoming.off('end', onEnd);
      incoming.off('error', onError);
      incoming.off('aborted', onAborted);
    };
    const fail = (error: unknown): void => {
      if (done) return;
      cleanup();
      // Stop reading; the response is sent and the connection closed after it.
      incoming.pause();
      reject(error);
    };
    /** Waits for the allowance with the stream paused (the socket then holds the client back). */
    const wait = (allowed: Promise<void>): void => {
      incoming.pause();
      const current = allowed.then(
        () => {
          if (waiting === current) waiting = undefined;
          if (!done) incoming.resume();
        },
        (error: unknown) => fail(error),
      );
      waiting = current;
    };
    const onData = (chunk: Buffer): void => {
      const total = body.size + chunk.byteLength;
      if (total > limit) return fail(tooLarge(limit));
      body.push(chunk);
      const allowed = allowance?.grow(total);
      if (allowed !== undefined) wait(allowed);
    };
    const onEnd = (): void => {
      if (done) return;
      if (waiting !== undefined) {
        // The last bytes arrived while their allowance is still awaited: answer once it is granted.
        void waiting.then(onEnd);
        return;
      }
      cleanup();
      resolve(body.finish());
    };
    const onError = (error: Error): void => {
      fail(new TollgateError('invalid_request', 'The request body could not be read.', { cause: error }));
    };
    const onAborted = (): void => {
      fail(new TollgateError('client_closed_request', 'The client closed the connection while sending the body.'));
    };
    incoming.on('data', onData);
    incoming.on('end', onEnd);
    incoming.on('error', onError);
    incoming.on('aborted', onAborted);
    // The declared size is asked for before a byte is read: a large body waits with its bytes unread.
    const allowed = allowance?.grow(0, declared);
    if (allowed !== undefined) wait(allowed);
  });
}
