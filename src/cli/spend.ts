/** `tollgate spend`: spend per day, model, key, tenant, end user or tag, from the rollups. */
import { Option, type Command } from 'commander';
import type { AdminOps } from '../admin/ops.js';
import { parseSince } from '../reports/spend.js';
import { SPEND_GROUPINGS, type SpendGrouping, type SpendReport, type SpendRow, type SpendTotals } from '../storage/spend-reads.js';
import { MAX_SPEND_PAGE_ROWS } from '../storage/spend-cursor.js';
import { spendReportCsv } from '../reports/export.js';
import { forecastLines, localBudgetForecasts } from './alerts.js';
import { CliError, EXIT_USAGE, print, printJson, withOps } from './context.js';
import { usdTotal } from '../domain/money.js';
import { count, table, usd } from './format.js';

type SpendFormat = 'table' | 'json' | 'csv';
const FORMATS: SpendFormat[] = ['table', 'json', 'csv'];

function cells(group: string, row: SpendTotals, cost = usd(row.costMicros)): string[] {
  return [
    group,
    count(row.requests),
    count(row.promptTokens),
    count(row.completionTokens),
    cost,
    count(row.rejectedRateLimit + row.rejectedBudget),
    count(row.errors),
  ];
}

type SpendRequest = Parameters<AdminOps['spend']>[0];

/**
 * The report's rows, read page after page (src/storage/spend-cursor.ts): every
 * row, or the first `limit`. The totals are the first page's. Without a limit
 * the local file answers every row at once, and a proxy (`--url`) in pages of
 * its default size, which are followed.
 */
async function readPages(ops: AdminOps, request: SpendRequest, limit: number | undefined): Promise<SpendReport> {
  const pageRows = limit === undefined ? undefined : Math.min(limit, MAX_SPEND_PAGE_ROWS);
  const first = await ops.spend({ ...request, limit: pageRows });
  const rows = [...first.rows];
  let page = first;
  while (page.hasMore && page.nextCursor !== null && (limit === undefined || rows.length < limit)) {
    page = await ops.spend({ ...request, limit: pageRows, cursor: page.nextCursor });
    rows.push(...page.rows);
  }
  const cut = limit !== undefined && rows.length > limit;
  if (cut) rows.length = limit;
  const hasMore = cut || page.hasMore;
  return { ...first, rows, hasMore, nextCursor: hasMore && !cut ? page.nextCursor : null };
}

export function registerSpendCommand(program: Command): void {
  program
    .command('spend')
    .description('spend and usage from the ledger rollups (UTC days)')
    .option('--key <key>', 'one key (id, name or prefix)')
    .option('--tenant <tenant>', 'one tenant')
    .option('--since <when>', 'first day: 7d, today, month or YYYY-MM-DD', '7d')
    .option('--until <when>', 'last day (default today)')
    .addOption(new Option('--by <grouping>', 'group rows by').choices([...SPEND_GROUPINGS]).default('day'))
    .addOption(new Option('--format <format>', 'output: an aligned table, JSON, or CSV (RFC 4180, exact USD)').choices(FORMATS).default('table'))
    .option('--json', 'print JSON (same as --format json)')
    .option('--limit <rows>', 'print the first N rows only (default: every row, read in pages)')
    .action(
      async (
        options: { key?: string; tenant?: string; since: string; until?: string; by: SpendGrouping; format: SpendFormat; json?: boolean; limit?: string },
        command: Command,
      ) => {
        const since = parseSince(options.since);
        const until = options.until === undefined ? undefined : parseSince(options.until);
        const limit = options.limit === undefined ? undefined : Number(options.limit);
        if (limit !== undefined && (!Number.isSafeInteger(limit) || limit < 1)) throw new CliError('--limit must be a whole number from 1', EXIT_USAGE);
        const report = await withOps(command, (ops) => readPages(ops, { key: options.key, tenant: options.tenant, since, until, by: options.by }, limit));
        // The budgets of one key or tenant, with where they are heading (local database only).
        const budgets = options.format === 'csv' ? undefined : localBudgetForecasts(command, options);
        if (options.json || options.format === 'json') {
          printJson(budgets === undefined ? report : { ...report, budgets });
          return;
        }
        if (options.format === 'csv') {
          print(spendReportCsv(report));
          return;
        }
        // End users, tags and sessions belong to a key: name it beside them; a session's duration is first to last request.
        const withKey = options.by === 'user' || options.by === 'tag' || options.by === 'session';
        const bySession = options.by === 'session';
        const headers = [
          options.by === 'total' ? '' : options.by,
          ...(withKey ? ['key'] : []),
          ...(bySession ? ['duration'] : []),
          'requests',
          'prompt tokens',
          'completion tokens',
          'cost',
          'rejected',
          'errors',
        ];
        const rows = report.rows.map((row: SpendRow) =>
          withKey ? [row.group, row.key ?? '', ...(bySession ? [durationOf(row)] : []), ...cells(row.group, row).slice(1)] : cells(row.group, row),
        );
        // The total as precise as its rows, so they visibly add up.
        const totalCells = cells(
          'total',
          report.total,
          usdTotal(
            report.total.costMicros,
            report.rows.map((row) => row.costMicros),
          ),
        );
        rows.push(withKey ? ['total', '', ...(bySession ? [''] : []), ...totalCells.slice(1)] : totalCells);
        const scope = options.key !== undefined ? ` for key ${options.key}` : options.tenant !== undefined ? ` for tenant ${options.tenant}` : '';
        print(
          `Spend${scope}, ${report.since} to ${report.until} (UTC)${report.pending > 0 ? `; ${report.pending} request(s) in flight, counted at their estimate` : ''}\n\n`,
        );
        print(
          table(headers, rows, [
            ...(withKey ? (['left'] as const) : []),
            ...(bySession ? (['right'] as const) : []),
            'left',
            'right',
            'right',
            'right',
            'right',
            'right',
            'right',
          ]),
        );
        if (report.hasMore) print(`\nThe first ${report.rows.length} rows only: more follow (run without --limit for every one).\n`);
        if (budgets !== undefined && budgets.length > 0) print(`\nBudgets\n${forecastLines(budgets)}`);
      },
    );
}

/** A session's first to last request, as `1h 02m`, `12m 30s` or `45s`. */
function durationOf(row: SpendRow): string {
  if (row.firstAt === undefined || row.lastAt === undefined) return '';
  const seconds = Math.round((Number(row.lastAt) - Number(row.firstAt)) / 1000);
  const h = Math.floor(seconds / 3600);
  const m = Math.floor((seconds % 3600) / 60);
  const s = seconds % 60;
  if (h > 0) return `${h}h ${String(m).padStart(2, '0')}m`;
  if (m > 0) return `${m}m ${String(s).padStart(2, '0')}s`;
  return `${s}s`;
}
