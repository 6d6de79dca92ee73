/**
 * Keys and tenants of a replica: PostgreSQL holds them, and each node keeps a
 * copy in its own SQLite file, which its key cache (src/keys/cache.ts) reads exactly
 * as on a single host. So the request path never waits on the network, a
 * node serves on from its copy while PostgreSQL is unreachable (even across
 * a restart), and the local ledger's rows keep their key.
 *
 * Changes arrive by LISTEN `tollgate_keys` (drizzle/pg/0001_key-notify.sql)
 * and, should a notification be lost or the listening connection be down, by
 * polling PostgreSQL's `max(version)`. Each pull copies the rows whose
 * version is above the last one copied (PostgreSQL's versions commit in
 * order: src/storage/postgres/keys.ts), in one local transaction.
 */
import pg from 'pg';
import type { TollgateDatabase } from '../sqlite/open.js';
import { pgClientConfig, type PgPool } from './open.js';

export interface KeySyncOptions {
  /** For the LISTEN connection (the pool's connections come and go). */
  readonly url: string;
  /** How often to poll when no notification came (default 500 ms). */
  readonly pollMs?: number;
  /** Called after a pull changed the local copy (the key cache refreshes). */
  readonly onChange?: () => void;
  readonly onError?: (error: unknown) => void;
}

interface Cursor {
  keys: number;
  tenants: number;
}

const TENANT_COLUMNS = ['id', 'name', 'policy', 'created_at', 'updated_at'] as const;
const KEY_COLUMNS = [
  'id',
  'name',
  'tenant_id',
  'key_hash',
  'prefix',
  'created_at',
  'updated_at',
  'revoked_at',
  'expires_at',
  'rotated_at',
  'throttled_at',
  'throttle_reason',
  'paused_owners',
  'suspended_at',
  'suspended_by',
  'policy',
  'metadata',
] as const;

type Row = Record<string, unknown>;

/** Which PostgreSQL version of keys and tenants this file holds (a node-local table, created on first use). */
function prepareLocal(database: TollgateDatabase): void {
  database.sqlite.exec('CREATE TABLE IF NOT EXISTS replica_state (name TEXT PRIMARY KEY, value INTEGER NOT NULL)');
}

function readCursor(database: TollgateDatabase): Cursor {
  const rows = database.sqlite.prepare(`SELECT name, value FROM replica_state WHERE name IN ('keys_version', 'tenants_version')`).all() as Array<{
    name: string;
    value: number;
  }>;
  const cursor: Cursor = { keys: 0, tenants: 0 };
  for (const row of rows) {
    if (row.name === 'keys_version') cursor.keys = row.value;
    else cursor.tenants = row.value;
  }
  return cursor;
}

/** Upserts `rows` into `table`, freeing their unique names (and hashes) first: rows arrive at their latest state, not one change at a time. */
function applyRows(database: TollgateDatabase, table: 'tenants' | 'api_keys', columns: readonly string[], rows: readonly Row[]): void {
  const sqlite = database.sqlite;
  const free =
    table === 'api_keys'
      ? sqlite.prepare(`UPDATE api_keys SET name = 'sync:' || id, key_hash = 'sync:' || id WHERE id = ?`)
      : sqlite.prepare(`UPDATE tenants SET name = 'sync:' || id WHERE id = ?`);
  for (const row of rows) free.run(row.id);
  // Local versions continue the file's own sequence, which the key cache polls (src/keys/cache.ts).
  const next = sqlite.prepare(`SELECT coalesce(max(version), 0) + 1 AS v FROM ${table}`);
  const upsert = sqlite.prepare(
    `INSERT INTO ${table} (${columns.join(', ')}, version) VALUES (${columns.map(() => '?').join(', ')}, ?)
     ON CONFLICT(id) DO UPDATE SET ${columns
       .filter((c) => c !== 'id')
       .map((c) => `${c} = excluded.${c}`)
       .join(', ')}, version = excluded.version`,
  );
  for (const row of rows) {
    const version = (next.get() as { v: number }).v;
    upsert.run(...columns.map((c) => row[c] ?? null), version);
  }
}

