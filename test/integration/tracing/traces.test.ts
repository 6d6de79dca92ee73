/**
 * OpenTelemetry traces, end to end: the real proxy exports over OTLP/HTTP to a real receiver
 * started here, in front of fake upstreams, driven by the real `openai` and `@anthropic-ai/sdk`
 * clients. Every scenario runs under its own client `traceparent`, so its spans are those of one
 * trace; the proxy is closed before the assertions, which flushes the last batch (no waiting on
 * the export timer). Checked: the spans' names and kinds (GenAI conventions), their parents
 * across Tollgate (client → server span → attempt spans → upstream), the attributes of a JSON
 * answer, a stream, a refusal and a fallback on both APIs, and that no secret is exported.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FakeUpstream } from '../../../src/demo/fake-upstream/index.js';
import { startFakeUpstream } from '../../support/fake-upstream.js';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../../support/otlp-receiver.js';
import { startTestProxy, UPSTREAM_KEY, type TestProxy } from '../../support/proxy.js';

const GOOD_KEY = 'sk-good-upstream-2222222222222222';
const BAD_KEY = 'sk-bad-upstream-3333333333333333';
const ADMIN_TOKEN = 'admin-token-4444444444444444';
const OTLP_SECRET = 'otlp-vendor-secret-5555555555';
const WRONG_KEY = 'tg-not-a-key-6666666666666666';

let receiver: OtlpReceiver;
let good: FakeUpstream;
let bad: FakeUpstream;
let proxy: TestProxy;
let dir: string;
const tenantKeys: string[] = [];
/** The trace id each scenario's client sent. */
const traces = new Map<string, string>();
const CLIENT_SPAN = 'aaaaaaaaaaaaaaaa';

function traceparentFor(scenario: string): string {
  const traceId = (Buffer.from(scenario).toString('hex') + '0'.repeat(32)).slice(0, 32);
  traces.set(scenario, traceId);
  return `00-${traceId}-${CLIENT_SPAN}-01`;
}

function openai(key: string, scenario: string): OpenAI {
  return new OpenAI({ apiKey: key, baseURL: proxy.baseURL, maxRetries: 0, defaultHeaders: { traceparent: traceparentFor(scenario) } });
}

function anthropic(key: string, scenario: string): Anthropic {
  return new Anthropic({ apiKey: key, baseURL: proxy.anthropicBaseURL, maxRetries: 0, defaultHeaders: { traceparent: traceparentFor(scenario) } });
}

