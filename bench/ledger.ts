/**
 * Ledger write speed on a real SQLite file (WAL, synchronous=NORMAL): how many
 * requests per second the writer records (a pending insert and its settlement
 * each, rollups included), and how long a lone `begin` waits for its commit.
 *
 * Run: npx tsx bench/ledger.ts [--quick]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { openDatabase } from '../src/storage/sqlite/open.js';
import { SqliteLedgerWriter } from '../src/storage/sqlite/ledger-writer.js';
import type { PendingEntry } from '../src/storage/ledger.js';
import { startCheckpointer } from '../src/storage/sqlite/checkpointer.js';
import { SqliteKeyStore as KeyStore } from '../src/storage/sqlite/keys.js';
import { median, percentile, printTable, type BenchResult } from './support.js';

function entry(keyId: string, i: number, now: number): PendingEntry {
  return {
    requestId: `bench-${now}-${i}`,
    keyId,
    tenantId: null,
    createdAt: now,
    endpoint: 'chat',
    model: i % 3 === 0 ? 'gpt-4o' : 'gpt-4o-mini',
    stream: i % 2 === 0,
    estPromptTokens: 120,
    estCompletionTokens: 1024,
    estCostMicros: 650,
    priceKnown: true,
  };
}

export async function runLedgerBench(options: { quick?: boolean } = {}): Promise<BenchResult[]> {
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-ledger-bench-'));
  const database = openDatabase(join(dir, 'bench.db'));
  const store = new KeyStore(database);
  const keys = Array.from({ length: 50 }, (_, i) => store.createKey({ name: `bench-${i}`, policy: { limits: [] } }).view.id);
  const writer = new SqliteLedgerWriter(database);
  const checkpointer = startCheckpointer(database);
  const rounds = options.quick ? 3 : 5;
  const perRound = options.quick ? 20_000 : 50_000;
  const batch = 500; // requests arriving in one event-loop turn under load
  const rates: number[] = [];
  let counter = 0;
  try {
    for (let round = 0; round < rounds; round += 1) {
      const started = performance.now();
      for (let offset = 0; offset < perRound; offset += batch) {
        const now = Date.now();
        const entries = Array.from({ length: batch }, () => entry(keys[counter % keys.length]!, counter++, now));
        await Promise.all(entries.map((e) => writer.begin(e)));
        for (const e of entries) {
          writer.complete({
            requestId: e.requestId,
            completedAt: now + 300,
            status: 'ok',
            httpStatus: 200,
            promptTokens: 118,
            cachedTokens: 0,
            completionTokens: 87,
            reasoningTokens: 0,
            costMicros: 70,
            usageSource: 'reported',
            latencyMs: 300,
            ttftMs: 40,
            upstreamRequestId: 'up',
            errorCode: null,
          });
        }
      }
      writer.flush();
      rates.push(perRound / ((performance.now() - started) / 1000));
    }
    // A lone request on an idle proxy: begin() waits for the next turn's commit.
    const waits: number[] = [];
    for (let i = 0; i < (options.quick ? 200 : 1000); i += 1) {
      const started = performance.now();
      await writer.begin(entry(keys[0]!, counter++, Date.now()));
      waits.push((performance.now() - started) * 1000);
    }
    return [
      {
        name: 'ledger requests recorded/s',
        value: median(rates),
        unit: 'req/s',
        note: `pending insert + settlement + rollups, ${batch} per turn; median of ${rounds}`,
      },
      { name: 'ledger rows written/s', value: median(rates) * 2, unit: 'rows/s', note: 'inserts and updates' },
      { name: 'ledger begin→commit, idle', value: median(waits), unit: 'µs', note: `p99 ${percentile(waits, 99).toFixed(0)} µs (added before forwarding)` },
    ];
  } finally {
    await checkpointer.stop();
    writer.close();
    database.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  printTable(await runLedgerBench({ quick: process.argv.includes('--quick') }));
}