export class KeySync {
  private readonly pool: PgPool;
  private readonly database: TollgateDatabase;
  private readonly options: KeySyncOptions;
  private readonly pollMs: number;
  private timer: NodeJS.Timeout | undefined;
  private listener: pg.Client | undefined;
  private listenRetry: NodeJS.Timeout | undefined;
  private running: Promise<number> | undefined;
  private again = false;
  private stopped = false;

  constructor(pool: PgPool, database: TollgateDatabase, options: KeySyncOptions) {
    this.pool = pool;
    this.database = database;
    this.options = options;
    this.pollMs = options.pollMs ?? 500;
    prepareLocal(database);
  }

  /** Pulls whatever changed since the last pull; resolves with the number of rows copied. */
  async pull(): Promise<number> {
    const cursor = readCursor(this.database);
    const tenants = (await this.pool.query<Row>('SELECT * FROM tenants WHERE version > $1 ORDER BY version', [cursor.tenants])).rows;
    const keys = (await this.pool.query<Row>('SELECT * FROM api_keys WHERE version > $1 ORDER BY version', [cursor.keys])).rows;
    if (tenants.length === 0 && keys.length === 0) return 0;
    const sqlite = this.database.sqlite;
    const setCursor = sqlite.prepare('INSERT INTO replica_state (name, value) VALUES (?, ?) ON CONFLICT(name) DO UPDATE SET value = excluded.value');
    sqlite
      .transaction(() => {
        // Tenants first: a key may name a tenant created with it.
        applyRows(this.database, 'tenants', TENANT_COLUMNS, tenants);
        applyRows(this.database, 'api_keys', KEY_COLUMNS, keys);
        if (tenants.length > 0) setCursor.run('tenants_version', Number(tenants[tenants.length - 1]!.version));
        if (keys.length > 0) setCursor.run('keys_version', Number(keys[keys.length - 1]!.version));
      })
      .immediate();
    this.options.onChange?.();
    return tenants.length + keys.length;
  }

  /** Pulls now, or right after the pull under way (changes may have landed after it read). */
  kick(): Promise<number> {
    if (this.running !== undefined) {
      this.again = true;
      return this.running;
    }
    const run = (async () => {
      let copied = 0;
      try {
        do {
          this.again = false;
          copied += await this.pull();
        } while (this.again && !this.stopped);
      } catch (error) {
        this.options.onError?.(error);
      }
      return copied;
    })();
    // Cleared once settled (not inside the body, which may finish before this assignment).
    this.running = run;
    void run.then(() => {
      if (this.running === run) this.running = undefined;
    });
    return run;
  }

  /** Starts listening and polling. Nothing here throws: an unreachable server is retried. */
  start(): void {
    if (this.timer !== undefined) return;
    this.stopped = false;
    this.timer = setInterval(() => void this.kick(), this.pollMs);
    this.timer.unref();
    void this.listen();
  }

  private async listen(): Promise<void> {
    if (this.stopped) return;
    const client = new pg.Client(pgClientConfig(this.options.url));
    const retry = (error: unknown) => {
      if (this.listener === client) this.listener = undefined;
      client.removeAllListeners();
      client.on('error', () => undefined);
      void client.end().catch(() => undefined);
      if (this.stopped) return;
      this.options.onError?.(error);
      if (this.listenRetry === undefined) {
        this.listenRetry = setTimeout(() => {
          this.listenRetry = undefined;
          void this.listen();
        }, 1000);
        this.listenRetry.unref();
      }
    };
    client.on('error', retry);
    client.on('end', () => retry(new Error('the LISTEN connection to PostgreSQL closed')));
    client.on('notification', () => void this.kick());
    try {
      await client.connect();
      await client.query('LISTEN tollgate_keys');
      this.listener = client;
      // Changes made while not listening.
      void this.kick();
    } catch (error) {
      retry(error);
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== undefined) clearInterval(this.timer);
    if (this.listenRetry !== undefined) clearTimeout(this.listenRetry);
    this.timer = undefined;
    this.listenRetry = undefined;
    const listener = this.listener;
    this.listener = undefined;
    if (listener !== undefined) {
      listener.removeAllListeners();
      listener.on('error', () => undefined);
      await listener.end().catch(() => undefined);
    }
    await this.running;
  }
}
