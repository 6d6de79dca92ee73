/**
 * The upstream check (docs/upstreams.md, "The start-up check"): each upstream's
 * `GET /models` (below its base URL, with its own key and headers), asked once
 * when Tollgate starts and again, at most every `intervalMs`, when /readyz is
 * read. A provider that rejects Tollgate's key, or a base URL that does not
 * serve the API (one missing its `/v1`), fails every request the same way; the
 * operator hears it at start, loudly, not from a tenant later.
 *
 * Off the request path: nothing waits for it but a test; each probe has a
 * short timeout, and /readyz answers from the last results. Logs name an
 * upstream and its URL redacted (src/redact-url.ts); /readyz names it only.
 */
import type { Logger } from '../logger.js';
import { redactUrl } from '../redact-url.js';
import type { Upstream, UpstreamRequest, UpstreamResponse } from './pool.js';
import type { Router } from './router.js';

/** What a probe found. */
type ProbeState =
  /** `/models` answered 2xx. */
  | 'ok'
  /** 401: the provider rejected the key. */
  | 'key_rejected'
  /** 403: the key is refused this listing (a restricted key may still serve requests). */
  | 'key_refused'
  /** 404: the base URL does not serve the API's paths. */
  | 'path_not_found'
  /** Another status, or no answer: a provider outage, not the configuration. */
  | 'unavailable'
  /** Not probed yet. */
  | 'unknown';

/** One upstream's latest probe, as /readyz shows it. */
interface ProbeResult {
  readonly name: string;
  readonly state: ProbeState;
  /** The upstream's HTTP status; null when it did not answer. */
  readonly status: number | null;
  /** Why it is not ok, for the operator; no URL, no key. */
  readonly message?: string;
  /** When it was probed (ms since the epoch); null before the first probe. */
  readonly checkedAt: number | null;
  /** No request can succeed through this upstream until its configuration is fixed: /readyz answers 503. */
  readonly misconfigured: boolean;
}

/** An upstream to probe. */
export interface ProbeTarget {
  readonly name: string;
  /** Its base URL (logged redacted). */
  readonly url: string;
  /** Where its key comes from, as the operator set it (for the log). */
  readonly keySource: string;
  /** Sends a request below the base URL with the upstream's key and headers. */
  send(request: UpstreamRequest): Promise<UpstreamResponse>;
}

export interface ProbeOptions {
  readonly logger: Logger;
  readonly now: () => number;
  /** Longest one probe waits for its answer. Default 5 000 ms. */
  readonly timeoutMs?: number;
  /** /readyz probes again when the last probe is older than this. Default 30 000 ms. */
  readonly intervalMs?: number;
}

/** The latest probe of every upstream, and the probing. */
export interface UpstreamProbe {
  /** Probes every upstream now; resolves when all have answered or timed out (never rejects). */
  probe(): Promise<readonly ProbeResult[]>;
  /** The latest results; starts a new probe in the background when they are older than the interval. */
  latest(): readonly ProbeResult[];
}

/**
 * What Tollgate probes: every routed upstream, and the Anthropic upstream of
 * TOLLGATE_ANTHROPIC_URL when the Messages API goes there (no Anthropic
 * upstream in the config) and it has a key (`anthropic` is undefined
 * otherwise: without a key it is not in use, and is not asked).
 */
export function probeTargetsOf(router: Router, anthropic: { readonly upstream: Upstream; readonly url: string } | undefined): ProbeTarget[] {
  const targets: ProbeTarget[] = router.upstreams.map((u) => ({
    name: u.name,
    url: u.spec.url,
    keySource: router.shorthand ? 'TOLLGATE_UPSTREAM_KEY' : `the keyEnv of upstream "${u.name}"`,
    send: (request) => u.send(request),
  }));
  const routesAnthropic = router.upstreams.some((u) => u.spec.kind === 'anthropic');
  if (anthropic !== undefined && !routesAnthropic) {
    // Its client adds the version path itself (anthropic-upstream.ts): the URL it serves below.
    const url = `${anthropic.url.replace(/\/+$/, '').replace(/\/v1$/, '')}/v1`;
    targets.push({ name: 'anthropic', url, keySource: 'TOLLGATE_ANTHROPIC_KEY', send: (request) => anthropic.upstream.send(request) });
  }
  return targets;
}

/** A version segment in a base URL's path (`/v1`, `/v1beta`, `/openai/v1`): its 404 is a real answer about `/models`. */
const VERSION_PATH = /\/v\d+[a-z0-9]*(\/|$)/i;

/** Bytes read from a probe's answer: an error object or a model list's start; the rest is discarded. */
const MAX_BODY_BYTES = 16 * 1024;

