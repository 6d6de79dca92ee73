/**
 * The client's own bytes reach the upstream: the ids coding agents send (Codex's
 * `x-client-request-id`, `session-id`, `thread-id`, `originator`; Claude Code's
 * `x-claude-code-session-id` and `anthropic-*`) arrive as sent, and Tollgate's own request id
 * travels in `x-tollgate-request-id` — on billed requests, Anthropic's free token count and the
 * model listing. A client that sends no `x-client-request-id` has Tollgate's id there.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RecordedRequest } from '../../../src/demo/fake-upstream/index.js';
import { startTestProxy, type TestProxy } from '../../support/proxy.js';

let proxy: TestProxy;

beforeAll(async () => {
  proxy = await startTestProxy();
});
afterAll(async () => {
  await proxy.close();
});

/** What the fake upstream received for the answer that carried `requestId`. */
function received(requestId: string | null): RecordedRequest['headers'] {
  const found = proxy.fake.requests.find((request) => request.headers['x-tollgate-request-id'] === requestId);
  expect(found, `an upstream request for ${requestId}`).toBeDefined();
  return found!.headers;
}

const CODEX = {
  'x-client-request-id': '019a8c1e-codex-session-7f3d',
  'session-id': '019a8c1e-codex-session-7f3d',
  'thread-id': '019a8c1e-thread-0001',
  originator: 'codex_exec',
};

const CLAUDE_CODE = {
  'x-claude-code-session-id': '5b1c2d3e-claude-session',
  'anthropic-version': '2023-06-01',
  'anthropic-beta': 'claude-code-20250219,interleaved-thinking-2025-05-14',
  'x-app': 'cli',
};

describe('client ids sent upstream', () => {
  it("Codex's ids arrive as sent on the Responses API; Tollgate's id in x-tollgate-request-id", async () => {
    const response = await fetch(`${proxy.baseURL}/responses`, {
      method: 'POST',
      headers: { authorization: `Bearer ${proxy.key}`, 'content-type': 'application/json', ...CODEX },
      body: JSON.stringify({ model: 'gpt-4.1-mini', input: 'Hi', stream: true }),
    });
    await response.text();
    const requestId = response.headers.get('x-request-id');
    expect(requestId).toMatch(/^req_/);
    const headers = received(requestId);
    for (const [name, value] of Object.entries(CODEX)) expect(headers[name], name).toBe(value);
  });

  it("Claude Code's ids arrive as sent on Messages and its free token count", async () => {
    const send = (path: string, body: unknown) =>
      fetch(`${proxy.anthropicBaseURL}${path}`, {
        method: 'POST',
        headers: { 'x-api-key': proxy.key, 'content-type': 'application/json', ...CLAUDE_CODE },
        body: JSON.stringify(body),
      });
    const messages = [{ role: 'user', content: 'Hi' }];
    for (const response of [
      await send('/v1/messages', { model: 'claude-opus-4-6', max_tokens: 100, messages }),
      await send('/v1/messages/count_tokens', { model: 'claude-opus-4-6', messages }),
    ]) {
      expect(response.status).toBe(200);
      await response.text();
      const headers = received(response.headers.get('x-request-id'));
      for (const [name, value] of Object.entries(CLAUDE_CODE)) expect(headers[name], name).toBe(value);
      expect(headers['x-client-request-id']).toBe(response.headers.get('x-request-id'));
    }
  });

  it("without a client id of its own, x-client-request-id carries Tollgate's (chat and the model listing)", async () => {
    const chat = await fetch(`${proxy.baseURL}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${proxy.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hi' }] }),
    });
    await chat.json();
    const models = await fetch(`${proxy.baseURL}/models`, { headers: { authorization: `Bearer ${proxy.key}`, 'x-client-request-id': 'mine-1' } });
    await models.json();
    const chatId = chat.headers.get('x-request-id');
    expect(received(chatId)['x-client-request-id']).toBe(chatId);
    expect(received(models.headers.get('x-request-id'))['x-client-request-id']).toBe('mine-1');
  });
});
