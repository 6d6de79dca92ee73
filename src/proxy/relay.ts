/**
 * Relaying an upstream SSE stream to the client: chunk by chunk through the
 * tap, ending cleanly (with an error event in the stream's own dialect) when
 * the upstream breaks or goes silent, and aborting the upstream when the
 * client goes away.
 */
import type { ErrorCode } from '../errors.js';
import type { FinalStatus } from '../ledger/writer.js';
import type { SseTap } from './sse.js';
import { toUpstreamError, type UpstreamResponse } from './upstream.js';
import type { Endpoint } from './usage.js';

/**
 * Relays an upstream SSE body to the client chunk by chunk. Calls `onEnd`
 * exactly once, however the stream ends: finished, upstream broke or went
 * silent (the client gets an error event, then a clean end), or the client
 * went away (the upstream request is aborted).
 */
export function relayStream(
  response: UpstreamResponse,
  tap: SseTap,
  endpoint: Endpoint,
  abort: AbortController,
  onEnd: (outcome: FinalStatus, errorCode: string | undefined) => void,
): ReadableStream<Uint8Array> {
  const chunks = response.body[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  let ended = false;
  const end = (outcome: FinalStatus, errorCode: string | undefined): void => {
    if (ended) return;
    ended = true;
    onEnd(outcome, errorCode);
  };
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        for (;;) {
          let step: IteratorResult<Buffer>;
          try {
            step = await chunks.next();
          } catch (error) {
            if (abort.signal.aborted) {
              end('client_aborted', 'client_aborted');
              return;
            }
            const failure = toUpstreamError(error);
            const tail = tap.finish();
            if (tail !== null) controller.enqueue(tail);
            const code: ErrorCode = failure.code === 'upstream_timeout' ? 'upstream_timeout' : 'upstream_bad_response';
            controller.enqueue(streamErrorEvent(endpoint, code, 'The upstream stream was interrupted before it finished.'));
            controller.close();
            end(failure.code === 'upstream_timeout' ? 'upstream_timeout' : 'upstream_interrupted', 'upstream_stream_interrupted');
            return;
          }
          if (step.done) {
            const tail = tap.finish();
            if (tail !== null) controller.enqueue(tail);
            controller.close();
            if (tap.error !== undefined) end('upstream_error', tap.error.code ?? 'upstream_stream_error');
            else if (tap.finished) end('ok', undefined);
            else end('upstream_interrupted', 'upstream_stream_truncated');
            return;
          }
          const forward = tap.push(step.value);
          if (forward !== null) {
            controller.enqueue(forward);
            return;
          }
        }
      },
      cancel() {
        abort.abort();
        response.body.destroy();
        end('client_aborted', 'client_aborted');
      },
    },
    { highWaterMark: 0 },
  );
}

/** An error event in the stream's own dialect, so the client's SDK raises an APIError. */
function streamErrorEvent(endpoint: Endpoint, code: ErrorCode, message: string): Uint8Array {
  const error = { message, type: 'upstream_error', param: null, code };
  const text =
    endpoint === 'responses'
      ? `event: error\ndata: ${JSON.stringify({ type: 'error', code, message, param: null })}\n\n`
      : `data: ${JSON.stringify({ error })}\n\n`;
  return Buffer.from(text);
}
