/**
 * `tollgate reconcile`: the ledger against the providers' own usage and cost
 * reports (src/reconcile/), printed as a table or JSON and stored for the
 * dashboard. Reads the local SQLite ledger, or PostgreSQL's on a replica
 * (TOLLGATE_DATABASE_URL, no --db). OpenAI's bill is read with
 * TOLLGATE_PROVIDER_ADMIN_KEY, Anthropic's with TOLLGATE_ANTHROPIC_ADMIN_KEY:
 * every provider whose key is set, or the one `--provider` names. Keys come
 * from the environment only (never a flag: flags end up in shell history and
 * process lists).
 */
import type { Command } from 'commander';
import { loadConfig } from '../config/index.js';
import { openDatabase } from '../storage/sqlite/open.js';
import { formatMicrosExact } from '../domain/money.js';
import type { CellSide, ReconcileRow } from '../reconcile/compare.js';
import { ADMIN_KEY_VARIABLES, configuredProvider, configuredProviders, PROVIDERS, type ProviderName } from '../reconcile/providers.js';
import { openLedgerCells } from '../storage/index.js';
import type { Backend } from '../storage/backend.js';
import { ProviderReportError, type UsageProvider } from '../reconcile/provider.js';
import { parseUtcDay, runReconcile, type ReconcileResult } from '../reconcile/run.js';
import { openReconciliations } from '../storage/index.js';
import { CliError, EXIT_USAGE, openMigratedPg, print, printJson, type GlobalOptions } from './context.js';
import type { Config } from '../config/index.js';
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
    result.requestsCompared === false
      ? `${row.ledger === null ? '-' : count(row.ledger.requests)} / -`
      : pair(row.ledger, row.provider, (s) => count(s.requests)),
    pair(row.ledger, row.provider, (s) => count(s.inputTokens + s.outputTokens)),
    percentText(row.tokensDiffPercent),
    pair(row.ledger, row.provider, (s) => formatMicrosExact(s.costMicros)),
    percentText(row.costDiffPercent),
    row.status === 'match' ? '' : row.note,
  ]);
  lines.push(rows.length === 0 ? 'Neither side has usage in this range.' : table(headers, rows));
  lines.push('');
  lines.push(
    `Total: ledger ${count(result.totals.ledger.requests)} requests, ${formatMicrosExact(result.totals.ledger.costMicros)}; provider ${
      result.requestsCompared === false ? '' : `${count(result.totals.provider.requests)} requests, `
    }${formatMicrosExact(result.totals.provider.costMicros)}.`,
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

interface ReconcileOptions {
  readonly since: string;
  readonly until?: string;
  readonly tolerance?: string;
  readonly json?: boolean;
  readonly failOnDiff?: boolean;
  readonly provider?: string;
}

/** The bills to read: the one `--provider` names (its key must be set), else every provider whose admin key is set. */
function providersToRead(config: Config, only: string | undefined): UsageProvider[] {
  if (only !== undefined) {
    if (!(PROVIDERS as readonly string[]).includes(only)) throw new CliError(`--provider takes ${PROVIDERS.join(' or ')}`, EXIT_USAGE);
    const provider = configuredProvider(config, only as ProviderName);
    if (provider === undefined)
      throw new CliError(`set ${ADMIN_KEY_VARIABLES[only as ProviderName]} to the ${only} admin key that reads usage and costs`, EXIT_USAGE);
    return [provider];
  }
  const providers = configuredProviders(config);
  if (providers.length === 0)
    throw new CliError(
      'set TOLLGATE_PROVIDER_ADMIN_KEY (OpenAI) or TOLLGATE_ANTHROPIC_ADMIN_KEY (Anthropic) to the provider admin key that reads usage and costs',
      EXIT_USAGE,
    );
  return providers;
}

export function registerReconcileCommand(program: Command): void {
  program
    .command('reconcile')
    .description(
      "compare the ledger with the providers' own usage and cost reports (needs TOLLGATE_PROVIDER_ADMIN_KEY for OpenAI, TOLLGATE_ANTHROPIC_ADMIN_KEY for Anthropic)",
    )
    .option('--provider <name>', 'only this bill: openai or anthropic (default: every provider whose admin key is set)')
    .option('--since <when>', 'first UTC day: 7d, today, month or YYYY-MM-DD', '7d')
    .option('--until <when>', 'last UTC day (default today)')
    .option('--tolerance <percent>', 'how far the sides may differ before a cell is flagged (default $TOLLGATE_RECONCILE_TOLERANCE or 1)')
    .option('--json', 'print the report as JSON')
    .option('--fail-on-diff', 'exit with code 1 when any cell differs beyond the tolerance (for CI)')
    .action(async (options: ReconcileOptions, command: Command) => {
      const global = command.optsWithGlobals<GlobalOptions>();
      if (global.url !== undefined) throw new CliError('reconcile reads the ledger file itself: run it on the proxy host, without --url', EXIT_USAGE);
      const config = loadConfig();
      const providers = providersToRead(config, options.provider);
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
        const results: ReconcileResult[] = [];
        for (const provider of providers) {
          try {
            const { result } = await runReconcile({
              ledger: openLedgerCells(ledger),
              results: openReconciliations(pool === undefined ? { kind: 'sqlite', database } : { kind: 'postgres', pool }),
              provider,
              range: { since, until },
              mapping: config.reconcile.projects,
              prices: config.prices,
              tolerancePercent,
              now,
            });
            results.push(result);
          } catch (error) {
            if (error instanceof ProviderReportError) throw new CliError(`the ${provider.name} report could not be read: ${error.message}`, 1);
            throw error;
          }
        }
        // One bill: its report, as before; both: an array of them (JSON) or one table after the other.
        if (options.json) printJson(results.length === 1 ? results[0] : results);
        else print(results.map(formatReconcileReport).join('\n\n'));
        // The report is printed either way; only the exit code tells a CI job that the two sides disagree.
        const differences = results.reduce((sum, result) => sum + result.differences, 0);
        if (options.failOnDiff && differences > 0)
          throw new CliError(`${differences} cell(s) differ beyond the ${tolerancePercent}% tolerance`, EXIT_DIFFERENCES);
      } finally {
        database.close();
        await pool?.end();
      }
    });
}
