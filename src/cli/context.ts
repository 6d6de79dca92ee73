/**
 * What every CLI command needs: the admin operations (on the local SQLite
 * file, or on a remote proxy with --url), output in human or JSON form, and
 * errors mapped to exit codes (2 for bad input, 1 for everything else).
 */
import type { Command } from 'commander';
import { once } from 'node:events';
import { loadConfig, sendConfigWarningsTo, type Config } from '../config/index.js';
import { pgUnavailable, TollgateError } from '../domain/errors.js';
import { openDatabase } from '../storage/sqlite/open.js';
import { PolicyError } from '../domain/policy.js';
import { storeAdminOps, type AdminOps, type SpendReader } from '../admin/ops.js';
import { openAdmins, openAuditReads, openDashboardTokens, openKeyStore } from '../storage/index.js';
import { cliActor } from '../domain/admins.js';
import { userInfo } from 'node:os';
import { closeBackend, type SharedBackend } from '../storage/backend.js';
import { openSpendReads } from '../storage/index.js';
import { openLedgerExport } from '../storage/index.js';
import { remoteAdminOps } from '../admin/client.js';
import { ledgerExporter, type LedgerExporter } from '../reports/export.js';
import type { PgPool } from '../storage/postgres/open.js';

const EXIT_FAILURE = 1;
export const EXIT_USAGE = 2;

export interface GlobalOptions {
  readonly db?: string;
  readonly url?: string;
  readonly adminToken?: string;
}

/** An error the CLI reports as one line, with its exit code. */
export class CliError extends Error {
  override readonly name = 'CliError';
  readonly exitCode: number;
  constructor(message: string, exitCode: number) {
    super(message);
    this.exitCode = exitCode;
  }
}

/** Maps what a command threw to a message and an exit code. */
export function toCliError(error: unknown): CliError {
  if (error instanceof CliError) return error;
  if (error instanceof PolicyError || error instanceof RangeError) return new CliError(error.message, EXIT_USAGE);
  if (error instanceof TollgateError) return new CliError(error.message, error.status === 400 || error.status === 409 ? EXIT_USAGE : EXIT_FAILURE);
  return new CliError(error instanceof Error ? error.message : String(error), EXIT_FAILURE);
}

/** The store the CLI works on without --url, with the spend reads and the ledger export that read it. */
interface CliBackend {
  readonly backend: SharedBackend;
  readonly readSpend: SpendReader;
  /** None for an in-memory file. */
  readonly exportLedger: LedgerExporter | undefined;
  close(): Promise<void>;
}

/**
 * The local SQLite file (--db, or TOLLGATE_DB), or on replicas PostgreSQL
 * alone: keys, spend and every node's ledger live there, and the file
 * TOLLGATE_DB names is not opened. --db still opens a local file on purpose.
 */
async function openCliBackend(config: Config, global: GlobalOptions): Promise<CliBackend> {
  const backend: SharedBackend =
    global.db === undefined && config.databaseUrl !== undefined
      ? { kind: 'postgres', pool: await openMigratedPg(config.databaseUrl) }
      : { kind: 'sqlite', database: openDatabase(global.db ?? config.dbPath) };
  const spend = openSpendReads(backend);
  const source = openLedgerExport(backend);
  return {
    backend,
    readSpend: (query, now) => spend.spend(query, now),
    exportLedger: source === undefined ? undefined : ledgerExporter(source),
    close: () => closeBackend(backend),
  };
}

/**
 * The admin operations selected by the global options, and the ledger export
 * that reads the same store (none with --url: `ledger export` streams the
 * proxy's own through its admin API).
 */
