/**
 * Dashboard speed with a big ledger: 10 million rows (1 million with
 * `--quick`) from 1000 keys over 90 days and several models, with rollups
 * consistent with the rows, then every dashboard page and JSON endpoint
 * measured in-process (`app.request` with a session cookie): median and p95.
 *
 * Generating the data takes a while (about 1.5 min for 10M rows), so the
 * database is cached under the OS temp dir, keyed by the data version and
 * size; later runs reuse it (and get any new migrations applied).
 *
 * Run: npx tsx bench/dashboard.ts [--quick] [--rows N] [--trace]
 */
import { existsSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { openDatabase, type TollgateDatabase } from '../src/storage/sqlite/open.js';
import { SqliteKeyStore as KeyStore } from '../src/storage/sqlite/keys.js';
import { querySpend } from '../src/storage/sqlite/spend-reads.js';
import type { Policy } from '../src/domain/policy.js';
import { builtinPriceTable } from '../src/estimate/prices.js';
import { Hono } from 'hono';
import type { AppEnv } from '../src/app-env.js';
import { createDashboardApiRoutes, createDashboardRoutes, createSessionValue, SESSION_COOKIE } from '../src/dashboard/index.js';
import { median, percentile, printTable, type BenchResult } from './support.js';
import { SqliteDashboardReads } from '../src/storage/sqlite/dashboard-reads.js';

/** Bump when the generated data changes shape, so cached databases are rebuilt. */
const BENCH_DATA_VERSION = 1;
const KEYS = 1000;
const TENANTS = 25;
const DAYS = 90;
/** A fixed "now" at the end of a 31-day month, late in the day: the largest month-to-date and today. */
export const BENCH_NOW = Date.parse('2026-10-31T21:30:00Z');
const ADMIN_TOKEN = 'bench-admin-token-0123456789abcdef';
const MODELS = ['gpt-4o-mini', 'gpt-4o', 'gpt-4.1', 'gpt-4.1-mini', 'o3-mini', 'text-embedding-3-small'];

export interface BenchDatabase {
  readonly path: string;
  readonly rows: number;
  /** Milliseconds spent generating, or undefined when a cached file was reused. */
  readonly generatedMs: number | undefined;
}

/**
 * The bench database with `rows` ledger rows, generated unless a cached copy
 * exists: rows from a seeded PRNG, inserted 400 to a statement and a million
 * to a transaction, with the rollups accumulated alongside exactly as the
 * writer keeps them, then checked against the rows.
 */
export function prepareBenchDatabase(rows: number): BenchDatabase {
  const path = join(tmpdir(), `tollgate-dashboard-bench-v${BENCH_DATA_VERSION}-${rows}.db`);
  if (existsSync(path)) {
    // Opening applies migrations added since the file was made (new indexes).
    openDatabase(path).close();
    return { path, rows, generatedMs: undefined };
  }
  const building = `${path}.building`;
  for (const suffix of ['', '-wal', '-shm']) rmSync(building + suffix, { force: true });
  const started = performance.now();
  const database = openDatabase(building);
  try {
    generate(database, rows);
    database.sqlite.pragma('wal_checkpoint(TRUNCATE)');
  } finally {
    database.close();
  }
  for (const suffix of ['-wal', '-shm']) rmSync(building + suffix, { force: true });
  renameSync(building, path);
  return { path, rows, generatedMs: performance.now() - started };
}

function generate(database: TollgateDatabase, rows: number): void {
  const sqlite = database.sqlite;
  // A throwaway file: durability does not matter while it is being built.
  sqlite.pragma('synchronous = OFF');
  // Every key_id is one just created; checking each row's foreign key costs a lookup.
  sqlite.pragma('foreign_keys = OFF');
  sqlite.pragma('cache_size = -1000000');
  sqlite.pragma('temp_store = MEMORY');
  let mark = performance.now();
  const trace = process.argv.includes('--trace');
  const phase = (what: string) => {
    if (trace) process.stderr.write(`${what}: ${(performance.now() - mark).toFixed(0)} ms\n`);
    mark = performance.now();
  };
  const store = new KeyStore(database, () => BENCH_NOW - DAYS * 86_400_000);

  const modelTable = MODELS.map((name, n) => {
    const price = builtinPriceTable.models[name] ?? builtinPriceTable.fallback;
    return { n, name, input: price.inputMicroUsdPer1M, output: price.outputMicroUsdPer1M };
  });
  const keyTable: Array<{ n: number; id: string; tenantId: string | null; m1: number; m2: number; m3: number }> = [];
  for (let n = 0; n < KEYS; n += 1) {
    const budgetKind = n % 6;
    const policy: Policy = {
      limits: [
        { name: 'requests-per-min', unit: 'requests', amount: 600, period: 'min', burst: 600 },
        { name: 'tokens-per-min', unit: 'tokens', amount: 200_000, period: 'min', burst: 200_000 },
      ],
      ...(budgetKind === 0 ? { budget: { microUsd: 5_000_000, period: 'day' as const } } : {}),
      ...(budgetKind === 1 ? { budget: { microUsd: 100_000_000, period: 'month' as const } } : {}),
      ...(budgetKind === 2 ? { budget: { microUsd: 400_000_000, period: 'total' as const } } : {}),
    };
    const tenant = n % 10 === 9 ? undefined : `tenant-${String(n % TENANTS).padStart(2, '0')}`;
    const view = store.createKey({ name: `bench-key-${String(n).padStart(4, '0')}`, tenant, policy }).view;
    keyTable.push({ n, id: view.id, tenantId: view.tenantId, m1: n % 4, m2: (n + 1) % 4, m3: 4 + (n % 2) });
  }

  phase('keys');

  // Bulk loading is much faster without the ledger's secondary indexes; they
  // are rebuilt afterwards from their own SQL, so the schema ends up identical.
  const indexes = sqlite.prepare("SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'ledger' AND sql IS NOT NULL").all() as Array<{
    name: string;
    sql: string;
  }>;
  for (const index of indexes) sqlite.exec(`DROP INDEX "${index.name}"`);

  // Rows are spread evenly over the 90 days (time-ordered ids, like the
  // proxy's); keys are skewed (the product of two uniform picks favours low
  // numbers: a few big spenders, a long tail); each key mostly uses two
  // models. Outcomes: 1.5% rate-limited and 0.5% over budget (429s, not
  // counted as requests, as the writer does), 1% upstream errors (half of
  // them 429s), 0.5% client aborts, the rest ok; the last 20 s still pending.
  const random = mulberry32(BENCH_DATA_VERSION);
  const start = BENCH_NOW - DAYS * 86_400_000;
  const firstDay = start - (start % 86_400_000);
  const firstHour = start - (start % HOUR_MS);
  const dayCount = Math.ceil((BENCH_NOW - firstDay) / 86_400_000) + 1;
  const hourCount = Math.ceil((BENCH_NOW - firstHour) / HOUR_MS) + 1;
  const step = (DAYS * 86_400_000) / rows;
  const pendingAfter = BENCH_NOW - 20_000;
  const rollups = new RollupAccumulator(KEYS * dayCount * MODELS.length, KEYS * hourCount);
  const columns = 24;
  const perStatement = 400;
  const placeholders = `(${new Array(columns).fill('?').join(',')})`;
  const into = `INSERT INTO ledger (request_id, key_id, tenant_id, created_at, completed_at, endpoint, model, stream, status, http_status,
      est_prompt_tokens, est_completion_tokens, est_cost_micros, prompt_tokens, cached_tokens, completion_tokens,
      reasoning_tokens, cost_micros, price_known, usage_source, latency_ms, ttft_ms, upstream_request_id, error_code) VALUES`;
  const insertMany = sqlite.prepare(`${into} ${new Array(perStatement).fill(placeholders).join(',')}`);
  const values: Array<string | number | null> = [];
  const insertOne = sqlite.prepare(`${into} ${placeholders}`);
  const transactionRows = 1_000_000;
  for (let from = 0; from < rows; from += transactionRows) {
    sqlite.transaction(() => {
      for (let i = from; i < Math.min(rows, from + transactionRows); i += 1) {
        const t = Math.floor(start + i * step);
        const key = keyTable[Math.floor(random() * random() * KEYS)]!;
        const roll = random();
        const modelRoll = random();
        const model = modelTable[modelRoll < 0.75 ? key.m1 : modelRoll < 0.97 ? key.m2 : key.m3]!;
        const p = 40 + Math.floor(random() * 3000);
        const c = 5 + Math.floor(random() * 900);
        const latency = 150 + Math.floor(random() * 4000);
        const stream = random() < 0.5 ? 1 : 0;
        const estCost = Math.ceil((p * model.input + 1024 * model.output) / 1_000_000);
        const outcome: Outcome =
          t > pendingAfter
            ? 'pending'
            : roll < 0.015
              ? 'rate_limit'
              : roll < 0.02
                ? 'budget'
                : roll < 0.03
                  ? 'upstream_error'
                  : roll < 0.035
                    ? 'client_aborted'
                    : 'ok';
        const completion = outcome === 'ok' ? c : outcome === 'client_aborted' ? Math.floor(c / 2) : 0;
        const prompt = outcome === 'ok' || outcome === 'client_aborted' ? p : 0;
        const cached = outcome === 'ok' ? Math.floor(p / 4) : 0;
        const cost = prompt === 0 ? 0 : Math.ceil((prompt * model.input + completion * model.output) / 1_000_000);
        const rejected = outcome === 'rate_limit' || outcome === 'budget';
        const pending = outcome === 'pending';
        values.push(
          `req_${String(i).padStart(11, '0')}`,
          key.id,
          key.tenantId,
          t,
          pending ? null : rejected ? t : t + latency,
          model.name.startsWith('text-embedding') ? 'embeddings' : 'chat',
          model.name,
          stream,
          rejected ? 'rejected' : outcome,
          pending ? null : rejected ? 429 : outcome === 'upstream_error' ? (i % 2 === 0 ? 429 : 500) : 200,
          p,
          1024,
          estCost,
          pending ? null : prompt,
          pending ? null : cached,
          pending ? null : completion,
          pending ? null : 0,
          pending ? null : cost,
          1,
          pending ? null : outcome === 'ok' ? 'reported' : outcome === 'client_aborted' ? 'counted' : 'none',
          pending ? null : rejected ? 0 : latency,
          (outcome === 'ok' || outcome === 'client_aborted') && stream === 1 ? Math.floor(latency / 5) : null,
          outcome === 'ok' || outcome === 'client_aborted' || outcome === 'upstream_error' ? `chatcmpl-${i}` : null,
          outcome === 'rate_limit' ? 'rate_limit_exceeded' : outcome === 'budget' ? 'insufficient_quota' : null,
        );
        if (values.length === columns * perStatement) {
          insertMany.run(values);
          values.length = 0;
        }
        // The rollups, as the writer keeps them: a pending row at its
        // estimate, a settled one at its actuals, a refusal as a rejection.
        const day = Math.floor((t - firstDay) / 86_400_000);
        const hour = Math.floor((t - firstHour) / HOUR_MS);
        rollups.add(
          (key.n * dayCount + day) * MODELS.length + model.n,
          key.n * hourCount + hour,
          t,
          rejected ? 0 : 1,
          pending ? p : prompt,
          cached,
          pending ? 1024 : completion,
          pending ? estCost : cost,
          outcome === 'upstream_error' || outcome === 'client_aborted' ? 1 : 0,
          outcome === 'rate_limit' ? 1 : 0,
          outcome === 'budget' ? 1 : 0,
        );
      }
      for (let offset = 0; offset < values.length; offset += columns) insertOne.run(values.slice(offset, offset + columns));
      values.length = 0;
    })();
    phase(`ledger rows to ${Math.min(rows, from + transactionRows)}`);
  }
  for (const index of indexes) sqlite.exec(index.sql);
  phase('ledger indexes');

  const dayNames = Array.from({ length: dayCount }, (_, d) => new Date(firstDay + d * 86_400_000).toISOString().slice(0, 10));
  const insertDaily = sqlite.prepare(`INSERT INTO rollups_daily (key_id, day, model, requests, prompt_tokens, cached_tokens, completion_tokens,
      reasoning_tokens, cost_micros, errors, rejected_rate_limit, rejected_budget, last_request_at) VALUES (?, ?, ?, ?, ?, ?, ?, 0, ?, ?, ?, ?, ?)`);
  const insertHourly = sqlite.prepare(`INSERT INTO rollups_hourly (key_id, hour, requests, prompt_tokens, completion_tokens, cost_micros,
      rejected_rate_limit, rejected_budget) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`);
  sqlite.transaction(() => {
    const d = rollups.daily;
    for (let cell = 0; cell < rollups.dailyCells; cell += 1) {
      const at = cell * DAILY_FIELDS;
      if (d[at + 9] === 0) continue; // no row landed here
      const model = cell % MODELS.length;
      const day = Math.floor(cell / MODELS.length) % dayCount;
      const key = Math.floor(cell / MODELS.length / dayCount);
      insertDaily.run(
        keyTable[key]!.id,
        dayNames[day],
        MODELS[model],
        d[at],
        d[at + 1],
        d[at + 2],
        d[at + 3],
        d[at + 4],
        d[at + 5],
        d[at + 6],
        d[at + 7],
        d[at + 8],
      );
    }
    const h = rollups.hourly;
    for (let cell = 0; cell < rollups.hourlyCells; cell += 1) {
      const at = cell * HOURLY_FIELDS;
      if (h[at + 6] === 0) continue;
      const hour = cell % hourCount;
      const key = Math.floor(cell / hourCount);
      insertHourly.run(keyTable[key]!.id, firstHour + hour * HOUR_MS, h[at], h[at + 1], h[at + 2], h[at + 3], h[at + 4], h[at + 5]);
    }
    // The monthly, all-keys daily and lifetime rollups were filled by the
    // triggers that follow the daily ones (drizzle/0005_rollup-triggers.sql).
  })();
  phase('rollups');
  // No ANALYZE: a real Tollgate database has no planner statistics either,
  // so the bench sees the query plans production gets.
  sqlite.pragma('foreign_keys = ON');
  checkRollups(
    database,
    keyTable.slice(0, 3).map((key) => key.id),
  );
  phase('check');
}

/** The generated rollups must equal the rows (as the writer keeps them), or the bench measures nonsense. */
function checkRollups(database: TollgateDatabase, keyIds: readonly string[]): void {
  for (const keyId of keyIds) {
    const fromRows = database.sqlite
      .prepare(
        `SELECT sum(status <> 'rejected') AS requests, sum(CASE status WHEN 'pending' THEN est_cost_micros ELSE cost_micros END) AS costMicros,
           sum(error_code IS 'rate_limit_exceeded') AS rejectedRateLimit FROM ledger WHERE key_id = ?`,
      )
      .get(keyId) as { requests: number; costMicros: number; rejectedRateLimit: number };
    const fromRollups = querySpend(database, { keyId, since: '0000-01-01', until: '9999-12-31', by: 'total' }).total;
    const hourly = database.sqlite.prepare('SELECT sum(cost_micros) AS costMicros FROM rollups_hourly WHERE key_id = ?').get(keyId) as { costMicros: number };
    const monthly = database.sqlite.prepare('SELECT sum(cost_micros) AS costMicros FROM rollups_monthly WHERE key_id = ?').get(keyId) as { costMicros: number };
    const lifetime = database.sqlite.prepare('SELECT cost_micros AS costMicros FROM rollups_lifetime WHERE key_id = ?').get(keyId) as { costMicros: number };
    if (
      fromRows.requests !== fromRollups.requests ||
      fromRows.costMicros !== fromRollups.costMicros ||
      fromRows.rejectedRateLimit !== fromRollups.rejectedRateLimit ||
      hourly.costMicros !== fromRows.costMicros ||
      monthly.costMicros !== fromRows.costMicros ||
      lifetime.costMicros !== fromRows.costMicros
    ) {
      throw new Error(`generated rollups disagree with the rows for ${keyId}: ${JSON.stringify({ fromRows, fromRollups, hourly, monthly, lifetime })}`);
    }
  }
}

type Outcome = 'pending' | 'rate_limit' | 'budget' | 'upstream_error' | 'client_aborted' | 'ok';

const HOUR_MS = 3_600_000;
/** requests, prompt, cached, completion, cost, errors, rejected (limit), rejected (budget), last request at, rows seen. */
const DAILY_FIELDS = 10;
/** requests, prompt, completion, cost, rejected (limit), rejected (budget), rows seen. */
const HOURLY_FIELDS = 7;

/** Rollup cells in flat typed arrays (millions of cells; a Map of objects would not fit comfortably). */
class RollupAccumulator {
  readonly daily: Float64Array;
  readonly hourly: Float64Array;
  constructor(
    readonly dailyCells: number,
    readonly hourlyCells: number,
  ) {
    this.daily = new Float64Array(dailyCells * DAILY_FIELDS);
    this.hourly = new Float64Array(hourlyCells * HOURLY_FIELDS);
  }

  add(
    dailyCell: number,
    hourlyCell: number,
    at: number,
    requests: number,
    prompt: number,
    cached: number,
    completion: number,
    cost: number,
    errors: number,
    rateLimited: number,
    overBudget: number,
  ): void {
    const d = dailyCell * DAILY_FIELDS;
    const h = hourlyCell * HOURLY_FIELDS;
    const daily = this.daily;
    const hourly = this.hourly;
    const fields: Array<[Float64Array, number, number]> = [
      [daily, d, requests],
      [daily, d + 1, prompt],
      [daily, d + 2, cached],
      [daily, d + 3, completion],
      [daily, d + 4, cost],
      [daily, d + 5, errors],
      [daily, d + 6, rateLimited],
      [daily, d + 7, overBudget],
      [daily, d + 9, 1],
      [hourly, h, requests],
      [hourly, h + 1, prompt],
      [hourly, h + 2, completion],
      [hourly, h + 3, cost],
      [hourly, h + 4, rateLimited],
      [hourly, h + 5, overBudget],
      [hourly, h + 6, 1],
    ];
    for (const [array, index, value] of fields) array[index] = array[index]! + value;
    daily[d + 8] = Math.max(daily[d + 8]!, at);
  }
}

/** A small seeded PRNG (mulberry32): the same data on every machine. */
function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

interface Target {
  readonly name: string;
  readonly path: string;
  /** Text the answer must contain (a wrong page must not pass as fast). */
  readonly expect: string;
}

function buildApp(database: TollgateDatabase): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  const deps = { database, reads: new SqliteDashboardReads(database), adminToken: ADMIN_TOKEN, now: () => BENCH_NOW };
  app.route('/dashboard', createDashboardRoutes(deps));
  app.route('/admin/api/dashboard', createDashboardApiRoutes(deps));
  return app;
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

/**
 * Generates (or reuses) the big ledger and measures every dashboard page and
 * JSON endpoint: median and p95 of `runs` requests after two unmeasured
 * ones, plus the first overview of a fresh process.
 */
export async function runDashboardBench(options: { quick?: boolean; rows?: number } = {}): Promise<BenchResult[]> {
  const rows = options.rows ?? (options.quick ? 1_000_000 : 10_000_000);
  const runs = options.quick ? 10 : 25;
  const data = prepareBenchDatabase(rows);
  const label = rows >= 1_000_000 ? `${rows / 1_000_000}M rows` : `${rows} rows`;
  const results: BenchResult[] = [];
  if (data.generatedMs !== undefined) {
    results.push({
      name: `dashboard data generation (${label})`,
      value: data.generatedMs / 1000,
      unit: 's',
      note: `ledger rows + rollups, cached at ${data.path}`,
    });
  }
  const cookie = `${SESSION_COOKIE}=${createSessionValue(ADMIN_TOKEN, BENCH_NOW)}`;

  // A fresh process, asked at once: nothing is summed ahead, so this should cost what a later overview does.
  const colds: number[] = [];
  for (let i = 0; i < 3; i += 1) {
    const database = openDatabase(data.path);
    try {
      colds.push(await timeRequest(buildApp(database), cookie, { name: 'cold', path: '/admin/api/dashboard/overview', expect: '"page":"overview"' }));
    } finally {
      database.close();
    }
  }
  results.push({
    name: `dashboard first overview of a process (${label})`,
    value: median(colds),
    unit: 'ms',
    note: 'asked at once after opening the database',
  });

  const database = openDatabase(data.path);
  try {
    const app = buildApp(database);
    const sqlite = database.sqlite;
    const monthStart = `${new Date(BENCH_NOW).toISOString().slice(0, 7)}-01`;
    const biggest = (
      sqlite.prepare('SELECT key_id AS id FROM rollups_daily WHERE day >= ? GROUP BY key_id ORDER BY sum(cost_micros) DESC LIMIT 1').get(monthStart) as {
        id: string;
      }
    ).id;
    const smallest = (sqlite.prepare('SELECT id FROM api_keys ORDER BY name DESC LIMIT 1').get() as { id: string }).id;
    const tenant = (sqlite.prepare('SELECT id FROM tenants ORDER BY name LIMIT 1').get() as { id: string }).id;
    const keyRows = (sqlite.prepare('SELECT count(*) AS n FROM ledger WHERE key_id = ?').get(biggest) as { n: number }).n;
    const targets: Target[] = [
      { name: 'overview page', path: '/dashboard', expect: 'Spend overview' },
      { name: 'overview JSON', path: '/admin/api/dashboard/overview', expect: '"page":"overview"' },
      { name: 'keys page, by spend this month', path: '/dashboard/keys', expect: 'Showing 1' },
      { name: 'keys page, by budget used', path: '/dashboard/keys?sort=budget', expect: 'Showing 1' },
      { name: 'keys page, by last use', path: '/dashboard/keys?sort=last_used', expect: 'Showing 1' },
      { name: 'keys page, one tenant', path: `/dashboard/keys?tenant=${tenant}`, expect: 'Showing 1' },
      { name: 'keys page 10, by name', path: '/dashboard/keys?sort=name&page=10', expect: 'Showing 451' },
      { name: 'keys JSON', path: '/admin/api/dashboard/keys', expect: '"page":"keys"' },
      { name: `key page, biggest key (${keyRows.toLocaleString('en-US')} rows)`, path: `/dashboard/keys/${biggest}`, expect: 'Latest requests' },
      { name: 'key JSON, biggest key', path: `/admin/api/dashboard/keys/${biggest}`, expect: '"page":"key"' },
      { name: 'key page, smallest key', path: `/dashboard/keys/${smallest}`, expect: 'Latest requests' },
    ];
    for (const target of targets) await timeRequest(app, cookie, target);
    for (const target of targets) {
      const samples: number[] = [];
      for (let i = 0; i < 2; i += 1) await timeRequest(app, cookie, target);
      for (let i = 0; i < runs; i += 1) samples.push(await timeRequest(app, cookie, target));
      results.push({
        name: `dashboard ${target.name}`,
        value: median(samples),
        unit: 'ms',
        note: `p95 ${percentile(samples, 95).toFixed(1)} ms, ${runs} runs, ${label}`,
      });
    }
  } finally {
    database.close();
  }
  return results;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const rowsIndex = process.argv.indexOf('--rows');
  const rows = rowsIndex === -1 ? undefined : Number(process.argv[rowsIndex + 1]);
  printTable(await runDashboardBench({ quick: process.argv.includes('--quick'), ...(rows === undefined ? {} : { rows }) }));
}
