/**
 * `tollgate ledger export`: the raw ledger rows of a period as CSV or NDJSON
 * on stdout, streamed (constant memory, however many rows). On the local
 * file it reads through its own read-only connection; on a replica
 * (TOLLGATE_DATABASE_URL, no --db) PostgreSQL's ledger, every node's rows;
 * with --url it streams the proxy's /admin/api/ledger.csv or .ndjson through.
 */
import { Option, type Command } from 'commander';
import { loadConfig } from '../config/index.js';
import { TollgateError, type ErrorCode } from '../domain/errors.js';
import { parseExportRange, type LedgerExportFormat } from '../reports/export.js';
import { CliError, EXIT_USAGE, printChunk, withOps, type GlobalOptions } from './context.js';

interface ExportOptions {
  readonly since: string;
  readonly until?: string;
  readonly key?: string;
  readonly tenant?: string;
  readonly format: LedgerExportFormat;
}

export function registerLedgerCommands(program: Command): void {
  const ledger = program.command('ledger').description('the raw ledger rows');
  ledger
    .command('export')
    .description('ledger rows of a period as CSV or NDJSON on stdout, streamed')
    .option('--since <when>', 'first day (7d, today, month, YYYY-MM-DD) or instant (2026-11-01T12:00:00Z)', '7d')
    .option('--until <when>', 'last day, included (default today), or instant, excluded')
    .option('--key <key>', 'one key (id, name or prefix)')
    .option('--tenant <tenant>', 'one tenant')
    .addOption(new Option('--format <format>', 'output format').choices(['csv', 'ndjson']).default('csv'))
    .action(async (options: ExportOptions, command: Command) => {
      const global = command.optsWithGlobals<GlobalOptions>();
      // Checked here too, so a bad period is a usage error (exit 2) locally and remotely.
      parseExportRange(options.since, options.until, Date.now());
      if (global.url !== undefined) {
        await streamRemote(global.url, global.adminToken ?? loadConfig().adminToken, options);
        return;
      }
      const range = parseExportRange(options.since, options.until, Date.now());
      // On a replica (TOLLGATE_DATABASE_URL, no --db) both the references and the rows are PostgreSQL's: every node's requests.
      await withOps(command, async (ops, exportLedger) => {
        if (exportLedger === undefined) throw new CliError('an in-memory database has no ledger to export: pass --db with a file', EXIT_USAGE);
        const keyId = options.key === undefined ? undefined : (await ops.getKey(options.key)).id;
        const tenantId = options.tenant === undefined ? undefined : (await ops.getTenant(options.tenant)).id;
        for await (const chunk of exportLedger({ sinceMs: range.sinceMs, untilMs: range.untilMs, keyId, tenantId }, options.format)) {
          if (!(await printChunk(chunk))) break;
        }
      });
    });
}

async function streamRemote(baseUrl: string, adminToken: string | undefined, options: ExportOptions): Promise<void> {
  const search = new URLSearchParams({ since: options.since });
  if (options.until !== undefined) search.set('until', options.until);
  if (options.key !== undefined) search.set('key', options.key);
  if (options.tenant !== undefined) search.set('tenant', options.tenant);
  const url = `${baseUrl.replace(/\/+$/, '')}/admin/api/ledger.${options.format}?${search.toString()}`;
  let response: Response;
  try {
    response = await fetch(url, { headers: adminToken === undefined ? {} : { authorization: `Bearer ${adminToken}` } });
  } catch (error) {
    throw new TollgateError('upstream_unreachable', `cannot reach ${baseUrl}: ${(error as Error).message}`);
  }
  if (!response.ok || response.body === null) {
    const text = await response.text();
    let error: { code?: string; message?: string; param?: string | null } | undefined;
    try {
      error = (JSON.parse(text) as { error?: typeof error }).error;
    } catch {
      // not an OpenAI-shaped error: reported by status below
    }
    throw new TollgateError((error?.code ?? 'upstream_bad_response') as ErrorCode, error?.message ?? `${baseUrl} answered ${response.status}`, {
      param: error?.param ?? null,
    });
  }
  const decoder = new TextDecoder();
  const reader = response.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    if (!(await printChunk(decoder.decode(value, { stream: true })))) {
      await reader.cancel();
      return;
    }
  }
  const rest = decoder.decode();
  if (rest !== '') await printChunk(rest);
}
