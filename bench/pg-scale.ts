/**
 * Replicas at scale: 10 million ledger rows (1 million with `--quick`) from
 * 1000 keys over the last 90 days, loaded into a fresh PostgreSQL database,
 * with the five rollups built from the rows in the same shape the shipper
 * keeps them (checked against the shipper's own arithmetic, row-counts.ts,
 * for a few keys); then every dashboard page and JSON endpoint on
 * PostgreSQL's reads (src/storage/postgres/dashboard-reads.ts, in-process through
 * `app.request`) and `tollgate spend` (its query in-process, and the whole
 * CLI as a process) are timed: median and p95.
 *
 * The rows are made by PostgreSQL itself (INSERT … SELECT over
 * generate_series, seeded random(), half a million rows a statement, the
 * ledger's secondary indexes built afterwards), as COPY would but without
 * sending 10M rows over the socket. The database is dropped afterwards
 * unless `--keep`.
 *
 * Needs a PostgreSQL server: TOLLGATE_BENCH_PG_URL (default
 * postgres://postgres@127.0.0.1:5432/postgres; trust auth, as on CI).
 *
 * Run: npx tsx bench/pg-scale.ts [--quick] [--rows N] [--keep] [--reuse URL-of-a-kept-database]
 * (`--reuse` measures again without loading; its prune then finds nothing left to delete).
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Hono } from 'hono';
import pg from 'pg';
import type { AppEnv } from '../src/app-env.js';
import { calendarDay, HOUR_MS, monthStartOf, addDays } from '../src/domain/calendar.js';
import { createDashboardApiRoutes, createDashboardRoutes, createSessionValue, SESSION_COOKIE } from '../src/dashboard/index.js';
import { PostgresDashboardReads } from '../src/storage/postgres/dashboard-reads.js';
import { openDatabase } from '../src/storage/sqlite/open.js';
import { migratePg, openPg, type PgPool } from '../src/storage/postgres/open.js';
import { builtinPriceTable } from '../src/estimate/prices.js';
import { pruneLedger } from '../src/storage/postgres/retention.js';
import { countsOf, type LedgerState } from '../src/storage/row-counts.js';
import { queryPgSpend } from '../src/storage/postgres/spend-reads.js';
import type { SpendQuery } from '../src/storage/spend-reads.js';
import { median, percentile, printTable, REPO_ROOT, type BenchResult } from './support.js';

const SERVER_URL = process.env.TOLLGATE_BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const KEYS = 1000;
const TENANTS = 25;
const DAYS = 90;
const ADMIN_TOKEN = 'bench-admin-token-0123456789abcdef';
const MODELS = ['gpt-4o-mini', 'gpt-4o', 'gpt-4.1', 'gpt-4.1-mini', 'o3-mini', 'text-embedding-3-small'];
/** Rows per INSERT … SELECT statement. */
const CHUNK = 500_000;