export function createUpstreamProbe(targets: readonly ProbeTarget[], options: ProbeOptions): UpstreamProbe {
  const { logger, now } = options;
  const timeoutMs = options.timeoutMs ?? 5000;
  const intervalMs = options.intervalMs ?? 30_000;
  let results: ProbeResult[] = targets.map((t) => ({ name: t.name, state: 'unknown', status: null, checkedAt: null, misconfigured: false }));
  let running: Promise<readonly ProbeResult[]> | undefined;
  let lastStarted: number | undefined;

  const probeAll = (): Promise<readonly ProbeResult[]> => {
    if (running !== undefined) return running;
    lastStarted = now();
    const first = results.every((r) => r.checkedAt === null);
    running = Promise.all(targets.map((target) => probeOne(target, timeoutMs, now))).then((fresh) => {
      fresh.forEach((result, i) => {
        // Said once at start, then only when it changes: /readyz probes every interval.
        if (first || result.state !== results[i]!.state) logResult(logger, targets[i]!, result);
      });
      results = fresh;
      running = undefined;
      return fresh;
    });
    return running;
  };

  return {
    probe: probeAll,
    latest() {
      if (lastStarted !== undefined && now() - lastStarted >= intervalMs) void probeAll();
      return results;
    },
  };
}

async function probeOne(target: ProbeTarget, timeoutMs: number, now: () => number): Promise<ProbeResult> {
  const { name } = target;
  let status: number;
  try {
    // Named as Tollgate's check, so an upstream's logs (and the fake's record) tell it from a client's request.
    const response = await target.send({ method: 'GET', path: '/models', headers: { 'x-tollgate-probe': '1' }, signal: AbortSignal.timeout(timeoutMs) });
    status = response.status;
    await drain(response);
  } catch (error) {
    const code = (error as { code?: unknown } | null)?.code;
    const message = `no answer from the upstream${typeof code === 'string' ? ` (${code})` : ''}`;
    return { name, state: 'unavailable', status: null, message, checkedAt: now(), misconfigured: false };
  }
  const checkedAt = now();
  if (status >= 200 && status < 300) return { name, state: 'ok', status, checkedAt, misconfigured: false };
  if (status === 401) {
    const message = `the provider rejected the provider key (${target.keySource}): every request through it fails`;
    return { name, state: 'key_rejected', status, message, checkedAt, misconfigured: true };
  }
  if (status === 403) {
    const message = 'the provider refused the provider key access to /models: the key may lack permissions or the account access';
    return { name, state: 'key_refused', status, message, checkedAt, misconfigured: false };
  }
  if (status === 404) {
    const versioned = VERSION_PATH.test(urlPath(target.url));
    const message = versioned
      ? '/models not found: the upstream may not serve model listings, or the base URL is wrong'
      : '/models not found: is the base URL missing /v1?';
    // Without a version path no API request can be served there; with one, it may be only /models that is missing.
    return { name, state: 'path_not_found', status, message, checkedAt, misconfigured: !versioned };
  }
  return { name, state: 'unavailable', status, message: `the upstream answered ${status}`, checkedAt, misconfigured: false };
}

function logResult(logger: Logger, target: ProbeTarget, result: ProbeResult): void {
  const fields = { upstream: target.name, url: redactUrl(target.url), status: result.status, state: result.state };
  switch (result.state) {
    case 'ok':
      logger.info(fields, `upstream ${target.name} answered /models: reachable and the provider key is accepted`);
      return;
    case 'key_rejected':
      logger.error(
        fields,
        `UPSTREAM KEY REJECTED: the provider rejected ${target.keySource} for ${target.name} (${fields.url}); every request to it will fail until the key is fixed`,
      );
      return;
    case 'key_refused':
      logger.error(
        fields,
        `UPSTREAM KEY REFUSED: the provider refused the provider key access for ${target.name} (${fields.url}) (403); check the key's permissions`,
      );
      return;
    case 'path_not_found':
      logger.error(fields, `UPSTREAM PATH NOT FOUND: ${fields.url}/models not found: is the base URL missing /v1? (upstream ${target.name})`);
      return;
    default:
      logger.warn(fields, `upstream ${target.name} could not be checked: ${result.message ?? 'no answer'}`);
  }
}

/** Reads up to {@link MAX_BODY_BYTES} of the answer and drops the rest, so its connection goes back to the pool. */
async function drain(response: UpstreamResponse): Promise<void> {
  let read = 0;
  try {
    for await (const chunk of response.body) {
      read += (chunk as Buffer).length;
      if (read > MAX_BODY_BYTES) break;
    }
  } finally {
    if (!response.body.readableEnded) {
      // undici reports a destroyed body as an error: nobody is reading it any more.
      response.body.once('error', () => undefined);
      response.body.destroy();
    }
  }
}

function urlPath(url: string): string {
  try {
    return new URL(url).pathname;
  } catch {
    return '';
  }
}
