/**
 * Stage 5, relay: the upstream's answer goes back to the client as it came.
 * JSON is read whole (usage is at its end) and passed on unchanged; SSE goes
 * chunk by chunk through a tap that notes usage, time to first token and the
 * text streamed so far, ending cleanly (with an error event in the stream's
 * own dialect) when the upstream breaks or goes silent. A stream whose
 * completion reaches what its budget or cost cap allows is ended there as if
 * by its output limit, and its upstream aborted (README, "Budgets are hard
 * caps").
 *
 * A client that leaves does not end its request: the upstream bills what it
 * generated, hidden reasoning included, and only its usage says how much. A
 * JSON answer is read to its end; a stream stops being relayed but is read on
 * through the same tap until its usage arrives (or it ends, breaks, goes
 * silent, or reaches its allowance: then the upstream is aborted and the
 * request settled at its reservation, settle.ts rule 4). The request keeps its
 * in-flight slot, buckets and budget reservation until then. A background
 * Response is not read on: the poller settles it (src/responses).
 * Either way the request is settled once when its answer ends.
 */
import { identityOfJsonHead } from '../dialects/answer-identity.js';
import { dialectOf, type Dialect } from '../dialects/index.js';
import { needsUsageInjection } from '../dialects/request-edits.js';
import { SseTap } from '../dialects/sse-tap.js';
import { rewordUpstreamError, UPSTREAM_ERROR_HEADER, upstreamCode } from '../dialects/upstream-errors.js';
import { TollgateError, type ErrorCode } from '../domain/errors.js';
import { isEventStream, toClientHeaders } from '../http/headers.js';
import { nodeStreamResponse, toWebStream, type StreamSink, type StreamSource } from '../http/stream-sinks.js';
import { redactProviderAccount } from '../upstreams/redact.js';
import type { FinalStatus } from '../storage/ledger.js';
import { toUpstreamError, type UpstreamResponse } from '../upstreams/pool.js';
import type { UpstreamStop } from '../upstreams/upstream-stop.js';
import type { AdmittedRequest } from './context.js';
import type { PipelineDeps } from './deps.js';
import { addReceiptHeaders, receiptComment } from './receipt.js';
import { settleForwarded, SHUTDOWN_ERROR_CODE, stopForwarded } from './settle.js';

