/**
 * `npm run replicas`: three Tollgate nodes on this machine, sharing a local
 * PostgreSQL and Redis (README "Running replicas"). Each node has its own
 * SQLite file (its key copy and ledger outbox) and port; all three see the
 * same keys, limits, budgets and spend.
 *
 * Settings (environment): TOLLGATE_DATABASE_URL (default: database
 * `tollgate_replicas` on postgres://postgres@127.0.0.1:5432, created when
 * missing), TOLLGATE_REDIS_URL (default redis://127.0.0.1:6379),
 * TOLLGATE_UPSTREAM_URL and TOLLGATE_UPSTREAM_KEY (default: the built-in
 * fake upstream, so it works offline), REPLICAS_PORT (first port, default
 * 8787). Ctrl-C stops everything.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { openKeyStore } from '../src/storage/index.js';
import { migratePg, openPg } from '../src/storage/postgres/open.js';
import { startFakeUpstream } from '../src/demo/fake-upstream/index.js';
import { TollgateError } from '../src/domain/errors.js';
import { parseLimit } from '../src/domain/policy.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const CLI = fileURLToPath(new URL('../src/cli/index.ts', import.meta.url));
const NODES = 3;

const databaseUrl = process.env.TOLLGATE_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/tollgate_replicas';
const redisUrl = process.env.TOLLGATE_REDIS_URL ?? 'redis://127.0.0.1:6379';
const firstPort = Number(process.env.REPLICAS_PORT ?? 8787);

/** Creates the database named in the URL when it does not exist (the default one, typically). */
async function ensureDatabase(url: string): Promise<void> {
  const target = new URL(url);
  const name = decodeURIComponent(target.pathname.slice(1));
  const server = new URL(url);
  server.pathname = '/postgres';
  const client = new pg.Client({ connectionString: server.toString(), connectionTimeoutMillis: 3000 });
  await client.connect();
  try {
    const exists = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (exists.rowCount === 0) await client.query(`CREATE DATABASE "${name.replace(/"/g, '""')}"`);
  } finally {
    await client.end();
  }
}

await ensureDatabase(databaseUrl);
const pool = openPg(databaseUrl);
await migratePg(pool);
const ops = openKeyStore({ kind: 'postgres', pool });
let key: string;
try {
  key = (await ops.rotateKey('replicas-demo')).key;
} catch (error) {
  if (!(error instanceof TollgateError) || error.code !== 'not_found') throw error;
  key = (
    await ops.createKey({
      name: 'replicas-demo',
      policy: { limits: [parseLimit('requests:60/min')], budget: { microUsd: 1_000_000, period: 'day' } },
    })
  ).key;
}
await pool.end();

const fake = process.env.TOLLGATE_UPSTREAM_URL === undefined ? await startFakeUpstream({ apiKey: 'sk-replicas-demo' }) : undefined;
mkdirSync(`${ROOT}/data`, { recursive: true });
const children: ChildProcess[] = [];
for (let i = 0; i < NODES; i += 1) {
  const child = spawn(process.execPath, ['--import', 'tsx', CLI, 'serve'], {
    cwd: ROOT,
    stdio: ['ignore', 'ignore', 'inherit'],
    env: {
      ...process.env,
      TOLLGATE_PORT: String(firstPort + i),
      TOLLGATE_DB: `${ROOT}/data/replica-${i + 1}.db`,
      TOLLGATE_DATABASE_URL: databaseUrl,
      TOLLGATE_REDIS_URL: redisUrl,
      TOLLGATE_LOG_LEVEL: process.env.TOLLGATE_LOG_LEVEL ?? 'warn',
      ...(fake === undefined ? {} : { TOLLGATE_UPSTREAM_URL: fake.url, TOLLGATE_UPSTREAM_KEY: 'sk-replicas-demo' }),
    },
  });
  children.push(child);
}

const urls = children.map((_, i) => `http://127.0.0.1:${firstPort + i}`);
process.stdout.write(`
Tollgate: ${NODES} nodes sharing PostgreSQL and Redis
  nodes:      ${urls.map((u) => `${u}/v1`).join('\n              ')}
  postgres:   ${databaseUrl.replace(/\/\/[^@/]*@/, '//…@')}   (keys, tenants, ledger, rollups)
  redis:      ${redisUrl}   (shared buckets and budget counters)
  upstream:   ${fake === undefined ? process.env.TOLLGATE_UPSTREAM_URL : `${fake.url} (built-in fake)`}
  demo key:   ${key}
              (60 requests per minute and $1 per day, across all nodes together)

Send requests to any node (they start in a few seconds):

  curl ${urls[1]}/v1/chat/completions \\
    -H 'authorization: Bearer ${key}' -H 'content-type: application/json' \\
    -d '{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Say hello"}]}'

Spend over every node, from PostgreSQL:

  TOLLGATE_DATABASE_URL=${databaseUrl} npm run tollgate -- spend --by model

Press Ctrl-C to stop.
`);

let stopping = false;
const stop = async (): Promise<void> => {
  if (stopping) return;
  stopping = true;
  await Promise.all(
    children.map(
      (child) =>
        new Promise<void>((resolve) => {
          if (child.exitCode !== null) return resolve();
          child.once('exit', () => resolve());
          child.kill('SIGTERM');
        }),
    ),
  );
  await fake?.close();
  process.exit(0);
};
process.on('SIGINT', () => void stop());
process.on('SIGTERM', () => void stop());
for (const child of children) child.once('exit', (code) => !stopping && process.stderr.write(`a node exited (${String(code)}); Ctrl-C to stop the others\n`));
