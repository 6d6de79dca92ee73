/**
 * Where a relayed stream's bytes go. Served by Node, straight to the
 * `ServerResponse`: a web `ReadableStream` pulled through an async iterator
 * between the relay and the socket cost about a fifth of the proxy's CPU per
 * relayed chunk (README, "Many open streams"). In-process (`app.request`,
 * tests) there is no Node response, so the same source feeds a web stream.
 * One source, two thin sinks: the relay's logic is written once
 * (src/pipeline/relay.ts).
 */
import type { ServerResponse } from 'node:http';

/** What a sink writes to. */
export interface StreamSink {
  /** Writes bytes now; false when the client's buffer is full (the source waits for `resume`). */
  write(bytes: Uint8Array): boolean;
  /** Ends the response cleanly. */
  end(): void;
}

/** A stream of bytes that a sink drives. */
export interface StreamSource {
  /** Begins sending into `sink`. Called once. */
  start(sink: StreamSink): void;
  /** The client's buffer drained: send again. */
  resume(): void;
  /** The client went away before the end: send nothing more (the relay reads the upstream on to its usage). */
  cancel(): void;
}

/** The source as a web stream that takes nothing ahead of its reader (for `new Response(…)`). */
export function toWebStream(source: StreamSource): ReadableStream<Uint8Array> {
  let open = true;
  return new ReadableStream<Uint8Array>(
    {
      start(controller) {
        source.start({
          write(bytes) {
            if (!open) return false;
            controller.enqueue(bytes);
            return (controller.desiredSize ?? 0) > 0;
          },
          end() {
            if (!open) return;
            open = false;
            controller.close();
          },
        });
      },
      pull() {
        source.resume();
      },
      cancel() {
        open = false;
        source.cancel();
      },
    },
    { highWaterMark: 0 },
  );
}

const ALREADY_SENT = 'x-hono-already-sent';

/** Responses whose bytes go straight to a Node response, and how to send them once final. */
const deferred = new WeakMap<Response, (headers: Headers) => void>();

/**
 * A response written straight to `outgoing`. What the handler returns is a
 * placeholder that @hono/node-server leaves alone (its "already sent" header);
 * nothing is written until `sendDeferred` is handed the final response, after
 * every middleware had its say on the headers (the app's outermost middleware
 * calls it), so the client sees the same headers as on any other response.
 */
export function nodeStreamResponse(
  outgoing: ServerResponse,
  status: number,
  headers: Record<string, string>,
  source: StreamSource,
  buffered: () => boolean,
): Response {
  const response = new Response(null, { status, headers: { ...headers, [ALREADY_SENT]: 'true' } });
  // @hono/node-server writes its own lightweight Responses itself, "already sent" or not; reading
  // `body` makes this a standard Response, which it leaves alone when it carries that header.
  void response.body;
  // Should the placeholder never be sent (a bug on the way out), the client's leaving still
  // reaches the relay, which reads the upstream on to its usage and settles the request.
  let started = false;
  outgoing.once('close', () => {
    if (!started) source.cancel();
  });
  deferred.set(response, (final) => {
    started = true;
    if (outgoing.destroyed) {
      source.cancel(); // the client left while the handler ran
      return;
    }
    const record: Record<string, string> = {};
    for (const [name, value] of final) if (name !== ALREADY_SENT) record[name] = value;
    outgoing.writeHead(status, record);
    // Headers go out with the first chunk when it is already here; otherwise now,
    // so the client knows it was answered before the first token.
    if (!buffered()) outgoing.flushHeaders();
    let finished = false;
    outgoing.on('drain', () => source.resume());
    outgoing.once('close', () => {
      if (!finished) source.cancel();
    });
    source.start({
      write(bytes) {
        if (finished || outgoing.destroyed) return false;
        return outgoing.write(bytes);
      },
      end() {
        if (finished) return;
        finished = true;
        if (!outgoing.destroyed) outgoing.end();
      },
    });
  });
  return response;
}

/** Starts writing `response` if it is a `nodeStreamResponse` (once); anything else is left to @hono/node-server. */
export function sendDeferred(response: Response): void {
  const send = deferred.get(response);
  if (send === undefined) return;
  deferred.delete(response);
  send(response.headers);
}
