/** The config file's upstreams: what a valid list becomes, and errors that name the file and the field. */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../../src/config/index.js';
import { resolvePrice } from '../../../src/estimate/prices.js';

const dir = mkdtempSync(join(tmpdir(), 'tollgate-upstream-config-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let files = 0;

function withFile(json: unknown, env: Record<string, string> = {}) {
  const path = join(dir, `config-${(files += 1)}.json`);
  writeFileSync(path, JSON.stringify(json));
  return { path, load: () => loadConfig({ TOLLGATE_CONFIG: path, ...env }) };
}

function problem(json: unknown, env: Record<string, string> = {}): string {
  const { load } = withFile(json, env);
  try {
    load();
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as Error).message;
  }
  throw new Error('expected a ConfigError');
}

const example = {
  upstreams: [
    { name: 'openai', kind: 'openai', baseUrl: 'https://api.openai.com/v1/', keyEnv: 'OPENAI_KEY', models: ['gpt-*', 'o*'] },
    {
      name: 'azure',
      kind: 'azure',
      baseUrl: 'https://acme.openai.azure.com/openai',
      keyEnv: 'AZURE_KEY',
      apiVersion: '2024-10-21',
      aliases: { 'gpt-4o': 'prod-4o' },
      prices: { models: { 'gpt-4o': { input: 2.75, output: 11 } } },
    },
    { name: 'claude', kind: 'anthropic', baseUrl: 'https://api.anthropic.com/v1', keyEnv: 'ANTHROPIC_KEY', models: ['claude-*'] },
    { name: 'local', kind: 'openai-compatible', baseUrl: 'http://127.0.0.1:8000/v1', models: ['meta-llama/*'], headers: { 'X-Team': 'ml' } },
    { name: 'openrouter', kind: 'openai-compatible', baseUrl: 'https://openrouter.ai/api/v1', keyEnv: 'OR_KEY', models: ['*/*'] },
  ],
  routes: { 'gpt-4o': ['azure', 'openai'] },
};
const keys = { OPENAI_KEY: 'sk-o', AZURE_KEY: 'az', ANTHROPIC_KEY: 'sk-ant', OR_KEY: 'sk-or' };

describe('upstreams in the config file', () => {
  it('without a list, TOLLGATE_UPSTREAM_URL and _KEY are the one upstream, serving every model', () => {
    const config = loadConfig({ TOLLGATE_UPSTREAM_URL: 'http://127.0.0.1:9/v1', TOLLGATE_UPSTREAM_KEY: 'sk-x' });
    expect(config.upstreams.shorthand).toBe(true);
    expect(config.upstreams.list).toHaveLength(1);
    expect(config.upstreams.list[0]).toMatchObject({ name: 'default', url: 'http://127.0.0.1:9/v1', apiKey: 'sk-x', auth: 'bearer', models: ['*'] });
  });

  it('reads each kind with its auth style, keys from the named variables, and Azure deployment URLs', () => {
    const { list, routes, shorthand } = withFile(example, keys).load().upstreams;
    expect(shorthand).toBe(false);
    const [openai, azure, claude, local, openrouter] = list;
    expect(openai).toMatchObject({ url: 'https://api.openai.com/v1', apiKey: 'sk-o', auth: 'bearer', promptTokenFactor: 1, usageCost: false });
    expect(azure).toMatchObject({ apiKey: 'az', auth: 'api-key', azureDeployments: true, query: { 'api-version': '2024-10-21' } });
    expect(claude).toMatchObject({ apiKey: 'sk-ant', auth: 'x-api-key', defaultHeaders: { 'anthropic-version': '2023-06-01' } });
    expect(claude!.promptTokenFactor).toBeGreaterThan(1);
    expect(local).toMatchObject({ apiKey: undefined, headers: { 'x-team': 'ml' } });
    expect(openrouter!.usageCost).toBe(true);
    expect(routes).toEqual([{ pattern: 'gpt-4o', upstreams: ['azure', 'openai'] }]);
  });

  it("prices a model at the upstream's own price, and every other model at the global table's", () => {
    const { list } = withFile(example, keys).load().upstreams;
    const azure = list.find((u) => u.name === 'azure')!;
    const openai = list.find((u) => u.name === 'openai')!;
    expect(resolvePrice('gpt-4o', azure.prices)).toMatchObject({ inputMicroUsdPer1M: 2_750_000, outputMicroUsdPer1M: 11_000_000 });
    expect(resolvePrice('gpt-4o', openai.prices).inputMicroUsdPer1M).toBe(2_500_000);
    expect(resolvePrice('gpt-4o-mini', azure.prices)).toEqual(resolvePrice('gpt-4o-mini', openai.prices));
  });

  it('treats an Azure base URL ending in /openai/v1 as the v1 API, which needs no api-version', () => {
    const { list } = withFile({ upstreams: [{ name: 'az', kind: 'azure', baseUrl: 'https://acme.openai.azure.com/openai/v1', models: ['gpt-4o'] }] }).load()
      .upstreams;
    expect(list[0]).toMatchObject({ azureDeployments: false, query: {} });
  });

  it('names the file and the field of every problem', () => {
    const message = problem({
      upstreams: [
        { name: 'a', kind: 'azure', baseUrl: 'https://x.openai.azure.com/openai', keyEnv: 'MISSING_KEY', models: ['gpt-4o'] },
        { name: 'a', kind: 'openai', baseUrl: 'https://api.openai.com/v1', models: [], headers: { Authorization: 'Bearer sk' } },
      ],
      routes: { 'gpt-4o': ['a', 'nobody'] },
    });
    expect(message).toMatch(/config-\d+\.json: upstreams\.0\.keyEnv: the environment variable MISSING_KEY is not set/);
    expect(message).toMatch(/upstreams\.0\.apiVersion: Azure deployment URLs need an apiVersion/);
    expect(message).toMatch(/upstreams\.1\.name: "a" names another upstream too/);
    expect(message).toMatch(/upstreams\.1\.models: an upstream must serve at least one model/);
    expect(message).toMatch(/upstreams\.1\.headers\.Authorization: the key goes in keyEnv/);
    expect(message).toMatch(/routes\.gpt-4o\.1: no upstream is named "nobody"/);
  });

  it('refuses unknown kinds, bad URLs, unknown fields and names unfit for a metric label', () => {
    expect(problem({ upstreams: [{ name: 'a', kind: 'bedrock', baseUrl: 'https://x', models: ['*'] }] })).toMatch(/upstreams\.0\.kind/);
    expect(problem({ upstreams: [{ name: 'a', kind: 'openai', baseUrl: 'ftp://x', models: ['*'] }] })).toMatch(
      /upstreams\.0\.baseUrl: must be an http\(s\) URL/,
    );
    expect(problem({ upstreams: [{ name: 'a', kind: 'openai', baseUrl: 'https://x', models: ['*'], key: 'sk-in-file' }] })).toMatch(
      /upstreams\.0: Unrecognized key/,
    );
    expect(problem({ upstreams: [{ name: 'a b"c', kind: 'openai', baseUrl: 'https://x', models: ['*'] }] })).toMatch(/upstreams\.0\.name/);
    expect(problem({ routes: { x: ['a'] } })).toMatch(/routes: routes need an upstreams list/);
  });

  it('never puts a key in an error message', () => {
    const message = problem(
      { upstreams: [{ name: 'a', kind: 'openai', baseUrl: 'https://x', keyEnv: 'K', models: [], headers: { 'x-api-key': 'sk-secret-in-header' } }] },
      {
        K: 'sk-live-secret',
      },
    );
    expect(message).not.toContain('sk-live-secret');
    expect(message).not.toContain('sk-secret-in-header');
  });
});