/** Stage 5: the client's response; the request is settled when its answer ends. */
export async function relay(request: AdmittedRequest, response: UpstreamResponse, deps: PipelineDeps): Promise<Response> {
  const { requestId } = request;
  const dialect = dialectOf(request.endpoint);
  const upstreamRequestId = headerValue(response.headers['x-request-id']);
  const ok = response.status >= 200 && response.status < 300;
  const clientLeft = request.client.left;
  if (isEventStream(response.headers)) {
    const allowance = request.completionAllowance;
    const countText = (text: string): number => dialect.countCompletion(text, request.facts.model);
    const tap = new SseTap({
      dialect,
      stripUsageChunk: needsUsageInjection(dialect, request.facts),
      now: deps.now,
      ...(allowance === undefined ? {} : { allowance: { tokens: allowance, count: countText } }),
      noteIdentity: deps.tracing !== undefined,
    });
    const cutEnding = (): Uint8Array => tap.cutEnding(request.estimate.promptTokens, request.facts.clientWantsUsage);
    // A stored Response is its key's from its first event on (the client may look it up at once).
    let remembered = !ok || dialect.storedResponses === undefined || deps.responses === undefined;
    const onChunk = (): void => {
      if (remembered || tap.responseId === undefined) return;
      remembered = true;
      deps.responses?.created(request, tap.responseId);
    };
    const source = relayStream({
      response,
      tap,
      dialect,
      upstream: request.upstreamAbort,
      // A background job runs on upstream whoever reads it; the poller settles it.
      readOnWhenClientLeaves: !(dialect.storedResponses !== undefined && request.body.background === true),
      onChunk,
      cutEnding,
      receipt: () => receiptComment(request),
      onEnd: (outcome, errorCode) => {
        const usage = tap.usage;
        if (tap.identity !== undefined) request.answerIdentity = tap.identity;
        settleForwarded(
          request,
          {
            outcome: ok ? outcome : 'upstream_error',
            status: response.status,
            accepted: ok,
            usage,
            // A stream that reports its exact prompt first (Anthropic's): kept when the stream ends early.
            promptUsage: usage === undefined ? tap.promptUsage : undefined,
            complete: tap.finished && tap.error === undefined,
            streamedText: usage === undefined ? tap.completionText() : '',
            // With an allowance, the count the stream was watched (and maybe cut) by.
            countedTokens: usage === undefined && allowance !== undefined ? tap.streamedTokens() : undefined,
            firstTokenAt: tap.firstTokenTime,
            upstreamRequestId,
            errorCode,
            responseId: tap.responseId,
            outputItemIds: tap.outputItemIds,
          },
          deps,
        );
      },
    });
    deps.open?.track(request, () => source.stop());
    // The client may have left while the headers were awaited, or leave before the sink starts.
    if (clientLeft.aborted) source.cancel();
    else clientLeft.addEventListener('abort', () => source.cancel(), { once: true });
    // Onto the fresh header set, not a spread of both (context.ts, Whole).
    const headers = Object.assign(toClientHeaders(response.headers, requestId, true, response.status), request.admission.headers);
    if (!ok) headers[UPSTREAM_ERROR_HEADER] = String(response.status);
    const outgoing = request.client.outgoing;
    if (outgoing === undefined) return new Response(toWebStream(source), { status: response.status, headers });
    return nodeStreamResponse(outgoing, response.status, headers, source, () => response.body.readableLength > 0);
  }

  // Read to its end even when the client left: the upstream bills the whole answer.
  deps.open?.track(request, () => stopForwarded(request, { status: response.status, accepted: ok, upstreamRequestId }, deps));
  let answer: Buffer;
  try {
    answer = await response.whole();
  } catch (error) {
    const failure = toUpstreamError(error);
    const clientGone = clientLeft.aborted;
    settleForwarded(
      request,
      {
        outcome: clientGone ? 'client_aborted' : failure.code === 'upstream_timeout' ? 'upstream_timeout' : 'upstream_interrupted',
        status: response.status,
        accepted: ok,
        usage: undefined,
        complete: false,
        streamedText: '',
        firstTokenAt: undefined,
        upstreamRequestId,
        errorCode: request.upstreamAbort.aborted ? SHUTDOWN_ERROR_CODE : failure.code,
      },
      deps,
    );
    throw clientGone ? new TollgateError('client_closed_request', 'The client closed the request.') : failure;
  }
  const usage = ok ? dialect.usageOfJson(answer) : undefined;
  if (ok && deps.tracing !== undefined) request.answerIdentity = identityOfJsonHead(answer);
  const stored = ok && deps.responses !== undefined ? dialect.storedResponses : undefined;
  const responseId = stored?.idOfJson(answer);
  if (responseId !== undefined) deps.responses?.created(request, responseId);
  settleForwarded(
    request,
    {
      outcome: !ok ? 'upstream_error' : clientLeft.aborted ? 'client_aborted' : 'ok',
      status: response.status,
      accepted: ok,
      usage,
      complete: true,
      streamedText: ok && usage === undefined ? dialect.completionTextOfJson(answer) : '',
      firstTokenAt: undefined,
      upstreamRequestId,
      errorCode: ok ? undefined : (upstreamCode(answer, dialect) ?? 'upstream_error'),
      responseId,
      outputItemIds: responseId === undefined ? undefined : stored?.itemIdsOfJson(answer),
    },
    deps,
  );
  const headers = addReceiptHeaders(toClientHeaders(response.headers, requestId, false, response.status), request);
  if (ok) return new Response(asBody(answer), { status: response.status, headers: Object.assign(headers, request.admission.headers) });
  // A refused provider key or a wrong base path is the operator's to fix: said so, the upstream's words withheld.
  // Other error answers name the proxy's provider account (organization, project): masked for tenants.
  const reworded = rewordUpstreamError(dialect, response.status, answer, requestId);
  const body = reworded?.body ?? redactProviderAccount(answer);
  if (body !== answer) delete headers['content-length'];
  if (reworded !== undefined) {
    delete headers['content-encoding'];
    headers['content-type'] = 'application/json';
    headers['x-tollgate-error-code'] = reworded.code;
  }
  headers[UPSTREAM_ERROR_HEADER] = String(response.status);
  return new Response(asBody(body), { status: response.status, headers: Object.assign(headers, request.admission.headers) });
}

/** What {@link relayStream} relays, and how it ends. */
interface RelayedStream {
  readonly response: UpstreamResponse;
  readonly tap: SseTap;
  readonly dialect: Dialect;
  /** Aborts the upstream request (a cut, a stop): Tollgate's, not the client's. */
  readonly upstream: UpstreamStop;
  /** Read the upstream on until its usage when the client leaves (else stop reading at once). */
  readonly readOnWhenClientLeaves: boolean;
  readonly onChunk: () => void;
  readonly cutEnding: () => Uint8Array;
  /** The receipt comment the client's stream ends with, once `onEnd` settled the request (receipt.ts). */
  readonly receipt: () => Uint8Array | null;
  /** Called exactly once, however the stream ends; the tap says what it saw. */
  readonly onEnd: (outcome: FinalStatus, errorCode: string | undefined) => void;
}

/** A relayed stream that a shutdown can also stop. */
interface RelaySource extends StreamSource {
  /** Ends the stream now: its upstream aborted, the request settled at its reservation. */
  stop(): void;
}

/**
 * Relays an upstream SSE body to the client as it arrives: each upstream read
 * is written at once (never held back for the next), and the upstream is
 * paused while the client's buffer is full. Calls `onEnd` exactly once,
 * however the stream ends: finished, upstream broke or went silent (the
 * client gets an error event, then a clean end), cut at its allowance, or
 * stopped. When the client goes away (`cancel`), nothing more is relayed, but
 * the body is read on through the tap until its usage arrives.
 */
