/**
 * `tollgate reconcile`: the ledger against the provider's own usage and cost
 * reports (src/reconcile/), printed as a table or JSON and stored for the
 * dashboard. Reads the local SQLite ledger, or PostgreSQL's on a replica
 * (TOLLGATE_DATABASE_URL, no --db); the provider's admin key comes
 * from TOLLGATE_PROVIDER_ADMIN_KEY only (never a flag: flags end up in shell
 * history and process lists).
 */
import type { Command } from 'commander';
import { loadConfig } from '../config/index.js';
import { openDatabase } from '../storage/sqlite/open.js';
import { formatMicrosExact } from '../domain/money.js';
import type { CellSide, ReconcileRow } from '../reconcile/compare.js';
import { openAIUsageProvider } from '../reconcile/openai.js';
import { openLedgerCells } from '../storage/index.js';
import type { Backend } from '../storage/backend.js';
import { ProviderReportError } from '../reconcile/provider.js';
import { parseUtcDay, runReconcile, type ReconcileResult } from '../reconcile/run.js';
import { openReconciliations } from '../storage/index.js';
import { CliError, EXIT_USAGE, openMigratedPg, print, printJson, type GlobalOptions } from './context.js';
import { count, table } from './format.js';

/** `--fail-on-diff` with a differing cell: the exit code of any failure, so CI needs no special case. */
const EXIT_DIFFERENCES = 1;

function percentText(value: number | null): string {
  return value === null ? '-' : `${value > 0 ? '+' : ''}${value.toFixed(2)}%`;
}

function pair(ledger: CellSide | null, provider: CellSide | null, pick: (side: CellSide) => string): string {
  return `${ledger === null ? '-' : pick(ledger)} / ${provider === null ? '-' : pick(provider)}`;
}

/** The human report: the cells (differences first), then flagged prices and unattributed costs. */
function formatReconcileReport(result: ReconcileResult): string {
  const lines: string[] = [];
  const scope = result.byProject ? 'day, model and project' : 'day and model';
  lines.push(
    `Ledger vs ${result.provider}, ${result.since} to ${result.until} (UTC days), by ${scope}; tolerance ${result.tolerancePercent}%: ${
      result.differences === 0 ? 'every cell agrees' : `${result.differences} cell(s) differ`
    }, ${result.priceFlags.length} price entr${result.priceFlags.length === 1 ? 'y' : 'ies'} flagged.`,
  );
  if (result.pending > 0) lines.push(`${result.pending} ledger row(s) in the range are still pending and not compared.`);
  lines.push('');
  const headers = [
    'day',
    'model',
    ...(result.byProject ? ['project'] : []),
    'status',
    'requests (ledger / provider)',
    'tokens',
    'Δ tokens',
    'USD',
    'Δ USD',
    'note',
  ];
  const rows = result.rows.map((row: ReconcileRow) => [
    row.day,
    row.model,
    ...(result.byProject ? [row.project ?? '-'] : []),
    row.status,
    pair(row.ledger, row.provider, (s) => count(s.requests)),
    pair(row.ledger, row.provider, (s) => count(s.inputTokens + s.outputTokens)),
    percentText(row.tokensDiffPercent),
    pair(row.ledger, row.provider, (s) => formatMicrosExact(s.costMicros)),
    percentText(row.costDiffPercent),
    row.status === 'match' ? '' : row.note,
  ]);
  lines.push(rows.length === 0 ? 'Neither side has usage in this range.' : table(headers, rows));
  lines.push('');
  lines.push(
    `Total: ledger ${count(result.totals.ledger.requests)} requests, ${formatMicrosExact(result.totals.ledger.costMicros)}; provider ${count(
      result.totals.provider.requests,
    )} requests, ${formatMicrosExact(result.totals.provider.costMicros)}.`,
  );
  if (result.priceFlags.length > 0) {
    lines.push('', 'Price table entries the provider disagrees with:', '');
    lines.push(
      table(
        ['model', 'tokens', 'kind', 'provider $/1M', 'table $/1M', 'Δ', 'note'],
        result.priceFlags.map((flag) => [
          flag.model,
          count(flag.tokens),
          flag.kind,
          formatMicrosExact(flag.effectiveMicroUsdPer1M),
          formatMicrosExact(flag.tableMicroUsdPer1M),
          percentText(flag.diffPercent),
          flag.note,
        ]),
      ),
    );
  }
  if (result.unattributedCosts.length > 0) {
    lines.push('', 'Costs that name no model (not compared):', '');
    lines.push(
      table(
        ['day', 'project', 'line item', 'USD'],
        result.unattributedCosts.map((cost) => [cost.day, cost.project ?? '-', cost.lineItem, formatMicrosExact(cost.costMicros)]),
      ),
    );
  }
  return lines.join('\n');
}

