/** `tollgate estimate`: the proxy's own estimate of a body, in tokens and USD. */
import { afterAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cli } from '../../support/cli.js';
import { spawnTollgate } from '../../support/process.js';
import { estimateRequestSync } from '../../../src/estimate/index.js';
import { builtinPriceTable } from '../../../src/estimate/prices.js';

const dir = mkdtempSync(join(tmpdir(), 'tollgate-estimate-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

// The OpenAI cookbook's example conversation: 124 prompt tokens on gpt-4o.
const cookbook = {
  model: 'gpt-4o',
  max_tokens: 500,
  n: 2,
  messages: [
    { role: 'system', content: 'You are a helpful, pattern-following assistant that translates corporate jargon into plain English.' },
    { role: 'system', name: 'example_user', content: 'New synergies will help drive top-line growth.' },
    { role: 'system', name: 'example_assistant', content: 'Things working well together will increase revenue.' },
    { role: 'system', name: 'example_user', content: "Let's circle back when we have more bandwidth to touch base on opportunities for increased leverage." },
    { role: 'system', name: 'example_assistant', content: "Let's talk later when we're less busy about how to do better." },
    { role: 'user', content: "This late pivot means we don't have time to boil the ocean for the client deliverable." },
  ],
};

function file(name: string, body: unknown): string {
  const path = join(dir, name);
  writeFileSync(path, typeof body === 'string' ? body : JSON.stringify(body));
  return path;
}

describe('tollgate estimate', () => {
  it('prints the same numbers the proxy reserves', async () => {
    const result = await cli('estimate', '--file', file('cookbook.json', cookbook), '--json');
    expect(result.code).toBe(0);
    const printed = result.json<{ endpoint: string; promptTokens: number; completionTokensReserved: number; reservedMicroUsd: number }>();
    const direct = estimateRequestSync('chat', cookbook, { prices: builtinPriceTable, defaultMaxCompletionTokens: 4096 });
    expect(printed.endpoint).toBe('chat');
    expect(printed.promptTokens).toBe(124);
    expect(printed.completionTokensReserved).toBe(1000);
    expect(printed.reservedMicroUsd).toBe(direct.reservedMicroUsd);
  });

  it('says so when a model is not in the price table', async () => {
    const result = await cli('estimate', '--file', file('unknown.json', { model: 'acme-private-7b', messages: [{ role: 'user', content: 'hi' }] }));
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('not in the price table: fallback price');
  });

  it('refuses a malformed body with exit code 2 and the parameter', async () => {
    const notJson = await cli('estimate', '--file', file('bad.json', '{"model":'));
    expect(notJson.code).toBe(2);
    const wrongType = await cli('estimate', '--file', file('wrong.json', { model: 'gpt-4o', messages: [{ role: 'user', content: 42 }] }));
    expect(wrongType.code).toBe(2);
    expect(wrongType.stderr).toContain('messages[0].content');
  });

  it('reads the body from stdin in the real binary', async () => {
    const proc = spawnTollgate(['estimate', '--json'], {});
    proc.child.stdin?.end(JSON.stringify({ model: 'text-embedding-3-small', input: ['one', 'two'] }));
    expect(await proc.exited).toBe(0);
    const printed = JSON.parse(proc.stdout.join('\n')) as { endpoint: string; promptTokens: number; completionTokensReserved: number };
    expect(printed).toMatchObject({ endpoint: 'embeddings', promptTokens: 2, completionTokensReserved: 0 });
  });
});
