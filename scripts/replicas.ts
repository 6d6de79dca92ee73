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
 *
 * It checks before it starts anything — the nodes' ports free, PostgreSQL and
 * Redis reachable — and says in one line what to change; each node's log is
 * shown with the node's name in front; the nodes are listed once every one of
 * them listens, and if one fails to, the others are stopped.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { createServer } from 'node:net';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import pg from 'pg';
import { redactUrl } from '../src/redact-url.js';
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

/** Why the script cannot go on: printed as one line, without a stack, and the script exits 1. */
class Refusal extends Error {}

/** Refuses when something already listens on one of the nodes' ports. */
async function checkPortsFree(): Promise<void> {
  for (let i = 0; i < NODES; i += 1) {
    const port = firstPort + i;
    await new Promise<void>((resolve, reject) => {
      const probe = createServer();
      probe.once('error', (error: NodeJS.ErrnoException) =>
        reject(
          new Refusal(
            error.code === 'EADDRINUSE'
              ? `port ${port} (node ${i + 1}) is in use (another Tollgate?) — stop it or set REPLICAS_PORT (nodes use ${firstPort}–${firstPort + NODES - 1})`
              : `cannot listen on port ${port} (${error.code ?? error.message}) — set REPLICAS_PORT`,
          ),
        ),
      );
      probe.listen({ port, host: '127.0.0.1', exclusive: true }, () => probe.close(() => resolve()));
    });
  }
}

/** Refuses when Redis does not answer a PING. */
async function checkRedis(url: string): Promise<void> {
  const client = new Redis(url, { lazyConnect: true, connectTimeout: 2000, maxRetriesPerRequest: 0, enableOfflineQueue: false, retryStrategy: () => null });
  // connect() rejects with "Connection is closed."; the error event has the reason.
  let reason: string | undefined;
  client.on('error', (error: Error) => (reason ??= error.message));
  try {
    await client.connect();
    await client.ping();
  } catch (error) {
    throw new Refusal(`Redis is not reachable at ${redactUrl(url)} (${reason ?? (error as Error).message}) — start redis-server or set TOLLGATE_REDIS_URL`);
  } finally {
    client.disconnect();
  }
}

/** Starts node `index` and resolves once it listens; rejects with its last words if it exits first. */
function startNode(index: number, upstream: { url: string; key: string } | undefined): { child: ChildProcess; listening: Promise<void> } {
  const name = `node-${index + 1}`;
  const child = spawn(process.execPath, ['--import', 'tsx', CLI, 'serve'], {
    cwd: ROOT,
    // Its own process group: Ctrl-C reaches this script alone, which stops each node once (a
    // second signal makes a node exit without draining).
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      ...process.env,
      TOLLGATE_PORT: String(firstPort + index),
      TOLLGATE_DB: `${ROOT}/data/replica-${index + 1}.db`,
      TOLLGATE_DATABASE_URL: databaseUrl,
      TOLLGATE_REDIS_URL: redisUrl,
      TOLLGATE_LOG_LEVEL: process.env.TOLLGATE_LOG_LEVEL ?? 'info',
      ...(upstream === undefined ? {} : { TOLLGATE_UPSTREAM_URL: upstream.url, TOLLGATE_UPSTREAM_KEY: upstream.key }),
    },
  });
  let lastWords = '';
  let markListening: () => void = () => undefined;
  const listening = new Promise<void>((resolve, reject) => {
    markListening = resolve;
    child.once('exit', (code, signal) =>
      reject(new Refusal(`${name} exited (${signal ?? code}) before it listened${lastWords === '' ? '' : `: ${lastWords}`}`)),
    );
  });
  // Swallowed once handled: a node that exits after it listened is reported by the exit handler below.
  listening.catch(() => undefined);
  const show = (stream: NodeJS.WriteStream) => (line: string) => {
    if (line.trim() !== '') lastWords = line;
    if (line.includes('"msg":"tollgate listening"')) markListening();
    stream.write(`[${name}] ${line}\n`);
  };
  createInterface({ input: child.stdout! }).on('line', show(process.stdout));
  createInterface({ input: child.stderr! }).on('line', show(process.stderr));
  return { child, listening };
}

const children: ChildProcess[] = [];
let fake: Awaited<ReturnType<typeof startFakeUpstream>> | undefined;
let key: string;
try {
  await checkPortsFree();
  try {
    await ensureDatabase(databaseUrl);
  } catch (error) {
    throw new Refusal(`PostgreSQL is not reachable at ${redactUrl(databaseUrl)} (${(error as Error).message}) — start it or set TOLLGATE_DATABASE_URL`);
  }
  await checkRedis(redisUrl);
  const pool = openPg(databaseUrl);
  try {
    await migratePg(pool);
    const ops = openKeyStore({ kind: 'postgres', pool });
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
  } finally {
    await pool.end();
  }

  fake = process.env.TOLLGATE_UPSTREAM_URL === undefined ? await startFakeUpstream({ apiKey: 'sk-replicas-demo' }) : undefined;
  mkdirSync(`${ROOT}/data`, { recursive: true });
  const started = [];
  for (let i = 0; i < NODES; i += 1) {
    const node = startNode(i, fake === undefined ? undefined : { url: fake.url, key: 'sk-replicas-demo' });
    children.push(node.child);
    started.push(node.listening);
  }
  await Promise.all(started);
} catch (error) {
  process.stderr.write(`replicas: ${error instanceof Refusal ? error.message : String(error)}\n`);
  for (const child of children) if (child.exitCode === null) child.kill('SIGTERM');
  await Promise.all(children.map((child) => (child.exitCode !== null ? undefined : new Promise((resolve) => child.once('exit', resolve)))));
  await fake?.close();
  process.exit(1);
}

const urls = children.map((_, i) => `http://127.0.0.1:${firstPort + i}`);
process.stdout.write(`
Tollgate: ${NODES} nodes sharing PostgreSQL and Redis
  nodes:      ${urls.map((u) => `${u}/v1`).join('\n              ')}
  postgres:   ${redactUrl(databaseUrl)}   (keys, tenants, ledger, rollups)
  redis:      ${redactUrl(redisUrl)}   (shared buckets and budget counters)
  upstream:   ${fake === undefined ? process.env.TOLLGATE_UPSTREAM_URL : `${fake.url} (built-in fake)`}
  demo key:   ${key}
              (60 requests per minute and $1 per day, across all nodes together)

Send requests to any node:

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
// The nodes are in their own process group: they must not outlive this script, however it ends.
process.on('exit', () => {
  for (const child of children) if (child.exitCode === null) child.kill('SIGTERM');
});
process.on('SIGTERM', () => void stop());
for (const child of children) child.once('exit', (code) => !stopping && process.stderr.write(`a node exited (${String(code)}); Ctrl-C to stop the others\n`));
