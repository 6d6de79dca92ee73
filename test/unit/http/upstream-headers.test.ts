/** Which client headers reach the upstream: an allowlist of what real clients send and upstreams read; everything else stays at the proxy. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isForwardedToUpstream, toUpstreamHeaders } from '../../../src/http/headers.js';

/** Each header a client might send, and whether it reaches the upstream. */
const TABLE: ReadonlyArray<readonly [name: string, kept: boolean, why: string]> = [
  ['accept', true, 'content negotiation'],
  ['user-agent', true, 'which SDK and version'],
  ['openai-beta', true, "OpenAI's beta features"],
  ['idempotency-key', true, 'safe retries'],
  ['x-stainless-lang', true, 'SDK telemetry'],
  ['x-stainless-package-version', true, 'SDK telemetry'],
  ['x-stainless-os', true, 'SDK telemetry'],
  ['x-stainless-arch', true, 'SDK telemetry'],
  ['x-stainless-runtime', true, 'SDK telemetry'],
  ['x-stainless-runtime-version', true, 'SDK telemetry'],
  ['x-stainless-retry-count', true, 'SDK telemetry'],
  ['x-stainless-timeout', true, 'SDK telemetry'],
  ['x-stainless-helper-method', true, 'SDK telemetry'],
  ['anthropic-version', true, "Anthropic's API version"],
  ['anthropic-beta', true, "Anthropic's beta features"],
  ['anthropic-dangerous-direct-browser-access', true, "Anthropic's SDK in a browser"],
  ['traceparent', true, 'W3C trace context'],
  ['tracestate', true, 'W3C trace context'],
  ['x-claude-code-session-id', true, "Claude Code's session"],
  ['x-app', true, 'Claude Code'],
  ['originator', true, 'Codex CLI'],
  ['version', true, 'Codex CLI'],
  ['session_id', true, "Codex CLI's session"],
  ['session-id', true, "Codex CLI's session"],
  ['conversation_id', true, "Codex CLI's conversation"],
  ['thread-id', true, "Codex CLI's thread"],
  ['x-openai-subagent', true, 'Codex CLI'],
  ['x-codex-turn-state', true, 'Codex CLI'],
  ['x-codex-beta-features', true, 'Codex CLI'],
  ['x-fake-scenario', true, "the built-in fake upstream's scenario"],
  // Credentials: the proxy sends its own key.
  ['authorization', false, 'the tenant key'],
  ['api-key', false, 'the tenant key'],
  ['x-api-key', false, 'the tenant key'],
  ['cookie', false, 'a browser session'],
  ['proxy-authorization', false, 'hop-by-hop credentials'],
  // The proxy's own account.
  ['openai-organization', false, "picks the proxy's organization"],
  ['openai-project', false, "picks the proxy's project"],
  ['chatgpt-account-id', false, 'picks an account'],
  ['anthropic-workspace-id', false, 'picks a workspace'],
  // Requests that mean something else to the upstream or what sits in front of it.
  ['x-http-method-override', false, 'turns a POST into a DELETE'],
  ['x-http-method', false, 'method override'],
  ['x-method-override', false, 'method override'],
  ['x-forwarded-prefix', false, 'rewrites paths at a gateway'],
  ['x-forwarded-for', false, 'forwarding'],
  ['x-forwarded-host', false, 'forwarding'],
  ['x-forwarded-proto', false, 'forwarding'],
  ['x-real-ip', false, 'forwarding'],
  ['forwarded', false, 'forwarding'],
  ['x-original-url', false, 'rewrites paths at a gateway'],
  ['x-rewrite-url', false, 'rewrites paths at a gateway'],
  ['host', false, 'the upstream has its own'],
  ['content-length', false, 'computed for the body sent'],
  ['expect', false, 'hop-by-hop'],
  ['connection', false, 'hop-by-hop'],
  ['transfer-encoding', false, 'hop-by-hop'],
  ['te', false, 'hop-by-hop'],
  ['upgrade', false, 'hop-by-hop'],
  ['range', false, 'not an API request'],
  ['if-none-match', false, 'not an API request'],
  ['origin', false, 'browser CORS'],
  ['referer', false, 'browser navigation'],
  ['cf-connecting-ip', false, 'a CDN in front of Tollgate'],
  ['x-tollgate-max-cost-usd', false, "Tollgate's own"],
  ['x-tollgate-user', false, "Tollgate's own"],
  ['x-tollgate-tags', false, "Tollgate's own"],
  ['x-request-id', false, "a client's own id"],
  ['x-openai-internal-routing', false, 'invented'],
  ['x-anything-a-client-invents', false, 'invented'],
];

describe('client headers sent upstream', () => {
  it.each(TABLE)('%s: kept %s (%s)', (name, kept) => {
    const out = toUpstreamHeaders({ [name]: 'value' }, false);
    expect(name in out).toBe(kept);
    if (kept) expect(out[name]).toBe('value');
  });

  it('are only the allowed ones, for any set of names a client sends', () => {
    fc.assert(
      fc.property(fc.dictionary(fc.stringMatching(/^[a-z][a-z0-9_-]{0,30}$/), fc.string({ maxLength: 20 })), (incoming) => {
        const out = toUpstreamHeaders(incoming, true);
        for (const name of Object.keys(out)) {
          if (name === 'accept-encoding' || name === 'content-type') continue;
          expect(isForwardedToUpstream(name), name).toBe(true);
          expect(out[name]).toBe(incoming[name]);
        }
        for (const name of Object.keys(incoming)) if (isForwardedToUpstream(name) && incoming.connection === undefined) expect(name in out).toBe(true);
      }),
    );
  });

  it('ask for an uncompressed answer and JSON bodies, whatever the client said', () => {
    const out = toUpstreamHeaders({ 'accept-encoding': 'gzip, br', 'content-type': 'text/plain' }, true);
    expect(out['accept-encoding']).toBe('identity');
    expect(out['content-type']).toBe('application/json');
  });

  it('join a header sent several times into one value', () => {
    expect(toUpstreamHeaders({ 'anthropic-beta': ['a-2025', 'b-2025'] }, false)['anthropic-beta']).toBe('a-2025, b-2025');
  });

  it('drop an allowed header that Connection names (hop-by-hop for that message)', () => {
    const out = toUpstreamHeaders({ connection: 'Anthropic-Beta', 'anthropic-beta': 'x', 'anthropic-version': '2023-06-01' }, false);
    expect(out['anthropic-beta']).toBeUndefined();
    expect(out['anthropic-version']).toBe('2023-06-01');
  });
});
