/**
 * Raw ledger exports (src/storage/ledger-export.ts, written as CSV or NDJSON
 * by src/reports/export.ts) over both backends: the same rows export the
 * same bytes — odd text, nulls, pending rows, whole or filtered by key,
 * tenant and period — and more rows than a page come complete and in order,
 * ties across page boundaries included.
 */
import { beforeEach, expect, it } from 'vitest';
import { ledgerExporter, type LedgerExportFormat, type LedgerExporter } from '../../../src/reports/export.js';
import type { Backend } from '../../../src/storage/backend.js';
import type { LedgerExportQuery } from '../../../src/storage/ledger-export.js';
import { openLedgerExport } from '../../../src/storage/index.js';
import { describeBackends } from '../../support/backends.js';
import { parseCsv } from '../../support/csv.js';
import { seedBackend } from '../../support/read-seed.js';
import { sameOnBoth } from '../../support/same-on-both.js';

const at = (iso: string) => Date.parse(iso);
const FORMATS: LedgerExportFormat[] = ['csv', 'ndjson'];
const ODD_MODELS = ['gpt-4o-mini', 'comma, "quoted"', 'line\nbreak\r\nand\ttab', 'модель-ü-🦊', '=HYPERLINK("x")', ' padded '];
const ODD_USERS = [undefined, 'Zoë, "the boss"', 'user\nwith newline', '日本語のユーザー'];
const check = sameOnBoth(new Map());

async function collect(chunks: AsyncGenerator<string, void, undefined>): Promise<string> {
  let text = '';
  for await (const chunk of chunks) text += chunk;
  return text;
}

