/**
 * What crosses the proxy towards the upstream, end to end: the real `openai`
 * and `@anthropic-ai/sdk` clients send their own headers (SDK telemetry, beta
 * flags, API version) plus whatever a hostile tenant adds; the fake upstream
 * records what it received. Every header an SDK sent is compared with what
 * arrived: the SDKs' own arrive unchanged; method overrides, forwarding
 * headers, the proxy's account selectors and the tenant's key do not.
 */
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RecordedRequest } from '../../../src/demo/fake-upstream/index.js';
import { isForwardedToUpstream } from '../../../src/http/headers.js';
import { startTestProxy, UPSTREAM_KEY, type TestProxy } from '../../support/proxy.js';

let proxy: TestProxy;

beforeAll(async () => {
  proxy = await startTestProxy();
});
afterAll(async () => {
  await proxy.close();
});

/** What a hostile tenant adds to an SDK call. */
const HOSTILE = {
  'X-HTTP-Method-Override': 'DELETE',
  'X-Forwarded-Prefix': '/internal',
  'X-Forwarded-Host': 'evil.example',
  'X-Original-URL': '/v1/organization/admin_api_keys',
  'OpenAI-Organization': 'org-someone-else',
  'OpenAI-Project': 'proj_someone_else',
  'X-Made-Up': 'anything',
  traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
};

/** The upstream request a proxied answer came from (Tollgate sends its request id as x-client-request-id). */
function upstreamRequestOf(requestId: string | null): RecordedRequest {
  const found = proxy.fake.requests.find((request) => request.headers['x-client-request-id'] === requestId);
  expect(found, `an upstream request for ${requestId}`).toBeDefined();
  return found!;
}

/** A fetch that remembers the headers the SDK sent with each request. */
function recordingFetch(sent: Array<Record<string, string>>): typeof fetch {
  return (input, init) => {
    sent.push(Object.fromEntries(new Headers(init?.headers)));
    return fetch(input, init);
  };
}

/** Each header the SDK sent arrived unchanged if it is on the allowlist, and not at all otherwise (credentials are the proxy's). */
function expectAllowlistApplied(sent: Record<string, string>, received: RecordedRequest['headers']): void {
  for (const [name, value] of Object.entries(sent)) {
    if (name === 'content-type' || name === 'accept-encoding' || name === 'authorization' || name === 'x-api-key') continue;
    if (isForwardedToUpstream(name)) expect(received[name], name).toBe(value);
    else expect(received[name], name).toBeUndefined();
  }
}

function expectNoHostileHeaders(received: RecordedRequest['headers']): void {
  for (const name of ['x-http-method-override', 'x-forwarded-prefix', 'x-forwarded-host', 'x-original-url', 'x-made-up', 'openai-project']) {
    expect(received[name], name).toBeUndefined();
  }
  expect(received['openai-organization']).toBeUndefined();
  expect(JSON.stringify(received)).not.toContain(proxy.key);
}

describe('headers sent upstream', () => {
  it("carry the OpenAI SDK's own headers and none a tenant invents", async () => {
    const sent: Array<Record<string, string>> = [];
    const client = new OpenAI({ baseURL: proxy.baseURL, apiKey: proxy.key, maxRetries: 0, fetch: recordingFetch(sent) });
    const answer = await client.chat.completions
      .create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hi' }] }, { headers: { ...HOSTILE, 'OpenAI-Beta': 'assistants=v2' } })
      .withResponse();
    const received = upstreamRequestOf(answer.response.headers.get('x-request-id')).headers;
    for (const name of [
      'x-stainless-lang',
      'x-stainless-package-version',
      'x-stainless-os',
      'x-stainless-arch',
      'x-stainless-runtime',
      'x-stainless-runtime-version',
      'x-stainless-retry-count',
    ]) {
      expect(received[name], name).toEqual(expect.any(String));
    }
    expect(received['x-stainless-lang']).toBe('js');
    expect(received['user-agent']).toMatch(/^OpenAI\/JS /);
    expect(received['openai-beta']).toBe('assistants=v2');
    expect(received.traceparent).toBe(HOSTILE.traceparent);
    expect(received.authorization).toBe(`Bearer ${UPSTREAM_KEY}`);
    expectAllowlistApplied(sent[0]!, received);
    expectNoHostileHeaders(received);
  });

  it("carry the Anthropic SDK's own headers and a coding agent's session, and none a tenant invents", async () => {
    const sent: Array<Record<string, string>> = [];
    const client = new Anthropic({ baseURL: proxy.anthropicBaseURL, apiKey: proxy.key, maxRetries: 0, fetch: recordingFetch(sent) });
    const answer = await client.messages
      .create(
        { model: 'claude-opus-4-6', max_tokens: 16, messages: [{ role: 'user', content: 'Hi' }] },
        { headers: { ...HOSTILE, 'anthropic-beta': 'interleaved-thinking-2025-05-14', 'X-Claude-Code-Session-Id': 'a1b2c3d4-session', 'x-app': 'cli' } },
      )
      .withResponse();
    const received = upstreamRequestOf(answer.response.headers.get('x-request-id')).headers;
    expect(received['anthropic-version']).toBe(sent[0]!['anthropic-version']);
    expect(received['anthropic-beta']).toBe('interleaved-thinking-2025-05-14');
    expect(received['x-stainless-lang']).toBe('js');
    expect(received['x-stainless-package-version']).toEqual(expect.any(String));
    expect(received['user-agent']).toMatch(/^Anthropic\/JS /);
    expect(received['x-claude-code-session-id']).toBe('a1b2c3d4-session');
    expect(received['x-app']).toBe('cli');
    expect(received['x-api-key']).toBe(UPSTREAM_KEY);
    expectAllowlistApplied(sent[0]!, received);
    expectNoHostileHeaders(received);
  });
});