export function registerReconcileCommand(program: Command): void {
  program
    .command('reconcile')
    .description("compare the ledger with the provider's own usage and cost reports (needs TOLLGATE_PROVIDER_ADMIN_KEY)")
    .option('--since <when>', 'first UTC day: 7d, today, month or YYYY-MM-DD', '7d')
    .option('--until <when>', 'last UTC day (default today)')
    .option('--tolerance <percent>', 'how far the sides may differ before a cell is flagged (default $TOLLGATE_RECONCILE_TOLERANCE or 1)')
    .option('--json', 'print the report as JSON')
    .option('--fail-on-diff', 'exit with code 1 when any cell differs beyond the tolerance (for CI)')
    .action(async (options: { since: string; until?: string; tolerance?: string; json?: boolean; failOnDiff?: boolean }, command: Command) => {
      const global = command.optsWithGlobals<GlobalOptions>();
      if (global.url !== undefined) throw new CliError('reconcile reads the ledger file itself: run it on the proxy host, without --url', EXIT_USAGE);
      const config = loadConfig();
      const adminKey = config.reconcile.adminKey;
      if (adminKey === undefined) throw new CliError('set TOLLGATE_PROVIDER_ADMIN_KEY to the provider admin key that reads usage and costs', EXIT_USAGE);
      let tolerancePercent = config.reconcile.tolerancePercent;
      if (options.tolerance !== undefined) {
        tolerancePercent = Number(options.tolerance);
        if (!/^\d+(\.\d+)?$/.test(options.tolerance.trim()) || tolerancePercent > 100)
          throw new CliError('--tolerance takes a percentage between 0 and 100', EXIT_USAGE);
      }
      const now = Date.now();
      const since = parseUtcDay(options.since, now);
      const until = options.until === undefined ? new Date(now).toISOString().slice(0, 10) : parseUtcDay(options.until, now);
      // On replicas the result is stored in PostgreSQL, where every node's dashboard reads it; and
      // without --db the ledger is PostgreSQL's too: every node's rows, not this host's share.
      const pool = config.databaseUrl === undefined ? undefined : await openMigratedPg(config.databaseUrl);
      const database = openDatabase(global.db ?? config.dbPath);
      try {
        const ledger: Backend = pool === undefined || global.db !== undefined ? { kind: 'sqlite', database } : { kind: 'postgres', database, pool };
        const { result } = await runReconcile({
          ledger: openLedgerCells(ledger),
          results: openReconciliations(pool === undefined ? { kind: 'sqlite', database } : { kind: 'postgres', pool }),
          provider: openAIUsageProvider({ baseUrl: config.reconcile.apiUrl, adminKey }),
          range: { since, until },
          mapping: config.reconcile.projects,
          prices: config.prices,
          tolerancePercent,
          now,
        });
        if (options.json) printJson(result);
        else print(formatReconcileReport(result));
        // The report is printed either way; only the exit code tells a CI job that the two sides disagree.
        if (options.failOnDiff && result.differences > 0)
          throw new CliError(`${result.differences} cell(s) differ beyond the ${result.tolerancePercent}% tolerance`, EXIT_DIFFERENCES);
      } catch (error) {
        if (error instanceof ProviderReportError) throw new CliError(`the provider's report could not be read: ${error.message}`, 1);
        throw error;
      } finally {
        database.close();
        await pool?.end();
      }
    });
}
