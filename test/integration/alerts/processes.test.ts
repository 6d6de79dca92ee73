/**
 * "Once" across processes: two `tollgate serve` processes spend one key's
 * budget together and the receiver gets each threshold once — claimed in
 * the SQLite file they share, in Redis when it is configured, or in
 * PostgreSQL for replicas (each node with its own SQLite file).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../../../src/storage/sqlite/open.js';
import { PostgresKeyStore as PgKeyStore } from '../../../src/storage/postgres/keys.js';
import { SqliteKeyStore as KeyStore } from '../../../src/storage/sqlite/keys.js';
import { tempDatabasePath } from '../../support/db.js';
import { startFakeUpstream, type FakeUpstream } from '../../support/fake-upstream.js';
import { createTempPostgres, type TempPostgres } from '../../support/postgres.js';
import { spawnServe, type TollgateProcess } from '../../support/process.js';
import { startRedis, type RedisHandle } from '../../support/redis.js';
import { waitFor } from '../../support/wait.js';
import { startWebhookReceiver, type WebhookReceiver } from '../../support/webhook-receiver.js';

const UPSTREAM_KEY = 'sk-alerts-procs-0123456789';
const SECRET = 'whsec-procs-0123456789abcdef';

let fake: FakeUpstream;
let receiver: WebhookReceiver;
let redis: RedisHandle;
let pg: TempPostgres;
const procs: Array<TollgateProcess & { url: string }> = [];

beforeAll(async () => {
  fake = await startFakeUpstream({ apiKey: UPSTREAM_KEY });
  receiver = await startWebhookReceiver();
  redis = await startRedis();
  pg = await createTempPostgres();
}, 120_000);

afterAll(async () => {
  for (const proc of procs) {
    proc.child.kill('SIGTERM');
    await proc.exited;
  }
  await redis.stop();
  await pg.drop();
  await receiver.close();
  await fake.close();
});

async function twoProcesses(extraEnv: Record<string, string>): Promise<{ urls: string[]; key: string; name: string }> {
  const { dir, path } = tempDatabasePath();
  const name = `shared-${procs.length}`;
  const policy = { limits: [], budget: { microUsd: 100_000, period: 'month' as const } };
  const replicas = extraEnv.TOLLGATE_DATABASE_URL !== undefined;
  let key: string;
  if (replicas) key = (await new PgKeyStore(pg.pool).createKey({ name, policy })).key;
  else {
    const setup = openDatabase(path);
    key = new KeyStore(setup).createKey({ name, policy }).key;
    setup.close();
  }
  const configPath = join(dir, 'tollgate.json');
  writeFileSync(
    configPath,
    JSON.stringify({ alerts: { webhooks: [{ name: 'ops', url: receiver.url, secretEnv: 'OPS_HOOK_SECRET' }], velocity: { enabled: false } } }),
  );
  const env = {
    TOLLGATE_UPSTREAM_URL: fake.url,
    TOLLGATE_UPSTREAM_KEY: UPSTREAM_KEY,
    TOLLGATE_CONFIG: configPath,
    OPS_HOOK_SECRET: SECRET,
    TOLLGATE_MIN_OUTPUT_TOKENS: '1',
    ...extraEnv,
  };
  // Replicas each keep their own SQLite file (their key copy and outbox); the others share one.
  const started = await Promise.all(['a', 'b'].map((node) => spawnServe({ ...env, TOLLGATE_DB: replicas ? join(dir, `${node}.db`) : path })));
  procs.push(...started);
  return { urls: started.map((p) => p.url), key, name };
}

async function chat(url: string, key: string): Promise<number> {
  const response = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'x-fake-scenario': 'words=1000' },
    body: JSON.stringify({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }], max_tokens: 1000 }),
  });
  await response.arrayBuffer();
  return response.status;
}

const thresholdsFor = (name: string) =>
  receiver.deliveries
    .filter((d) => (d.json.owner as { name?: string } | undefined)?.name === name)
    .map((d) => (d.json.budget as { threshold: number }).threshold);

describe.each([
  ['sharing one SQLite file', 'sqlite', () => ({})],
  ['sharing Redis', 'redis', () => ({ TOLLGATE_REDIS_URL: redis.url })],
  ['sharing PostgreSQL (replicas, one SQLite file each)', 'postgres', () => ({ TOLLGATE_DATABASE_URL: pg.url })],
])('two processes %s', (_label, store, env) => {
  it('send each threshold once', async () => {
    const { urls, key, name } = await twoProcesses(env());
    const mine = procs.slice(-2);
    expect(mine.map((p) => p.logs.find((l) => l.msg === 'alerts on')?.claims)).toEqual([store, store]);
    // $0.01 a request against $0.10 a month, alternating processes, in rounds of concurrent pairs:
    // both processes see the 50% and 80% crossings within a second of each other.
    for (let round = 0; round < 4; round += 1) expect(await Promise.all(urls.map((url) => chat(url, key)))).toEqual([200, 200]);
    await waitFor(() => thresholdsFor(name).length >= 2, 'the 50% and 80% alerts', 60_000);
    // Both use up the rest (the last request is capped to what is left, or refused): 100%.
    for (const url of urls) expect([200, 429]).toContain(await chat(url, key));
    await waitFor(() => thresholdsFor(name).length >= 3, 'the 100% alert', 60_000);
    // Both processes look every second while they see spend: give each two more looks.
    await new Promise((resolve) => setTimeout(resolve, 2500));
    expect(thresholdsFor(name).sort()).toEqual([100, 50, 80]);
    const logged = procs.flatMap((p) => p.logs).filter((l) => l.msg === 'alert' && (l.owner as { name?: string } | undefined)?.name === name);
    expect(logged).toHaveLength(3);
  }, 240_000);
});