beforeAll(async () => {
  receiver = await startOtlpReceiver();
  good = await startFakeUpstream({ apiKey: GOOD_KEY });
  bad = await startFakeUpstream({ apiKey: BAD_KEY });
  bad.setScenario('status=500');
  dir = mkdtempSync(join(tmpdir(), 'tollgate-traces-'));
  const config = {
    upstreams: [
      { name: 'openai-down', kind: 'openai', baseUrl: bad.url, keyEnv: 'BAD_UPSTREAM_KEY', models: ['gpt-4o'] },
      { name: 'openai', kind: 'openai', baseUrl: good.url, keyEnv: 'GOOD_UPSTREAM_KEY', models: ['gpt-4o*'] },
      { name: 'claude-down', kind: 'anthropic', baseUrl: `http://127.0.0.1:${bad.port}/v1`, keyEnv: 'BAD_UPSTREAM_KEY', models: ['claude-opus-4-5'] },
      { name: 'claude', kind: 'anthropic', baseUrl: `http://127.0.0.1:${good.port}/v1`, keyEnv: 'GOOD_UPSTREAM_KEY', models: ['claude-*'] },
    ],
    routes: { 'gpt-4o': ['openai-down', 'openai'], 'claude-opus-4-5': ['claude-down', 'claude'] },
    fallback: { breakerFailures: 100 },
  };
  const path = join(dir, 'tollgate.json');
  writeFileSync(path, JSON.stringify(config));
  proxy = await startTestProxy({
    TOLLGATE_CONFIG: path,
    GOOD_UPSTREAM_KEY: GOOD_KEY,
    BAD_UPSTREAM_KEY: BAD_KEY,
    TOLLGATE_ADMIN_TOKEN: ADMIN_TOKEN,
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
    OTEL_EXPORTER_OTLP_HEADERS: `authorization=Bearer%20${OTLP_SECRET}`,
    OTEL_SERVICE_NAME: 'tollgate-under-test',
  });
  const key = proxy.issueKey('traced-app', { limits: [] }, 'acme');
  const broke = proxy.issueKey('broke-app', { limits: [], budgets: [{ microUsd: 1, period: 'day' }] });
  const limited = proxy.issueKey('limited-app', { limits: [{ name: 'one-a-minute', unit: 'requests', amount: 1, period: 'min', burst: 1 }] });
  tenantKeys.push(proxy.key, key, broke, limited);

  const ask = [{ role: 'user' as const, content: 'Hello there' }];
  await openai(key, 'openai-json').chat.completions.create({ model: 'gpt-4o-mini', max_tokens: 50, messages: ask, user: 'end-user-7' });
  const stream = await openai(key, 'openai-stream').chat.completions.create({ model: 'gpt-4o-mini', messages: ask, stream: true });
  for await (const _chunk of stream) {
    // read to the end
  }
  await expect(openai(broke, 'openai-budget').chat.completions.create({ model: 'gpt-4o-mini', messages: ask })).rejects.toMatchObject({ status: 429 });
  await openai(key, 'openai-fallback').chat.completions.create({ model: 'gpt-4o', messages: ask });

  const say = [{ role: 'user' as const, content: 'Hello, Claude' }];
  await anthropic(key, 'claude-json').messages.create({ model: 'claude-haiku-4-5', max_tokens: 60, messages: say });
  await anthropic(key, 'claude-stream').messages.stream({ model: 'claude-haiku-4-5', max_tokens: 60, messages: say }).finalMessage();
  await anthropic(limited, 'claude-first').messages.create({ model: 'claude-haiku-4-5', max_tokens: 20, messages: say });
  await expect(anthropic(limited, 'claude-limit').messages.create({ model: 'claude-haiku-4-5', max_tokens: 20, messages: say })).rejects.toMatchObject({
    status: 429,
  });
  await anthropic(key, 'claude-fallback').messages.create({ model: 'claude-opus-4-5', max_tokens: 60, messages: say });
  // A client trace its caller chose not to sample: followed (parentbased), and passed on unsampled.
  const unsampled = traceparentFor('unsampled').replace(/-01$/, '-00');
  await new OpenAI({ apiKey: key, baseURL: proxy.baseURL, maxRetries: 0, defaultHeaders: { traceparent: unsampled } }).chat.completions.create({
    model: 'gpt-4o-mini',
    messages: ask,
  });
  await expect(openai(WRONG_KEY, 'unauthenticated').chat.completions.create({ model: 'gpt-4o-mini', messages: ask })).rejects.toMatchObject({ status: 401 });
  // Closing flushes the batch of spans to the receiver.
  await proxy.close();
}, 60_000);

afterAll(async () => {
  await Promise.all([good.close(), bad.close(), receiver.close()]);
  rmSync(dir, { recursive: true, force: true });
});

function spansOf(scenario: string): ReceivedSpan[] {
  const traceId = traces.get(scenario)!;
  return receiver.spans.filter((span) => span.traceId === traceId);
}

/** The scenario's server span: the one whose parent is the client's span. */
function serverSpan(scenario: string): ReceivedSpan {
  const roots = spansOf(scenario).filter((span) => span.parentSpanId === CLIENT_SPAN);
  expect(roots).toHaveLength(1);
  return roots[0]!;
}

function childrenOf(scenario: string, parent: ReceivedSpan, name?: string): ReceivedSpan[] {
  return spansOf(scenario)
    .filter((span) => span.parentSpanId === parent.spanId && (name === undefined || span.name === name))
    .sort((a, b) => Number(a.startNs - b.startNs));
}

/** What the fake upstream received for a scenario's trace. */
function upstreamTraceparents(fake: FakeUpstream, scenario: string): string[] {
  const traceId = traces.get(scenario)!;
  return fake.requests.map((r) => r.headers.traceparent).filter((value): value is string => typeof value === 'string' && value.includes(traceId));
}

const SERVER = 2;
const CLIENT = 3;
const ERROR = 2;