async function openOps(command: Command): Promise<{ ops: AdminOps; exportLedger: LedgerExporter | undefined }> {
  const global = command.optsWithGlobals<GlobalOptions>();
  if (global.url !== undefined) {
    const token = global.adminToken ?? loadConfig().adminToken;
    return { ops: remoteAdminOps(global.url, token), exportLedger: undefined };
  }
  const opened = await openCliBackend(loadConfig(), global);
  const stores = {
    keys: openKeyStore(opened.backend),
    admins: openAdmins(opened.backend),
    audit: openAuditReads(opened.backend),
    tenantTokens: openDashboardTokens(opened.backend),
  };
  // On the database itself the CLI acts as the OS user running it (docs/admins.md); through --url, as the token's admin.
  const ops = storeAdminOps(stores, { readSpend: opened.readSpend, close: () => opened.close() }).as(cliActor(osUser()));
  return { ops, exportLedger: opened.exportLedger };
}

/** The OS user running the CLI, as the audit trail names it (`unknown` where the system has no entry for it). */
function osUser(): string {
  try {
    return userInfo().username;
  } catch {
    return 'unknown';
  }
}

/**
 * A pool on the replicas' PostgreSQL with its migrations applied, as `serve` and `tollgate migrate`
 * apply them (under an advisory lock, so it is safe beside running nodes): an operator may issue
 * keys before the first node has ever started. Only when some are pending, so a role that may only
 * read still reads.
 */
export async function openMigratedPg(url: string): Promise<PgPool> {
  // Loaded only here: every other CLI run starts without the PostgreSQL driver.
  const { isPgUnreachable, migratePg, openPg, pgMigrationsPending } = await import('../storage/postgres/open.js');
  const pool = openPg(url);
  try {
    if (await pgMigrationsPending(pool)) await migratePg(pool);
  } catch (error) {
    await pool.end();
    throw isPgUnreachable(error) ? pgUnavailable('Keys, tenants and the ledger live in', error) : error;
  }
  return pool;
}

/** Runs `fn` with the ops (and the matching ledger export) and always closes them. */
export async function withOps<T>(command: Command, fn: (ops: AdminOps, exportLedger: LedgerExporter | undefined) => Promise<T>): Promise<T> {
  const { ops, exportLedger } = await openOps(command);
  try {
    return await fn(ops, exportLedger);
  } finally {
    await ops.close();
  }
}

/** Where the CLI writes: the process's streams, or a test's buffers. */
export interface Output {
  stdout(text: string): void;
  stderr(text: string): void;
  /** Resolves true once stdout can take more, false when its reader is gone (streamed exports wait on it); absent = always true. */
  drained?(): Promise<boolean>;
}

let stdoutGone = false;

/** Whether stdout still has a reader; a closed pipe (`| head`) ends a streamed export quietly instead of crashing on EPIPE. */
async function stdoutDrained(): Promise<boolean> {
  if (process.stdout.listenerCount('error') === 0) {
    process.stdout.on('error', () => {
      stdoutGone = true;
    });
  }
  if (stdoutGone) return false;
  if (!process.stdout.writableNeedDrain) return true;
  try {
    await Promise.race([once(process.stdout, 'drain'), once(process.stdout, 'close')]);
  } catch {
    stdoutGone = true;
  }
  return !stdoutGone && !process.stdout.destroyed;
}

/** The process's own streams (what the binary prints to). */
export const processOutput: Output = {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
  drained: stdoutDrained,
};

let output: Output = processOutput;

/** Directs printing to `next` until the returned function restores the previous output. */
export function setOutput(next: Output): () => void {
  const previous = output;
  output = next;
  // Warnings found as any command loads the configuration (an unknown TOLLGATE_* variable) reach stderr.
  const restoreWarnings = sendConfigWarningsTo((message) => next.stderr(`tollgate: warning: ${message}\n`));
  return () => {
    output = previous;
    restoreWarnings();
  };
}

export function printJson(value: unknown): void {
  output.stdout(`${JSON.stringify(value, null, 2)}\n`);
}

/** Writes a chunk of a long output and waits until stdout takes more (backpressure); false once nobody reads it any more. */
export async function printChunk(text: string): Promise<boolean> {
  output.stdout(text);
  return (await output.drained?.()) ?? true;
}

export function print(text: string): void {
  output.stdout(text.endsWith('\n') ? text : `${text}\n`);
}