describeBackends('ledger export', (fixture) => {
  let backend: Backend;
  let exportLedger: LedgerExporter;
  beforeEach(async () => {
    backend = await fixture.fresh();
    exportLedger = ledgerExporter(openLedgerExport(backend)!);
  });

  it('exports the same bytes from either backend over the same rows, whole and filtered', async () => {
    // In time order (a node's file exports in the order written, PostgreSQL by time then request id); two rows share a millisecond.
    const times = Array.from({ length: 24 }, (_, i) => at('2026-11-01T00:00:00Z') + i * 3_600_000 * 3);
    times[5] = times[4]!;
    const keys = { alpha: { id: '', tenantId: null as string | null }, beta: { id: '', tenantId: null as string | null } };
    await seedBackend(backend, async ({ store, writer }) => {
      keys.alpha = store.createKey({ name: 'alpha', tenant: 'acme', policy: { limits: [] } }).view;
      keys.beta = store.createKey({ name: 'beta', policy: { limits: [] } }).view;
      for (const [i, createdAt] of times.entries()) {
        const key = i % 3 === 0 ? keys.beta : keys.alpha;
        const requestId = `exp-${String(i).padStart(3, '0')}`;
        const begun = writer.begin({
          requestId,
          keyId: key.id,
          tenantId: key.tenantId,
          createdAt,
          endpoint: i % 4 === 0 ? 'embeddings' : 'chat',
          model: ODD_MODELS[i % ODD_MODELS.length]!,
          stream: i % 2 === 0,
          estPromptTokens: 100 + i,
          estCompletionTokens: 50,
          estCostMicros: 1_000 + i,
          priceKnown: i % 5 !== 0,
          endUser: ODD_USERS[i % ODD_USERS.length],
          tags: i % 3 === 1 ? ['team,a', 'ünï'] : undefined,
        });
        writer.flush();
        await begun;
        // Every seventh stays pending: empty cells (JSON null) where nothing is known yet.
        if (i % 7 === 6) continue;
        writer.complete({
          requestId,
          completedAt: createdAt + 1_500,
          status: i % 5 === 0 ? 'upstream_error' : 'ok',
          httpStatus: i % 5 === 0 ? 502 : 200,
          promptTokens: 100 + i,
          cachedTokens: i % 4,
          // Anthropic's cache writes on some rows (bigint in PostgreSQL: the same digits).
          ...(i % 4 === 1 ? { cacheWrite5mTokens: 8 + i, cacheWrite1hTokens: i % 3 } : {}),
          completionTokens: 10 * i,
          reasoningTokens: 0,
          costMicros: 123_457 * i + 1,
          usageSource: 'reported',
          latencyMs: 1_500,
          ttftMs: i % 2 === 0 ? 200 : null,
          upstreamRequestId: i % 2 === 0 ? `chatcmpl-"${i}",x` : null,
          errorCode: i % 5 === 0 ? '@upstream\nerror' : null,
        });
      }
    });
    const ids = { [keys.alpha.id]: 'key:alpha', [keys.beta.id]: 'key:beta', [keys.alpha.tenantId!]: 'tenant:acme' };

    const whole = { sinceMs: at('2026-10-01T00:00:00Z'), untilMs: at('2026-12-01T00:00:00Z') };
    const queries: Array<[string, LedgerExportQuery]> = [
      ['whole', whole],
      ['alpha', { ...whole, keyId: keys.alpha.id }],
      ['beta', { ...whole, keyId: keys.beta.id }],
      ['acme', { ...whole, tenantId: keys.alpha.tenantId! }],
      // Instants cutting rows off at both ends (since included, until excluded).
      ['cut', { sinceMs: times[4]!, untilMs: times[20]! }],
      ['cut alpha', { sinceMs: times[4]! + 1, untilMs: times[20]! + 1, keyId: keys.alpha.id }],
      ['empty', { sinceMs: at('2027-01-01T00:00:00Z'), untilMs: at('2027-02-01T00:00:00Z') }],
    ];
    for (const [name, query] of queries) {
      for (const format of FORMATS) check(fixture.name, `${name} ${format}`, await collect(exportLedger(query, format)), ids);
    }
    // Not two empty files: every row, with its odd text read back intact.
    const ndjson = (await collect(exportLedger(whole, 'ndjson')))
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(ndjson.map((row) => row.request_id)).toEqual(times.map((_, i) => `exp-${String(i).padStart(3, '0')}`));
    expect(ndjson[2]).toMatchObject({ model: ODD_MODELS[2], end_user: ODD_USERS[2], key_name: 'alpha', tenant_name: 'acme' });
    expect(ndjson[3]).toMatchObject({ model: 'модель-ü-🦊', stream: false, price_known: true, tags: null });
    expect(ndjson[5]).toMatchObject({ cached_tokens: 1, cache_write_5m_tokens: 13, cache_write_1h_tokens: 2 });
    expect(ndjson[4]).toMatchObject({ cache_write_5m_tokens: 0, cache_write_1h_tokens: 0 });
    expect(ndjson[6]).toMatchObject({ status: 'pending', completed_at: null, cost_usd: null, est_cost_usd: '0.001006' });
    const csv = parseCsv(await collect(exportLedger({ ...whole, tenantId: keys.alpha.tenantId! }, 'csv')));
    expect(csv.length).toBe(1 + times.filter((_, i) => i % 3 !== 0).length);
    // An empty period: the CSV header alone, and no NDJSON line.
    expect(parseCsv(await collect(exportLedger(queries[6]![1], 'csv')))).toHaveLength(1);
    expect(await collect(exportLedger(queries[6]![1], 'ndjson'))).toBe('');
  });

  it('exports more rows than a page, complete and in order, ties across page boundaries included', async () => {
    const rows = 5_000;
    // Seven rows a millisecond: PostgreSQL's 1,000-row pages end inside a millisecond.
    const perMs = 7;
    const start = at('2026-11-02T00:00:00Z');
    const ids: string[] = [];
    let keyId = '';
    await seedBackend(backend, async ({ database, store }) => {
      keyId = store.createKey({ name: 'bulk', policy: { limits: [] } }).view.id;
      // Inserted directly: the writer is not what this measures.
      const insert = database.sqlite.prepare(
        `INSERT INTO ledger (request_id, key_id, created_at, completed_at, endpoint, model, stream, status, http_status, cost_micros, prompt_tokens, completion_tokens,
           est_prompt_tokens, est_completion_tokens, est_cost_micros, price_known)
         VALUES (?, ?, ?, ?, 'chat', 'gpt-4o-mini', ?, 'ok', 200, ?, 10, 20, 0, 0, 0, 1)`,
      );
      database.sqlite.transaction(() => {
        for (let i = 0; i < rows; i += 1) {
          const id = `bulk-${String(i).padStart(6, '0')}`;
          ids.push(id);
          const createdAt = start + Math.floor(i / perMs);
          insert.run(id, keyId, createdAt, createdAt + 10, i % 2 === 0 ? 1 : 0, i);
        }
      })();
      await Promise.resolve();
    });
    const day = { sinceMs: at('2026-11-02T00:00:00Z'), untilMs: at('2026-11-03T00:00:00Z') };
    for (const [name, query] of [
      ['day', day],
      ['key', { ...day, keyId }],
    ] as const) {
      const ndjson = await collect(exportLedger(query, 'ndjson'));
      expect(
        ndjson
          .trimEnd()
          .split('\n')
          .map((line) => (JSON.parse(line) as { request_id: string }).request_id),
      ).toEqual(ids);
      check(fixture.name, `bulk ${name}`, ndjson, { [keyId]: 'key:bulk' });
    }
    const csv = await collect(exportLedger(day, 'csv'));
    expect(csv.trimEnd().split('\r\n')).toHaveLength(1 + rows);
    check(fixture.name, 'bulk csv', csv, { [keyId]: 'key:bulk' });
  });
});