function withDatabase(url: string, name: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${name}`;
  return parsed.toString();
}

async function onServer<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: SERVER_URL, connectionTimeoutMillis: 5000 });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

/** Keys as the bench dashboard's (bench/dashboard.ts): every sixth with a day, month or total budget, most in one of 25 tenants. */
function policySql(): string {
  const limits = `"limits":[{"name":"requests-per-min","unit":"requests","amount":600,"period":"min","burst":600},{"name":"tokens-per-min","unit":"tokens","amount":200000,"period":"min","burst":200000}]`;
  return `CASE n % 6
    WHEN 0 THEN '{${limits},"budget":{"microUsd":5000000,"period":"day"}}'
    WHEN 1 THEN '{${limits},"budget":{"microUsd":100000000,"period":"month"}}'
    WHEN 2 THEN '{${limits},"budget":{"microUsd":400000000,"period":"total"}}'
    ELSE '{${limits}}' END`;
}

/**
 * The ledger rows, made by PostgreSQL: evenly over the 90 days to `now`, keys
 * skewed (the product of two uniform picks: a few big spenders, a long tail),
 * each key mostly on two models; 1.5% rate-limited and 0.5% over budget
 * (refusals), 1% upstream errors (half of them 429s), 0.5% client aborts, the
 * rest ok; the last 20 s still pending.
 */
function ledgerInsertSql(rows: number, now: number, from: number, to: number): string {
  const start = now - DAYS * 86_400_000;
  const step = (DAYS * 86_400_000) / rows;
  const models = MODELS.map((name, n) => {
    const price = builtinPriceTable.models[name] ?? builtinPriceTable.fallback;
    return `(${n}, '${name}', ${price.inputMicroUsdPer1M}, ${price.outputMicroUsdPer1M})`;
  }).join(', ');
  return `
    WITH m(n, name, input, output) AS (VALUES ${models}),
    draw AS (
      SELECT i, (${start} + floor(i::float8 * ${step}))::bigint AS t, floor(random() * random() * ${KEYS})::int AS k,
        random() AS roll, random() AS model_roll, 40 + floor(random() * 3000)::int AS p, 5 + floor(random() * 900)::int AS c,
        150 + floor(random() * 4000)::int AS latency, random() < 0.5 AS stream
      FROM generate_series(${from}, ${to - 1}) AS i
    ),
    shaped AS (
      SELECT d.*, mm.name AS model, mm.input, mm.output,
        CASE WHEN d.t > ${now - 20_000} THEN 'pending' WHEN d.roll < 0.015 THEN 'rate_limit' WHEN d.roll < 0.02 THEN 'budget'
             WHEN d.roll < 0.03 THEN 'upstream_error' WHEN d.roll < 0.035 THEN 'client_aborted' ELSE 'ok' END AS outcome
      FROM draw d JOIN m mm ON mm.n = CASE WHEN d.model_roll < 0.75 THEN d.k % 4 WHEN d.model_roll < 0.97 THEN (d.k + 1) % 4 ELSE 4 + d.k % 2 END
    ),
    costed AS (
      SELECT s.*,
        CASE s.outcome WHEN 'ok' THEN s.c WHEN 'client_aborted' THEN s.c / 2 ELSE 0 END AS completion,
        CASE WHEN s.outcome IN ('ok', 'client_aborted') THEN s.p ELSE 0 END AS prompt,
        CASE s.outcome WHEN 'ok' THEN s.p / 4 ELSE 0 END AS cached,
        ceil((s.p::numeric * s.input + 1024::numeric * s.output) / 1000000)::bigint AS est_cost
      FROM shaped s
    )
    INSERT INTO ledger (request_id, key_id, tenant_id, created_at, completed_at, endpoint, model, stream, status, http_status,
      est_prompt_tokens, est_completion_tokens, est_cost_micros, prompt_tokens, cached_tokens, completion_tokens,
      reasoning_tokens, cost_micros, price_known, usage_source, latency_ms, ttft_ms, upstream_request_id, error_code)
    SELECT 'req_' || lpad(i::text, 11, '0'), 'key_bench_' || lpad(k::text, 4, '0'),
      CASE WHEN k % 10 = 9 THEN NULL ELSE 'tnt_bench_' || lpad((k % ${TENANTS})::text, 2, '0') END,
      t,
      CASE outcome WHEN 'pending' THEN NULL WHEN 'rate_limit' THEN t WHEN 'budget' THEN t ELSE t + latency END,
      CASE WHEN model LIKE 'text-embedding%' THEN 'embeddings' ELSE 'chat' END, model, stream,
      CASE WHEN outcome IN ('rate_limit', 'budget') THEN 'rejected' ELSE outcome END,
      CASE outcome WHEN 'pending' THEN NULL WHEN 'rate_limit' THEN 429 WHEN 'budget' THEN 429
        WHEN 'upstream_error' THEN CASE WHEN i % 2 = 0 THEN 429 ELSE 500 END ELSE 200 END,
      p, 1024, est_cost,
      CASE WHEN outcome = 'pending' THEN NULL ELSE prompt END,
      CASE WHEN outcome = 'pending' THEN NULL ELSE cached END,
      CASE WHEN outcome = 'pending' THEN NULL ELSE completion END,
      CASE WHEN outcome = 'pending' THEN NULL ELSE 0 END,
      CASE WHEN outcome = 'pending' THEN NULL WHEN prompt = 0 THEN 0 ELSE ceil((prompt::numeric * input + completion::numeric * output) / 1000000)::bigint END,
      true,
      CASE outcome WHEN 'pending' THEN NULL WHEN 'ok' THEN 'reported' WHEN 'client_aborted' THEN 'counted' ELSE 'none' END,
      CASE outcome WHEN 'pending' THEN NULL WHEN 'rate_limit' THEN 0 WHEN 'budget' THEN 0 ELSE latency END,
      CASE WHEN outcome IN ('ok', 'client_aborted') AND stream THEN latency / 5 ELSE NULL END,
      CASE WHEN outcome IN ('ok', 'client_aborted', 'upstream_error') THEN 'chatcmpl-' || i ELSE NULL END,
      CASE outcome WHEN 'rate_limit' THEN 'rate_limit_exceeded' WHEN 'budget' THEN 'insufficient_quota' ELSE NULL END
    FROM costed`;
}

/** Each row's rollup amounts, as row-counts.ts's countsOf computes them. */
const COUNTS = `
  CASE WHEN status IN ('rejected', 'invalid_request') THEN 0 ELSE 1 END AS requests,
  CASE WHEN status = 'pending' THEN est_prompt_tokens WHEN status IN ('rejected', 'invalid_request') THEN 0 ELSE coalesce(prompt_tokens, 0) END AS prompt_tokens,
  CASE WHEN status IN ('pending', 'rejected', 'invalid_request') THEN 0 ELSE coalesce(cached_tokens, 0) END AS cached_tokens,
  CASE WHEN status = 'pending' THEN est_completion_tokens WHEN status IN ('rejected', 'invalid_request') THEN 0 ELSE coalesce(completion_tokens, 0) END AS completion_tokens,
  CASE WHEN status IN ('pending', 'rejected', 'invalid_request') THEN 0 ELSE coalesce(reasoning_tokens, 0) END AS reasoning_tokens,
  CASE WHEN status = 'pending' THEN est_cost_micros WHEN status IN ('rejected', 'invalid_request') THEN 0 ELSE coalesce(cost_micros, 0) END AS cost_micros,
  CASE WHEN status IN ('pending', 'ok') THEN 0
       WHEN status IN ('rejected', 'invalid_request') THEN CASE WHEN error_code IN ('rate_limit_exceeded', 'insufficient_quota') THEN 0 ELSE 1 END
       ELSE 1 END AS errors,
  CASE WHEN status IN ('rejected', 'invalid_request') AND error_code = 'rate_limit_exceeded' THEN 1 ELSE 0 END AS rejected_rate_limit,
  CASE WHEN status IN ('rejected', 'invalid_request') AND error_code = 'insufficient_quota' THEN 1 ELSE 0 END AS rejected_budget`;
const SUMMED = `sum(requests), sum(prompt_tokens), sum(cached_tokens), sum(completion_tokens), sum(reasoning_tokens), sum(cost_micros),
  sum(errors), sum(rejected_rate_limit), sum(rejected_budget)`;
const COUNTERS = 'requests, prompt_tokens, cached_tokens, completion_tokens, reasoning_tokens, cost_micros, errors, rejected_rate_limit, rejected_budget';

/** The five rollups from the rows (UTC days, ISO dates as text: the bench runs with the default time zone and DateStyle). */
async function buildRollups(pool: pg.Client): Promise<void> {
  const counted = `(SELECT key_id, model, created_at, (DATE '1970-01-01' + (created_at / 86400000)::int)::text AS day, ${COUNTS} FROM ledger) AS c`;
  await pool.query(`INSERT INTO rollups_daily (key_id, day, model, ${COUNTERS}, last_request_at)
    SELECT key_id, day, model, ${SUMMED}, max(created_at) FROM ${counted} GROUP BY key_id, day, model`);
  await pool.query(`INSERT INTO rollups_hourly (key_id, hour, requests, prompt_tokens, completion_tokens, cost_micros, rejected_rate_limit, rejected_budget)
    SELECT key_id, created_at - created_at % ${HOUR_MS}, sum(requests), sum(prompt_tokens), sum(completion_tokens), sum(cost_micros),
      sum(rejected_rate_limit), sum(rejected_budget) FROM ${counted} GROUP BY key_id, created_at - created_at % ${HOUR_MS}`);
  // The others from the daily rollup, as the shipper moves them together.
  await pool.query(`INSERT INTO rollups_monthly (month, key_id, model, ${COUNTERS}, last_request_at)
    SELECT left(day, 7), key_id, model, ${SUMMED}, max(last_request_at) FROM rollups_daily GROUP BY left(day, 7), key_id, model`);
  await pool.query(`INSERT INTO rollups_daily_total (day, ${COUNTERS}) SELECT day, ${SUMMED} FROM rollups_daily GROUP BY day`);
  await pool.query(`INSERT INTO rollups_lifetime (key_id, ${COUNTERS}, last_request_at)
    SELECT key_id, ${SUMMED}, max(last_request_at) FROM rollups_daily GROUP BY key_id`);
}

/** The generated rollups must equal the shipper's arithmetic over the rows, or the bench measures nonsense. */
async function checkRollups(pool: PgPool, keyIds: readonly string[]): Promise<void> {
  for (const keyId of keyIds) {
    const rows = (await pool.query<LedgerState>('SELECT * FROM ledger WHERE key_id = $1', [keyId])).rows;
    const byDay = new Map<string, number>();
    let cost = 0;
    let requests = 0;
    for (const row of rows) {
      const counts = countsOf(row);
      const day = calendarDay(row.created_at);
      byDay.set(day, (byDay.get(day) ?? 0) + counts.costMicros);
      cost += counts.costMicros;
      requests += counts.requests;
    }
    const report = await queryPgSpend(pool, { keyId, since: '0000-01-01', until: '9999-12-31', by: 'day' });
    const lifetime = (await pool.query<{ cost: number }>('SELECT cost_micros AS cost FROM rollups_lifetime WHERE key_id = $1', [keyId])).rows[0]?.cost ?? 0;
    const hourly = (await pool.query<{ cost: number }>('SELECT coalesce(sum(cost_micros), 0) AS cost FROM rollups_hourly WHERE key_id = $1', [keyId])).rows[0]!
      .cost;
    const days = new Map(report.rows.map((row) => [row.group, row.costMicros]));
    const sameDays = byDay.size === days.size && [...byDay].every(([day, value]) => days.get(day) === value);
    if (!sameDays || report.total.costMicros !== cost || report.total.requests !== requests || lifetime !== cost || hourly !== cost) {
      throw new Error(`generated rollups disagree with the rows for ${keyId}: ${JSON.stringify({ cost, requests, total: report.total, lifetime, hourly })}`);
    }
  }
}

interface Loaded {
  readonly url: string;
  readonly name: string;
  readonly pool: PgPool;
  readonly now: number;
  readonly timings: BenchResult[];
}

/** A fresh database with `rows` ledger rows, their keys and their rollups. */
async function load(rows: number, label: string): Promise<Loaded> {
  const name = `tollgate_bench_${randomBytes(5).toString('hex')}`;
  await onServer((client) => client.query(`CREATE DATABASE ${name}`));
  const url = withDatabase(SERVER_URL, name);
  // The pool a node opens (src/storage/postgres/open.ts: 4 connections), so the pages wait for connections as they would on a node.
  const pool = openPg(url);
  await migratePg(pool);
  // One `now` for the rows and the pages; the CLI's own clock is a few seconds later (the same day, barring midnight).
  const now = Date.now();
  const created = now - DAYS * 86_400_000;
  const timings: BenchResult[] = [];
  const timed = async (what: string, work: () => Promise<unknown>) => {
    const started = performance.now();
    await work();
    const seconds = (performance.now() - started) / 1000;
    process.stderr.write(`pg-scale: ${what} ${seconds.toFixed(1)} s\n`);
    return seconds;
  };

  const loadSeconds = await timed('keys', async () => {
    await pool.query(
      `INSERT INTO tenants (id, name, created_at, updated_at, version)
       SELECT 'tnt_bench_' || lpad(n::text, 2, '0'), 'tenant-' || lpad(n::text, 2, '0'), $1, $1, n + 1 FROM generate_series(0, ${TENANTS - 1}) AS n`,
      [created],
    );
    await pool.query(
      `INSERT INTO api_keys (id, name, tenant_id, key_hash, prefix, created_at, updated_at, policy, version)
       SELECT 'key_bench_' || lpad(n::text, 4, '0'), 'bench-key-' || lpad(n::text, 4, '0'),
         CASE WHEN n % 10 = 9 THEN NULL ELSE 'tnt_bench_' || lpad((n % ${TENANTS})::text, 2, '0') END,
         md5('bench-key-' || n), 'tg-' || substr(md5('prefix' || n), 1, 8), $1, $1, ${policySql()}, n + 1
       FROM generate_series(0, ${KEYS - 1}) AS n`,
      [created],
    );
  });
  // The ledger's secondary indexes are built once after the load (much faster than row by row); the schema ends up identical.
  const indexes = (
    await pool.query<{ name: string; sql: string }>(
      `SELECT indexname AS name, indexdef AS sql FROM pg_indexes WHERE tablename = 'ledger' AND indexname <> 'ledger_pkey'`,
    )
  ).rows;
  let rowSeconds = 0;
  // Its own connection: the load's statements run for minutes, past the pool's 30 s query timeout (src/storage/postgres/open.ts).
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    // One session, no parallel workers: seeded random() gives the same rows on every run.
    await client.query('SET max_parallel_workers_per_gather = 0');
    await client.query('SET synchronous_commit = off');
    await client.query('SELECT setseed(0.13)');
    for (const index of indexes) await client.query(`DROP INDEX ${index.name}`);
    for (let from = 0; from < rows; from += CHUNK) {
      const to = Math.min(rows, from + CHUNK);
      rowSeconds += await timed(`ledger rows to ${to.toLocaleString('en-US')}`, () => client.query(ledgerInsertSql(rows, now, from, to)));
    }
    rowSeconds += await timed('ledger indexes', async () => {
      await client.query('SET maintenance_work_mem = "256MB"');
      for (const index of indexes) await client.query(index.sql);
    });
  } finally {
    await client.end();
  }
  const long = new pg.Client({ connectionString: url });
  await long.connect();
  let rollupSeconds;
  let analyzeSeconds;
  try {
    rollupSeconds = await timed('rollups', () => buildRollups(long));
    // Statistics, as autovacuum would gather on a table this size soon after a big load.
    analyzeSeconds = await timed('analyze', () => long.query('ANALYZE'));
  } finally {
    await long.end();
  }
  await timed('check', () => checkRollups(pool, ['key_bench_0998', 'key_bench_0999', 'key_bench_0500']));
  const size = (await pool.query<{ size: string }>(`SELECT pg_size_pretty(pg_database_size(current_database())) AS size`)).rows[0]!.size;
  timings.push(
    { name: `pg-scale load: ledger rows (${label})`, value: rowSeconds, unit: 's', note: `INSERT … SELECT generate_series + index builds; database ${size}` },
    { name: `pg-scale load: rollups from the rows (${label})`, value: rollupSeconds, unit: 's', note: 'five rollups, checked against row-counts.ts' },
    { name: `pg-scale load: keys + ANALYZE`, value: loadSeconds + analyzeSeconds, unit: 's', note: `${KEYS} keys, ${TENANTS} tenants` },
  );
  return { url, name, pool, now, timings };
}

function labelOf(rows: number): string {
  return rows >= 1_000_000 ? `${(rows / 1_000_000).toFixed(rows % 1_000_000 === 0 ? 0 : 1)}M rows` : `${rows} rows`;
}

interface Target {
  readonly name: string;
  readonly path: string;
  /** Text the answer must contain (a wrong page must not pass as fast). */
  readonly expect: string;
}

async function timeRequest(app: Hono<AppEnv>, cookie: string, target: Target): Promise<number> {
  const started = performance.now();
  const response = await app.request(target.path, { headers: { cookie } });
  const body = await response.text();
  const elapsed = performance.now() - started;
  if (response.status !== 200 || !body.includes(target.expect)) {
    throw new Error(`${target.path} answered ${response.status} without "${target.expect}": ${body.slice(0, 200)}`);
  }
  return elapsed;
}

async function timeRounds(runs: number, work: () => Promise<unknown>): Promise<number[]> {
  for (let i = 0; i < 2; i += 1) await work();
  const samples: number[] = [];
  for (let i = 0; i < runs; i += 1) {
    const started = performance.now();
    await work();
    samples.push(performance.now() - started);
  }
  return samples;
}

/** `tollgate spend …` as a user runs it: its own process on PostgreSQL, wall time including start-up. */
function runCli(url: string, args: readonly string[]): Promise<number> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(new URL('../src/cli/index.ts', import.meta.url)), ...args], {
      cwd: REPO_ROOT,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', TOLLGATE_DATABASE_URL: url, TOLLGATE_DB: '/nonexistent/never-opened.db' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.on('exit', (code) => (code === 0 ? resolve(performance.now() - started) : reject(new Error(`tollgate ${args.join(' ')} exited ${code}: ${out}`))));
  });
}

/** A database kept by an earlier `--keep` run: measured again without loading (its `now` is just after its newest row). */
async function reuse(url: string): Promise<Loaded> {
  const pool = openPg(url);
  await migratePg(pool);
  const newest = (await pool.query<{ t: number }>('SELECT max(created_at) AS t FROM ledger')).rows[0]!.t;
  return { url, name: new URL(url).pathname.slice(1), pool, now: newest + 1, timings: [] };
}

export async function runPgScaleBench(options: { quick?: boolean; rows?: number; keep?: boolean; reuse?: string } = {}): Promise<BenchResult[]> {
  const rows = options.rows ?? (options.quick ? 1_000_000 : 10_000_000);
  const runs = options.quick ? 10 : 25;
  const loaded = options.reuse === undefined ? await load(rows, labelOf(rows)) : await reuse(options.reuse);
  const label = labelOf(options.reuse === undefined ? rows : (await loaded.pool.query<{ n: number }>('SELECT count(*) AS n FROM ledger')).rows[0]!.n);
  const results: BenchResult[] = [...loaded.timings];
  const { pool, now } = loaded;
  // The dashboard's own SQLite file is not read on a replica (a placeholder for the routes' other needs).
  const scratch = join(tmpdir(), `tollgate-pg-scale-${process.pid}.db`);
  const database = openDatabase(scratch);
  try {
    const deps = { database, reads: new PostgresDashboardReads(pool), adminToken: ADMIN_TOKEN, now: () => now };
    const app = new Hono<AppEnv>();
    app.route('/dashboard', createDashboardRoutes(deps));
    app.route('/admin/api/dashboard', createDashboardApiRoutes(deps));
    const cookie = `${SESSION_COOKIE}=${createSessionValue(ADMIN_TOKEN, now)}`;
    const today = calendarDay(now);
    const monthStart = monthStartOf(today);
    const biggest = (
      await pool.query<{ id: string }>('SELECT key_id AS id FROM rollups_monthly WHERE month = $1 GROUP BY key_id ORDER BY sum(cost_micros) DESC LIMIT 1', [
        today.slice(0, 7),
      ])
    ).rows[0]!.id;
    const keyRows = (await pool.query<{ n: number }>('SELECT count(*) AS n FROM ledger WHERE key_id = $1', [biggest])).rows[0]!.n;
    const targets: Target[] = [
      { name: 'overview page', path: '/dashboard', expect: 'Spend overview' },
      { name: 'overview JSON', path: '/admin/api/dashboard/overview', expect: '"page":"overview"' },
      { name: 'keys page, by spend this month', path: '/dashboard/keys', expect: 'Showing 1' },
      { name: 'keys page, by budget used', path: '/dashboard/keys?sort=budget', expect: 'Showing 1' },
      { name: 'keys page, one tenant', path: '/dashboard/keys?tenant=tnt_bench_00', expect: 'Showing 1' },
      { name: 'keys JSON', path: '/admin/api/dashboard/keys', expect: '"page":"keys"' },
      { name: `key page, biggest key (${keyRows.toLocaleString('en-US')} rows)`, path: `/dashboard/keys/${biggest}`, expect: 'Latest requests' },
      { name: 'key JSON, biggest key', path: `/admin/api/dashboard/keys/${biggest}`, expect: '"page":"key"' },
      { name: 'key page, smallest key', path: '/dashboard/keys/key_bench_0999', expect: 'Latest requests' },
    ];
    for (const target of targets) {
      const samples = await timeRounds(runs, () => timeRequest(app, cookie, target));
      results.push({
        name: `pg dashboard ${target.name}`,
        value: median(samples),
        unit: 'ms',
        note: `p95 ${percentile(samples, 95).toFixed(1)} ms, ${runs} runs, ${label}`,
      });
    }

    const spendQueries: Array<[string, SpendQuery]> = [
      ['spend (last 7 days by day)', { since: addDays(today, -6), by: 'day' }],
      ['spend --since month --by key', { since: monthStart, by: 'key' }],
      ['spend --since 90d --by model', { since: addDays(today, -89), by: 'model' }],
      ['spend --since 90d --by tenant', { since: addDays(today, -89), by: 'tenant' }],
      [`spend --key <biggest> --since 90d`, { keyId: biggest, since: addDays(today, -89), by: 'day' }],
    ];
    for (const [name, query] of spendQueries) {
      const samples = await timeRounds(runs, () => queryPgSpend(pool, query, now));
      results.push({
        name: `pg ${name}, query`,
        value: median(samples),
        unit: 'ms',
        note: `p95 ${percentile(samples, 95).toFixed(1)} ms, ${runs} runs, ${label}`,
      });
    }
    const cliRuns = options.quick ? 3 : 5;
    for (const args of [
      ['spend', '--json'],
      ['spend', '--since', 'month', '--by', 'key', '--json'],
    ]) {
      const samples: number[] = [];
      for (let i = 0; i < cliRuns; i += 1) samples.push(await runCli(loaded.url, args));
      results.push({
        name: `pg tollgate ${args.filter((a) => a !== '--json').join(' ')} (process)`,
        value: median(samples),
        unit: 'ms',
        note: `wall time incl. Node + tsx start-up, ${cliRuns} runs, ${label}`,
      });
    }
    // Retention's hourly prune (src/storage/postgres/retention.ts) of the oldest day or two, at this size: what it costs instead of partitions.
    const pruneStarted = performance.now();
    const pruned = await pruneLedger(pool, DAYS - 2, now);
    const pruneMs = performance.now() - pruneStarted;
    results.push({
      name: `pg retention prune of the oldest days (${label})`,
      value: pruneMs / 1000,
      unit: 's',
      note: `${pruned.toLocaleString('en-US')} rows deleted in batches of 5,000; rollups untouched`,
    });
    const overviewAfter = await timeRounds(runs, () => timeRequest(app, cookie, targets[1]!));
    results.push({
      name: 'pg dashboard overview JSON, after the prune',
      value: median(overviewAfter),
      unit: 'ms',
      note: `p95 ${percentile(overviewAfter, 95).toFixed(1)} ms, dead rows not yet vacuumed`,
    });
  } finally {
    database.close();
    for (const suffix of ['', '-wal', '-shm']) rmSync(scratch + suffix, { force: true });
    await pool.end();
    if (options.keep || options.reuse !== undefined) process.stderr.write(`pg-scale: kept ${loaded.url}\n`);
    else await onServer((client) => client.query(`DROP DATABASE IF EXISTS ${loaded.name} WITH (FORCE)`));
  }
  return results;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const rowsIndex = process.argv.indexOf('--rows');
  const rows = rowsIndex === -1 ? undefined : Number(process.argv[rowsIndex + 1]);
  const reuseIndex = process.argv.indexOf('--reuse');
  printTable(
    await runPgScaleBench({
      quick: process.argv.includes('--quick'),
      keep: process.argv.includes('--keep'),
      ...(rows === undefined ? {} : { rows }),
      ...(reuseIndex === -1 ? {} : { reuse: process.argv[reuseIndex + 1]! }),
    }),
  );
}
