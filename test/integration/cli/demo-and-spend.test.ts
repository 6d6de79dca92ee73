/** `tollgate demo` works offline in one command; `tollgate spend` prints what the ledger holds. */
import { afterAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnTollgate } from '../../support/process.js';
import { waitFor } from '../../support/wait.js';
import { cli } from '../../support/cli.js';
import { openDatabase } from '../../../src/storage/sqlite/open.js';
import { SqliteKeyStore as KeyStore } from '../../../src/storage/sqlite/keys.js';
import { SqliteLedgerWriter } from '../../../src/storage/sqlite/ledger-writer.js';
import { freePortsBelowEphemeral } from '../../support/refused.js';

const dir = mkdtempSync(join(tmpdir(), 'tollgate-demo-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('tollgate demo', () => {
  it('starts a fake upstream and the proxy, prints a working key and curl, and records what it served', async () => {
    const port = await freePortsBelowEphemeral(1);
    const db = join(dir, 'demo.db');
    const proc = spawnTollgate(['--db', db, 'demo', '--port', String(port)], {});
    try {
      await waitFor(() => proc.stdout.some((line) => line.includes('Press Ctrl-C to stop.')), 'the demo to print its instructions', 20_000);
      const printed = proc.stdout.join('\n');
      const key = /demo key:\s+(tg-[0-9A-Za-z]{43})/.exec(printed)?.[1];
      expect(key).toBeDefined();
      expect(printed).toContain(`curl http://127.0.0.1:${port}/v1/chat/completions`);
      expect(printed).toMatch(/dashboard: http:\/\/127\.0\.0\.1:\d+\/dashboard/);
      const res = await fetch(`http://127.0.0.1:${port}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Say hello' }] }),
      });
      expect(res.status).toBe(200);
      expect(((await res.json()) as { choices: Array<{ message: { content: string } }> }).choices[0]?.message.content).toMatch(/^The quick/);
      expect(res.headers.get('ratelimit-policy')).toMatch(/^"(requests|tokens)-per-min";q=\d+;w=\d+/);
    } finally {
      proc.child.kill('SIGINT');
      expect(await proc.exited).toBe(0);
    }
    const spend = await cli('--db', db, 'spend', '--by', 'model', '--json');
    expect(spend.json<{ total: { requests: number } }>().total.requests).toBe(1);
  });
});

describe('tollgate spend', () => {
  it('groups by day, model, key and tenant, over --since/--until, as an aligned table or JSON', async () => {
    const db = join(dir, 'spend.db');
    const database = openDatabase(db);
    const store = new KeyStore(database);
    const a = store.createKey({ name: 'alpha', tenant: 'acme', policy: { limits: [] } }).view;
    const b = store.createKey({ name: 'beta', policy: { limits: [] } }).view;
    const writer = new SqliteLedgerWriter(database);
    const day = (d: string) => Date.parse(`${d}T12:00:00Z`);
    const rows: Array<[string, string, number, string]> = [
      [a.id, a.tenantId!, 1_250_000, '2026-11-01'],
      [a.id, a.tenantId!, 500_000, '2026-11-02'],
      [b.id, '', 3_000_000, '2026-11-02'],
      [b.id, '', 7, '2026-10-15'],
    ];
    let i = 0;
    for (const [keyId, tenantId, cost, date] of rows) {
      i += 1;
      await writer.begin({
        requestId: `s${i}`,
        keyId,
        tenantId: tenantId || null,
        createdAt: day(date),
        endpoint: 'chat',
        model: i % 2 ? 'gpt-4o' : 'gpt-4o-mini',
        stream: false,
        estPromptTokens: 10,
        estCompletionTokens: 10,
        estCostMicros: cost,
        priceKnown: true,
      });
      writer.complete({
        requestId: `s${i}`,
        completedAt: day(date) + 1000,
        status: 'ok',
        httpStatus: 200,
        promptTokens: 1000,
        cachedTokens: 0,
        completionTokens: 200,
        reasoningTokens: 0,
        costMicros: cost,
        usageSource: 'reported',
        latencyMs: 1000,
        ttftMs: null,
        upstreamRequestId: null,
        errorCode: null,
      });
    }
    writer.close();
    database.close();
    const run = (...args: string[]) => cli('--db', db, 'spend', '--since', '2026-11-01', '--until', '2026-11-02', ...args);

    const byDay = await run('--by', 'day');
    const lines = byDay.stdout.trimEnd().split('\n');
    expect(lines[0]).toBe('Spend, 2026-11-01 to 2026-11-02 (UTC)');
    expect(lines[2]).toMatch(/^day\s+requests\s+prompt tokens\s+completion tokens\s+cost\s+rejected\s+errors$/);
    expect(lines.slice(4)).toEqual([
      expect.stringMatching(/^2026-11-01\s+1\s+1,000\s+200\s+\$1\.25\s+0\s+0$/),
      expect.stringMatching(/^2026-11-02\s+2\s+2,000\s+400\s+\$3\.50\s+0\s+0$/),
      expect.stringMatching(/^total\s+3\s+3,000\s+600\s+\$4\.75\s+0\s+0$/),
    ]);
    // Aligned: numbers are right-aligned up to the last column, so every line of the table is as long.
    expect(new Set(lines.slice(2).map((l) => l.length)).size).toBe(1);

    expect(
      (await run('--by', 'key', '--json')).json<{ rows: Array<{ group: string; costMicros: number }> }>().rows.map((r) => [r.group, r.costMicros]),
    ).toEqual([
      ['beta', 3_000_000],
      ['alpha', 1_750_000],
    ]);
    expect((await run('--by', 'tenant', '--json')).json<{ rows: Array<{ group: string }> }>().rows.map((r) => r.group)).toEqual(['(no tenant)', 'acme']);
    expect((await run('--tenant', 'acme', '--by', 'total', '--json')).json<{ total: { costMicros: number } }>().total.costMicros).toBe(1_750_000);
    expect(
      (await cli('--db', db, 'spend', '--key', 'beta', '--since', '2026-10-01', '--until', '2026-11-30', '--json')).json<{ total: { costMicros: number } }>()
        .total.costMicros,
    ).toBe(3_000_007);
    const bad = await cli('--db', db, 'spend', '--since', 'last tuesday');
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('not a start day');
  });

  it('prints the total as precisely as its rows, so rows under a cent add up to it', async () => {
    const db = join(dir, 'cents.db');
    const database = openDatabase(db);
    const key = new KeyStore(database).createKey({ name: 'cheap', policy: { limits: [] } }).view;
    const writer = new SqliteLedgerWriter(database);
    // Four days of one $0.00875 request: $0.035 in all, which cents alone would show as $0.04.
    for (const [i, date] of ['2026-11-01', '2026-11-02', '2026-11-03', '2026-11-04'].entries()) {
      const at = Date.parse(`${date}T12:00:00Z`);
      await writer.begin({
        requestId: `c${i}`,
        keyId: key.id,
        tenantId: null,
        createdAt: at,
        endpoint: 'chat',
        model: 'gpt-4o-mini',
        stream: false,
        estPromptTokens: 10,
        estCompletionTokens: 10,
        estCostMicros: 8_750,
        priceKnown: true,
      });
      writer.complete({
        requestId: `c${i}`,
        completedAt: at + 1000,
        status: 'ok',
        httpStatus: 200,
        promptTokens: 10,
        cachedTokens: 0,
        completionTokens: 10,
        reasoningTokens: 0,
        costMicros: 8_750,
        usageSource: 'reported',
        latencyMs: 1000,
        ttftMs: null,
        upstreamRequestId: null,
        errorCode: null,
      });
    }
    writer.close();
    database.close();
    const byDay = await cli('--db', db, 'spend', '--since', '2026-11-01', '--until', '2026-11-04', '--by', 'day');
    expect(byDay.stdout.trimEnd().split('\n').slice(4)).toEqual([
      ...['01', '02', '03', '04'].map((d) => expect.stringMatching(new RegExp(`^2026-11-${d}\\s+1\\s+10\\s+10\\s+\\$0\\.00875\\s+0\\s+0$`))),
      expect.stringMatching(/^total\s+4\s+40\s+40\s+\$0\.035\s+0\s+0$/),
    ]);
  });
});