function relayStream(relayed: RelayedStream): RelaySource {
  const { response, tap, dialect, upstream, onChunk, cutEnding, receipt, onEnd } = relayed;
  const body = response.body;
  let ended = false;
  /** The client is gone: the upstream is read for its usage only. */
  let draining = false;
  let reading = false;
  const end = (outcome: FinalStatus, errorCode: string | undefined): void => {
    if (ended) return;
    ended = true;
    body.off('data', onData);
    body.off('end', onFinished);
    onEnd(outcome, errorCode);
  };
  /** Stops the upstream generating what nobody will pay for (the request is settled first). */
  const stopUpstream = (): void => {
    upstream.abort();
    body.destroy();
  };
  let sink: StreamSink | undefined;
  let earlyError: { error: unknown } | undefined;
  /** Ends the client's stream after `end` settled the request: its receipt, then the end. */
  const closeSink = (): void => {
    const comment = receipt();
    if (comment !== null) sink!.write(comment);
    sink!.end();
  };
  const read = (): void => {
    if (reading) return;
    reading = true;
    body.on('end', onFinished);
    body.on('data', onData);
  };
  const onData = (chunk: Buffer): void => {
    const forward = tap.push(chunk);
    onChunk();
    if (draining) {
      if (tap.usage !== undefined) {
        // Settled at the usage; what follows it ([DONE], message_stop) is read and dropped.
        end('client_aborted', 'client_aborted');
        body.resume();
      } else if (tap.overAllowance) {
        end('client_aborted', 'cost_cap_reached');
        stopUpstream();
      }
      return;
    }
    if (tap.overAllowance) {
      // The request may spend no more: end the stream as its output limit
      // would have, and stop the upstream generating what nobody pays for.
      if (forward !== null) sink!.write(forward);
      sink!.write(cutEnding());
      end('cut_at_cost_cap', 'cost_cap_reached');
      closeSink();
      stopUpstream();
      return;
    }
    if (forward !== null && !sink!.write(forward)) body.pause();
  };
  const onFinished = (): void => {
    const tail = tap.finish();
    if (!draining && tail !== null) sink!.write(tail);
    const wasDraining = draining;
    const outcome = (normal: FinalStatus): FinalStatus => (draining ? 'client_aborted' : normal);
    if (tap.error !== undefined) end(outcome('upstream_error'), tap.error.code ?? 'upstream_stream_error');
    else if (tap.finished) end(outcome('ok'), draining ? 'client_aborted' : undefined);
    else end(outcome('upstream_interrupted'), 'upstream_stream_truncated');
    if (!wasDraining) closeSink();
  };
  const onError = (error: unknown): void => {
    // Stays attached after the end: aborting or destroying the body may still report an error.
    if (ended) return;
    if (sink === undefined && !draining) {
      earlyError = { error };
      return;
    }
    const failure = toUpstreamError(error);
    const timedOut = failure.code === 'upstream_timeout';
    if (draining) {
      end('client_aborted', timedOut ? 'upstream_stream_timeout' : 'upstream_stream_interrupted');
      return;
    }
    const tail = tap.finish();
    if (tail !== null) sink!.write(tail);
    const code: ErrorCode = timedOut ? 'upstream_timeout' : 'upstream_bad_response';
    sink!.write(dialect.streamErrorEvent(code, 'The upstream stream was interrupted before it finished.'));
    end(timedOut ? 'upstream_timeout' : 'upstream_interrupted', 'upstream_stream_interrupted');
    closeSink();
  };
  // From the start: the body may fail before the response is sent (src/http/stream-sinks.ts).
  body.on('error', onError);
  return {
    start(target) {
      sink = target;
      if (draining || ended) {
        target.end();
        return;
      }
      if (earlyError !== undefined) {
        onError(earlyError.error);
        return;
      }
      read();
    },
    resume() {
      if (!ended && !draining) body.resume();
    },
    cancel() {
      if (ended || draining) return;
      if (!relayed.readOnWhenClientLeaves) {
        end('client_aborted', 'client_aborted');
        stopUpstream();
        return;
      }
      draining = true;
      if (earlyError !== undefined) {
        onError(earlyError.error);
        return;
      }
      if (tap.usage !== undefined) {
        end('client_aborted', 'client_aborted');
        body.resume();
        return;
      }
      read();
      body.resume();
    },
    stop() {
      if (ended) return;
      const open = sink !== undefined && !draining;
      if (open) {
        const tail = tap.finish();
        if (tail !== null) sink!.write(tail);
        sink!.write(dialect.streamErrorEvent('upstream_unreachable', 'The stream was stopped: Tollgate is shutting down.'));
      }
      end('upstream_interrupted', SHUTDOWN_ERROR_CODE);
      if (open) closeSink();
      stopUpstream();
    },
  };
}

/** A Buffer viewed as the Uint8Array a Response body takes (no copy). */
export function asBody(bytes: Buffer): Uint8Array<ArrayBuffer> {
  return new Uint8Array(bytes.buffer as ArrayBuffer, bytes.byteOffset, bytes.byteLength);
}

function headerValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}
