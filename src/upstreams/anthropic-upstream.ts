/**
 * The Anthropic upstream: the proxy's own Anthropic key in `x-api-key`, the client's
 * `anthropic-version` (or the configured default when it sent none), and Anthropic's answer
 * headers made to read like the rest of Tollgate's: its `request-id` becomes the upstream
 * request id, and the headers that describe the proxy's Anthropic account (organization id,
 * its rate limits on a successful answer) stay with the proxy.
 *
 * This is the one seam between the Messages route and its upstream (PipelineDeps.anthropic):
 * config-file upstreams with routing (issue 14, part A) replace it by handing the route an
 * {@link Upstream} of kind Anthropic native.
 */
import { createUpstream, type Upstream, type UpstreamOptions } from './pool.js';
import { ReheadedAnswer } from './upstream-answer.js';

export interface AnthropicUpstreamOptions extends Omit<UpstreamOptions, 'url' | 'apiKey'> {
  /** Base URL without the version path, as Anthropic's SDKs take it (https://api.anthropic.com). */
  readonly url: string;
  /** The proxy's Anthropic key; absent = none is sent (the upstream answers 401). */
  readonly apiKey: string | undefined;
  /** `anthropic-version` sent when the client sent none. */
  readonly version: string;
}

/** Creates the pooled Anthropic client (the pool itself is the OpenAI one's, without its bearer key). */
export function createAnthropicUpstream(options: AnthropicUpstreamOptions): Upstream {
  const base = options.url.replace(/\/+$/, '').replace(/\/v1$/, '');
  const pool = createUpstream({ ...options, url: `${base}/v1`, apiKey: undefined });
  return {
    async send(request) {
      const headers: Record<string, string> = { ...request.headers };
      if (options.apiKey !== undefined) headers['x-api-key'] = options.apiKey;
      headers['anthropic-version'] ??= options.version;
      const response = await pool.send({ ...request, headers });
      return new ReheadedAnswer(response, fromAnthropicHeaders(response.headers, response.status));
    },
    close: () => pool.close(),
  };
}

/** Anthropic's answer headers as the relay reads them (see the module comment). */
export function fromAnthropicHeaders(headers: Record<string, string | string[] | undefined>, status: number): Record<string, string | string[] | undefined> {
  const out: Record<string, string | string[] | undefined> = {};
  const ok = status < 400;
  for (const [name, value] of Object.entries(headers)) {
    if (name === 'anthropic-organization-id') continue;
    if (ok && name.startsWith('anthropic-ratelimit-')) continue;
    out[name] = value;
  }
  if (typeof headers['request-id'] === 'string' && headers['x-request-id'] === undefined) out['x-request-id'] = headers['request-id'];
  return out;
}
