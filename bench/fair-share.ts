/**
 * Fair share of the upstream connections: with
 * TOLLGATE_UPSTREAM_CONNECTIONS=4, one key holds 8 slow streams and another
 * key sends plain requests one after another; prints how long those take
 * (before the fix: 11.5 s, queued behind the streams). Loopback only.
 *
 * Run: npx tsx bench/fair-share.ts
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDatabase } from '../src/storage/sqlite/open.js';
import { SqliteKeyStore as KeyStore } from '../src/storage/sqlite/keys.js';
import { median, printTable, startChild, startTollgate } from './support.js';

const UPSTREAM_KEY = 'sk-fair';
const dir = mkdtempSync(join(tmpdir(), 'tollgate-fair-'));
const dbPath = join(dir, 'fair.db');
const setup = openDatabase(dbPath);
const store = new KeyStore(setup);
const slowKey = store.createKey({ name: 'slow', policy: { limits: [] } }).key;
const otherKey = store.createKey({ name: 'other', policy: { limits: [] } }).key;
setup.close();

const fake = await startChild(['bench/fake-upstream-server.ts', UPSTREAM_KEY]);
const proxy = await startTollgate({
  TOLLGATE_UPSTREAM_URL: fake.url,
  TOLLGATE_UPSTREAM_KEY: UPSTREAM_KEY,
  TOLLGATE_DB: dbPath,
  TOLLGATE_LOG_LEVEL: 'warn',
  TOLLGATE_UPSTREAM_CONNECTIONS: '4',
});

const chat = (key: string, scenario: string, stream: boolean, signal?: AbortSignal): Promise<Response> =>
  fetch(`${proxy.url}/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'x-fake-scenario': scenario },
    body: JSON.stringify({ model: 'gpt-4o-mini', stream, messages: [{ role: 'user', content: 'hi' }] }),
    ...(signal ? { signal } : {}),
  });

// Warm up (tokenizers, connections).
for (let i = 0; i < 5; i += 1) await (await chat(otherKey, '', false)).arrayBuffer();

const controller = new AbortController();
// ~50 s each: they hold their connections for the whole measurement.
const slow = Array.from({ length: 8 }, () =>
  chat(slowKey, 'delay=100,words=500', true, controller.signal).then(
    async (res) => {
      await res.arrayBuffer();
    },
    () => undefined,
  ),
);
await new Promise((resolve) => setTimeout(resolve, 1000));
const latencies: number[] = [];
for (let i = 0; i < 20; i += 1) {
  const started = performance.now();
  const res = await chat(otherKey, '', false);
  await res.arrayBuffer();
  if (res.status !== 200) throw new Error(`the other key got ${res.status}`);
  latencies.push(performance.now() - started);
}
controller.abort();
await Promise.allSettled(slow);
await proxy.stop();
await fake.stop();
rmSync(dir, { recursive: true, force: true });
printTable([
  { name: "other key's request while one key holds 8 slow streams (4 connections), median", value: median(latencies), unit: 'ms' },
  { name: '… worst of 20', value: Math.max(...latencies), unit: 'ms', note: 'must stay under 1 s (11.5 s before fair shares)' },
]);
