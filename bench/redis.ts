/**
 * Limits shared through Redis, measured through the proxy: two Tollgate
 * processes on one Redis, one hot key whose burst is far above a request's
 * cost; how many requests per second pass, and how many Redis script calls
 * each proxied request costs (from Redis's own INFO commandstats).
 *
 * Run: npx tsx bench/redis.ts [--quick]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Redis } from 'ioredis';
import { openDatabase } from '../src/storage/sqlite/open.js';
import { SqliteKeyStore as KeyStore } from '../src/storage/sqlite/keys.js';
import { parseLimit } from '../src/domain/policy.js';
import { startRedis } from '../test/support/redis.js';
import { chatBody1k } from './proxy.js';
import { measureThroughput, median, printTable, startChild, startTollgate, type BenchResult } from './support.js';

async function scriptCalls(redis: Redis): Promise<number> {
  const info = await redis.info('commandstats');
  let calls = 0;
  for (const match of info.matchAll(/^cmdstat_(evalsha|eval):calls=(\d+)/gm)) calls += Number(match[2]);
  return calls;
}

export async function runRedisBench(options: { quick?: boolean } = {}): Promise<BenchResult[]> {
  const rounds = options.quick ? 2 : 5;
  const seconds = options.quick ? 3 : 5;
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-redis-bench-'));
  const dbPath = join(dir, 'bench.db');
  const database = openDatabase(dbPath);
  // A hot key: 1 request and ~350 tokens per call against bursts of 2000 requests and 1M tokens (≥ 40× the cost).
  const key = new KeyStore(database).createKey({
    name: 'hot',
    policy: { limits: [parseLimit('requests:100000/min,burst=2000'), parseLimit('tokens:50000000/min,burst=1000000')] },
  }).key;
  database.close();
  const server = await startRedis();
  const redis = new Redis(server.url);
  const fake = await startChild(['bench/fake-upstream-server.ts', 'sk-bench']);
  const env = {
    TOLLGATE_UPSTREAM_URL: fake.url,
    TOLLGATE_UPSTREAM_KEY: 'sk-bench',
    TOLLGATE_DB: dbPath,
    TOLLGATE_REDIS_URL: server.url,
    TOLLGATE_LOG_LEVEL: 'warn',
  };
  const nodes = [await startTollgate(env), await startTollgate(env)];
  const body = chatBody1k();
  const targets = nodes.map((node) => ({
    baseUrl: node.url,
    path: '/chat/completions',
    body,
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
  }));
  const perRequest: number[] = [];
  const rates: number[] = [];
  try {
    await Promise.all(targets.map((t) => measureThroughput(t, 8, 1000))); // warm up, leases sized
    for (let round = 0; round < rounds; round += 1) {
      const before = await scriptCalls(redis);
      const perNode = await Promise.all(targets.map((t) => measureThroughput(t, 8, seconds * 1000)));
      const after = await scriptCalls(redis);
      const rate = perNode.reduce((a, b) => a + b, 0);
      rates.push(rate);
      perRequest.push((after - before) / (rate * seconds));
    }
  } finally {
    await Promise.all(nodes.map((n) => n.stop()));
    await fake.stop();
    redis.disconnect();
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  return [
    {
      name: 'redis: proxied requests/s, 2 nodes, hot key',
      value: median(rates),
      unit: 'req/s',
      note: `16 clients; median of ${rounds} rounds of ${seconds} s`,
    },
    {
      name: 'redis: script calls per proxied request',
      value: median(perRequest),
      unit: 'calls',
      note: 'target ≤ 0.05; burst ≥ 40× cost; 2 limits per request',
    },
  ];
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  printTable(await runRedisBench({ quick: process.argv.includes('--quick') }));
}