describe('spans follow the GenAI conventions and continue the client trace', () => {
  it('names a JSON chat answer "chat gpt-4o-mini", a server span whose parent is the client span, with usage and cost', () => {
    const span = serverSpan('openai-json');
    expect(span.name).toBe('chat gpt-4o-mini');
    expect(span.kind).toBe(SERVER);
    expect(span.resource['service.name']).toBe('tollgate-under-test');
    expect(span.attributes).toMatchObject({
      'gen_ai.operation.name': 'chat',
      'gen_ai.provider.name': 'openai',
      'gen_ai.request.model': 'gpt-4o-mini',
      'gen_ai.request.max_tokens': 50,
      'gen_ai.request.stream': false,
      'http.response.status_code': 200,
      'tollgate.key.name': 'traced-app',
      'tollgate.tenant': 'acme',
      'tollgate.end_user': 'end-user-7',
      'tollgate.upstream': 'openai',
      'tollgate.attempts': 1,
      'tollgate.outcome': 'ok',
      'tollgate.usage.source': 'reported',
      'tollgate.cut': false,
      'tollgate.capped': false,
    });
    expect(span.attributes['gen_ai.usage.input_tokens']).toBeGreaterThan(0);
    expect(span.attributes['gen_ai.usage.output_tokens']).toBeGreaterThan(0);
    expect(span.attributes['tollgate.cost.actual_usd']).toBeGreaterThan(0);
    expect(span.attributes['tollgate.cost.estimated_usd']).toBeGreaterThanOrEqual(span.attributes['tollgate.cost.actual_usd'] as number);
    expect(span.statusCode).not.toBe(ERROR);
  });

  it('gives the request an admission child, one attempt child of kind client, and a relay child', () => {
    const root = serverSpan('openai-json');
    expect(childrenOf('openai-json', root, 'tollgate.admit')).toHaveLength(1);
    expect(childrenOf('openai-json', root, 'tollgate.relay')).toHaveLength(1);
    const attempts = childrenOf('openai-json', root, 'chat gpt-4o-mini');
    expect(attempts).toHaveLength(1);
    expect(attempts[0]!.kind).toBe(CLIENT);
    expect(attempts[0]!.attributes).toMatchObject({
      'server.address': '127.0.0.1',
      'server.port': good.port,
      'http.response.status_code': 200,
      'tollgate.upstream': 'openai',
      'tollgate.upstream.kind': 'openai',
      'gen_ai.provider.name': 'openai',
      'tollgate.attempt': 1,
    });
  });

  it('sends the upstream a traceparent of the same trace whose parent is the attempt span', () => {
    const root = serverSpan('openai-json');
    const [attempt] = childrenOf('openai-json', root, 'chat gpt-4o-mini');
    expect(upstreamTraceparents(good, 'openai-json')).toEqual([`00-${root.traceId}-${attempt!.spanId}-01`]);
  });

  it('marks a stream and ends its span when the stream is settled, after its relay', () => {
    const span = serverSpan('openai-stream');
    expect(span.attributes).toMatchObject({ 'gen_ai.request.stream': true, 'tollgate.outcome': 'ok', 'tollgate.usage.source': 'reported' });
    expect(span.attributes['gen_ai.usage.output_tokens']).toBeGreaterThan(0);
    const [relay] = childrenOf('openai-stream', span, 'tollgate.relay');
    expect(relay).toBeDefined();
    expect(relay!.startNs).toBeGreaterThan(span.startNs);
    expect(relay!.endNs).toBeLessThanOrEqual(span.endNs);
  });

  it('names the budget that refused a request, with a 429 and no attempt', () => {
    const span = serverSpan('openai-budget');
    expect(span.attributes).toMatchObject({
      'http.response.status_code': 429,
      'error.type': 'insufficient_quota',
      'tollgate.outcome': 'refused',
      'tollgate.refusal.reason': 'budget',
      'tollgate.refused_by': 'daily budget of key broke-app',
      'tollgate.key.name': 'broke-app',
    });
    expect(spansOf('openai-budget').filter((s) => s.kind === CLIENT)).toHaveLength(0);
    expect(upstreamTraceparents(good, 'openai-budget')).toHaveLength(0);
  });

  it('shows a fallback as two attempt spans, the first failed with its 500, each with its own traceparent upstream', () => {
    const root = serverSpan('openai-fallback');
    expect(root.attributes).toMatchObject({ 'tollgate.upstream': 'openai', 'tollgate.attempts': 2, 'http.response.status_code': 200 });
    const attempts = childrenOf('openai-fallback', root, 'chat gpt-4o');
    expect(attempts.map((a) => [a.attributes['tollgate.upstream'], a.attributes['http.response.status_code'], a.statusCode === ERROR])).toEqual([
      ['openai-down', 500, true],
      ['openai', 200, false],
    ]);
    expect(upstreamTraceparents(bad, 'openai-fallback')).toEqual([`00-${root.traceId}-${attempts[0]!.spanId}-01`]);
    expect(upstreamTraceparents(good, 'openai-fallback')).toEqual([`00-${root.traceId}-${attempts[1]!.spanId}-01`]);
  });
});

