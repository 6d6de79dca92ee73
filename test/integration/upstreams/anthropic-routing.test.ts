/**
 * Anthropic's Messages API routed by the config file (issue 14, parts A and B together): a model
 * served by `kind: anthropic` upstreams goes to them with their own key in `x-api-key`, falls back
 * past a dead one before the first byte, keeps the client's `anthropic-version`, hides the
 * provider's organization header, and is billed once, at the answering upstream's bill; the OpenAI
 * routes of the same config are unaffected. Real `@anthropic-ai/sdk` and `openai` clients.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { REFUSED_PORT } from '../../support/refused.js';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../../../src/storage/sqlite/open.js';
import type { FakeUpstream } from '../../../src/demo/fake-upstream/index.js';
import { startFakeUpstream } from '../../support/fake-upstream.js';
import { startTestProxy, type TestProxy } from '../../support/proxy.js';
import { waitFor } from '../../support/wait.js';

const OPENAI_KEY = 'sk-openai-route-000000000000';
const CLAUDE_KEY = 'sk-ant-route-1111111111111111';

let openaiFake: FakeUpstream;
let claudeFake: FakeUpstream;
let proxy: TestProxy;
let dir: string;

beforeAll(async () => {
  openaiFake = await startFakeUpstream({ apiKey: OPENAI_KEY });
  claudeFake = await startFakeUpstream({ apiKey: CLAUDE_KEY });
  dir = mkdtempSync(join(tmpdir(), 'tollgate-anthropic-routes-'));
  const config = {
    upstreams: [
      { name: 'openai', kind: 'openai', baseUrl: openaiFake.url, keyEnv: 'OPENAI_ROUTE_KEY', models: ['gpt-4o-mini'] },
      { name: 'claude-down', kind: 'anthropic', baseUrl: `http://127.0.0.1:${REFUSED_PORT}/v1`, keyEnv: 'CLAUDE_ROUTE_KEY', models: ['claude-*'] },
      { name: 'claude', kind: 'anthropic', baseUrl: `http://127.0.0.1:${claudeFake.port}/v1`, keyEnv: 'CLAUDE_ROUTE_KEY', models: ['claude-*'] },
    ],
    routes: { 'claude-*': ['claude-down', 'claude'] },
    fallback: { breakerFailures: 100 },
  };
  const path = join(dir, 'tollgate.json');
  writeFileSync(path, JSON.stringify(config));
  proxy = await startTestProxy({ TOLLGATE_CONFIG: path, OPENAI_ROUTE_KEY: OPENAI_KEY, CLAUDE_ROUTE_KEY: CLAUDE_KEY });
});

afterAll(async () => {
  await proxy.close();
  await Promise.all([openaiFake.close(), claudeFake.close()]);
  rmSync(dir, { recursive: true, force: true });
});

interface Row {
  status: string;
  endpoint: string;
  upstream: string | null;
  attempts: number | null;
  prompt_tokens: number;
  completion_tokens: number;
  cost_micros: number;
}

async function rowOf(requestId: string): Promise<Row> {
  const database = openDatabase(proxy.dbPath);
  try {
    const read = () => database.sqlite.prepare('SELECT * FROM ledger WHERE request_id = ?').get(requestId) as Row | undefined;
    await waitFor(() => read() !== undefined && read()!.status !== 'pending', `ledger row ${requestId}`);
    return read()!;
  } finally {
    database.close();
  }
}

describe('Messages routed by the config file', () => {
  it('falls back past a dead Anthropic upstream, sends its own key and the client’s version, and bills the answer once', async () => {
    const client = new Anthropic({ baseURL: proxy.anthropicBaseURL, apiKey: proxy.key, maxRetries: 0, defaultHeaders: { 'anthropic-version': '2023-06-01' } });
    const before = claudeFake.requests.length;
    const { data, response } = await client.messages
      .create({ model: 'claude-opus-4-6', max_tokens: 100, messages: [{ role: 'user', content: 'Hello, Claude' }] })
      .withResponse();
    expect(data.type).toBe('message');
    expect(response.headers.get('anthropic-organization-id')).toBeNull();
    const sent = claudeFake.requests.slice(before);
    expect(sent).toHaveLength(1);
    expect(sent[0]!.path).toBe('/v1/messages');
    expect(sent[0]!.headers['x-api-key']).toBe(CLAUDE_KEY);
    expect(sent[0]!.headers['anthropic-version']).toBe('2023-06-01');
    expect(JSON.stringify(sent[0]!.headers)).not.toContain(proxy.key);

    const row = await rowOf(response.headers.get('x-request-id')!);
    expect(row).toMatchObject({ status: 'ok', endpoint: 'messages', upstream: 'claude', attempts: 2 });
    expect(row.prompt_tokens).toBe(sent[0]!.billed.promptTokens);
    expect(row.completion_tokens).toBe(sent[0]!.billed.completionTokens);
    expect(row.cost_micros).toBeGreaterThan(0);
  });

  it('streams through the routed upstream, and count_tokens goes there too', async () => {
    const client = new Anthropic({ baseURL: proxy.anthropicBaseURL, apiKey: proxy.key, maxRetries: 0 });
    const before = claudeFake.requests.length;
    const stream = client.messages.stream({ model: 'claude-opus-4-6', max_tokens: 100, messages: [{ role: 'user', content: 'Stream it' }] });
    const final = await stream.finalMessage();
    expect(final.usage.output_tokens).toBeGreaterThan(0);
    const counted = await client.messages.countTokens({ model: 'claude-opus-4-6', messages: [{ role: 'user', content: 'Count me' }] });
    expect(counted.input_tokens).toBeGreaterThan(0);
    expect(claudeFake.requests.slice(before).map((request) => request.path)).toEqual(['/v1/messages', '/v1/messages/count_tokens']);
  });

  it('keeps OpenAI models on their own upstream, and refuses a Claude model on the OpenAI routes', async () => {
    const client = new OpenAI({ baseURL: proxy.baseURL, apiKey: proxy.key, maxRetries: 0 });
    const before = openaiFake.requests.length;
    const answer = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] });
    expect(answer.choices).toHaveLength(1);
    expect(openaiFake.requests.slice(before)[0]!.headers.authorization).toBe(`Bearer ${OPENAI_KEY}`);
    await expect(client.chat.completions.create({ model: 'claude-opus-4-6', messages: [{ role: 'user', content: 'hi' }] })).rejects.toMatchObject({
      status: 400,
      code: 'model_not_found',
    });
  });
});