describe("Anthropic's Messages API", () => {
  it('names an answer "chat claude-haiku-4-5" with the anthropic provider, usage and a traceparent upstream', () => {
    const root = serverSpan('claude-json');
    expect(root.name).toBe('chat claude-haiku-4-5');
    expect(root.attributes).toMatchObject({
      'gen_ai.provider.name': 'anthropic',
      'gen_ai.system': 'anthropic',
      'gen_ai.request.max_tokens': 60,
      'tollgate.upstream': 'claude',
      'http.response.status_code': 200,
    });
    expect(root.attributes['gen_ai.usage.output_tokens']).toBeGreaterThan(0);
    const [attempt] = childrenOf('claude-json', root, 'chat claude-haiku-4-5');
    expect(attempt!.attributes).toMatchObject({ 'gen_ai.provider.name': 'anthropic', 'tollgate.upstream.kind': 'anthropic', 'server.port': good.port });
    expect(upstreamTraceparents(good, 'claude-json')).toEqual([`00-${root.traceId}-${attempt!.spanId}-01`]);
  });

  it('traces a stream to its settled usage', () => {
    const root = serverSpan('claude-stream');
    expect(root.attributes).toMatchObject({ 'gen_ai.request.stream': true, 'tollgate.outcome': 'ok', 'tollgate.usage.source': 'reported' });
    expect(childrenOf('claude-stream', root, 'tollgate.relay')).toHaveLength(1);
  });

  it('names the limit that refused a request', () => {
    const root = serverSpan('claude-limit');
    expect(root.attributes).toMatchObject({
      'http.response.status_code': 429,
      'error.type': 'rate_limit_exceeded',
      'tollgate.refusal.reason': 'rate_limit',
      'tollgate.refused_by': 'limit "one-a-minute"',
    });
    expect(childrenOf('claude-limit', root, 'tollgate.admit')).toHaveLength(0);
  });

  it('shows a fallback as two attempt spans, the first failed', () => {
    const root = serverSpan('claude-fallback');
    const attempts = childrenOf('claude-fallback', root, 'chat claude-opus-4-5');
    expect(attempts.map((a) => [a.attributes['tollgate.upstream'], a.attributes['http.response.status_code'], a.statusCode === ERROR])).toEqual([
      ['claude-down', 500, true],
      ['claude', 200, false],
    ]);
    expect(root.attributes['tollgate.attempts']).toBe(2);
  });
});

describe('sampling and refusals before the key is known', () => {
  it('exports nothing of a trace the client did not sample, and passes it upstream unsampled', () => {
    expect(spansOf('unsampled')).toHaveLength(0);
    const [sent] = upstreamTraceparents(good, 'unsampled');
    expect(sent).toMatch(new RegExp(`^00-${traces.get('unsampled')}-[0-9a-f]{16}-00$`));
    expect(sent).not.toContain(CLIENT_SPAN);
  });

  it('traces a request with a wrong key as a 401 with its error code and no key', () => {
    const span = serverSpan('unauthenticated');
    expect(span.name).toBe('chat');
    expect(span.attributes).toMatchObject({ 'http.response.status_code': 401, 'error.type': 'invalid_api_key' });
    expect(span.attributes['tollgate.key.name']).toBeUndefined();
    expect(spansOf('unauthenticated')).toHaveLength(1);
  });
});

describe('what is never exported', () => {
  it('exports no tenant key, provider key, admin token or exporter header anywhere in the payload', () => {
    expect(receiver.exports.length).toBeGreaterThan(0);
    const everything = receiver.exports.map((e) => e.body).join('\n');
    for (const secret of [...tenantKeys, WRONG_KEY, UPSTREAM_KEY, GOOD_KEY, BAD_KEY, ADMIN_TOKEN, OTLP_SECRET]) expect(everything).not.toContain(secret);
    // The tenant keys' visible prefix is not their secret, but no key material goes out at all.
    for (const key of tenantKeys) expect(everything).not.toContain(key.slice(-12));
  });

  it('logs where spans go, never the exporter headers', () => {
    const started = proxy.logs.lines.find((line) => line.msg === 'tracing: exporting spans over OTLP/HTTP');
    expect(started).toMatchObject({ endpoint: `${receiver.url}/v1/traces`, sampler: 'parentbased_always_on', serviceName: 'tollgate-under-test' });
    expect(proxy.logs.raw.join('\n')).not.toContain(OTLP_SECRET);
  });

  it('sends the OTLP headers to the receiver, and only there', () => {
    expect(receiver.exports.every((e) => e.headers.authorization === `Bearer ${OTLP_SECRET}`)).toBe(true);
    for (const fake of [good, bad]) expect(JSON.stringify(fake.requests.map((r) => r.headers))).not.toContain(OTLP_SECRET);
  });
});
