/**
 * Exports for finance and for other tools: the spend report as CSV, and the
 * raw ledger rows of a period as CSV or NDJSON, streamed page by page.
 *
 * CSV is RFC 4180 (comma, CRLF, double quotes doubled) with a header row.
 * Money is exact decimal USD ("0.000125", from integer micro-USD). Text
 * cells come from clients and operators (key and tenant names, models, error
 * codes), so they lose their control characters, and one that a spreadsheet
 * would run as a formula (= + - @ first) is prefixed with a single quote
 * (OWASP's "CSV injection" advice). Numbers are written by us and never
 * prefixed.
 */
import { calendarDay, dayEndMs, dayStartMs } from '../domain/calendar.js';
import { formatMicrosFixed } from '../domain/money.js';
import { parseSince } from './spend.js';
import type { SpendReport, SpendRow, SpendTotals } from '../storage/spend-reads.js';
import type { LedgerExportQuery, LedgerExportRow, LedgerExportSource } from '../storage/ledger-export.js';

/** A cell: text (sanitized), a number or boolean (as is), or nothing (empty cell). */
type Cell = string | number | boolean | null | undefined;

// C0 and C1 controls, DEL, and the Unicode line and paragraph separators.
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g;
const FORMULA_START = /^\s*[=+\-@]/;
const NEEDS_QUOTES = /[",]|^\s|\s$/;

/** Text as one safe CSV cell: controls become spaces, formulas are defused with a leading `'`, quoted when needed. */
export function csvText(text: string): string {
  let clean = text.replace(CONTROL, ' ');
  if (FORMULA_START.test(clean)) clean = `'${clean}`;
  return NEEDS_QUOTES.test(clean) ? `"${clean.replace(/"/g, '""')}"` : clean;
}

function csvCell(cell: Cell): string {
  if (cell === null || cell === undefined) return '';
  if (typeof cell === 'string') return csvText(cell);
  return String(cell);
}

/** One CSV record, CRLF-terminated. */
export function csvLine(cells: readonly Cell[]): string {
  return `${cells.map(csvCell).join(',')}\r\n`;
}

const TOTAL_COLUMNS = [
  'requests',
  'prompt_tokens',
  'cached_tokens',
  'completion_tokens',
  'reasoning_tokens',
  'cost_usd',
  'errors',
  'rejected_rate_limit',
  'rejected_budget',
] as const;

function totalCells(row: SpendTotals): Cell[] {
  return [
    row.requests,
    row.promptTokens,
    row.cachedTokens,
    row.completionTokens,
    row.reasoningTokens,
    formatMicrosFixed(row.costMicros),
    row.errors,
    row.rejectedRateLimit,
    row.rejectedBudget,
  ];
}

/**
 * The spend report as CSV: one record per group (day, model, key, tenant),
 * or one record for `by: total`. No total record among the groups, so a
 * column's sum is the report's total.
 */
export function spendReportCsv(report: SpendReport): string {
  const period: Cell[] = [report.since, report.until];
  if (report.by === 'total') return csvLine(['since', 'until', ...TOTAL_COLUMNS]) + csvLine([...period, ...totalCells(report.total)]);
  const sessions = report.by === 'session' ? SESSION_COLUMNS : [];
  return csvLine(['since', 'until', report.by, ...(keyed(report) ? ['key_id', 'key_prefix'] : []), ...sessions, ...TOTAL_COLUMNS]) + spendCsvRecords(report);
}

/** End users, tags and sessions belong to a key, so their records name it too. */
function keyed(report: SpendReport): boolean {
  return report.by === 'key' || report.by === 'user' || report.by === 'tag' || report.by === 'session';
}

/** A session's first and last request in the period, and the time between them. */
const SESSION_COLUMNS = ['first_request_at', 'last_request_at', 'duration_seconds'];

function sessionCells(row: SpendRow): Cell[] {
  if (row.firstAt === undefined || row.lastAt === undefined) return [null, null, null];
  const first = Number(row.firstAt);
  const last = Number(row.lastAt);
  return [new Date(first).toISOString(), new Date(last).toISOString(), Math.round((last - first) / 1000)];
}

/** The records of a report's rows without the header (the later pages of a report: src/storage/spend-cursor.ts). */
export function spendCsvRecords(report: SpendReport): string {
  if (report.by === 'total') return '';
  const period: Cell[] = [report.since, report.until];
  const byKey = keyed(report);
  const bySession = report.by === 'session';
  let text = '';
  for (const row of report.rows as SpendRow[]) {
    text += csvLine([...period, row.group, ...(byKey ? [row.keyId, row.prefix] : []), ...(bySession ? sessionCells(row) : []), ...totalCells(row)]);
  }
  return text;
}

export type LedgerExportFormat = 'csv' | 'ndjson';

const INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,3})?)?(?:Z|[+-]\d{2}:\d{2})$/;

function instant(text: string): number | undefined {
  const trimmed = text.trim();
  if (!INSTANT.test(trimmed)) return undefined;
  const ms = Date.parse(trimmed);
  if (Number.isNaN(ms)) throw new RangeError(`"${text}" is not a valid time`);
  return ms;
}

/**
 * The period of a ledger export: `since` and `until` as `tollgate spend`
 * takes them (7d, today, month, YYYY-MM-DD: whole calendar days, `until`
 * included, default today), or exact instants (`2026-11-01T12:00:00Z`,
 * `until` excluded). The labels name the days, for file names.
 */
export function parseExportRange(
  sinceText: string,
  untilText: string | undefined,
  now: number,
): { readonly sinceMs: number; readonly untilMs: number; readonly since: string; readonly until: string } {
  const sinceInstant = instant(sinceText);
  const sinceMs = sinceInstant ?? dayStartMs(parseSince(sinceText, now));
  const untilInstant = untilText === undefined ? undefined : instant(untilText);
  const untilDay = untilText === undefined ? calendarDay(now) : untilInstant === undefined ? parseSince(untilText, now) : undefined;
  const untilMs = untilInstant ?? dayEndMs(untilDay!);
  if (untilMs <= sinceMs) throw new RangeError('the period is empty: --until must come after --since');
  return { sinceMs, untilMs, since: calendarDay(sinceMs), until: untilDay ?? calendarDay(untilMs - 1) };
}

/** The exported record's fields, in column order. */
const LEDGER_EXPORT_COLUMNS = [
  'request_id',
  'created_at',
  'completed_at',
  'key_id',
  'key_name',
  'key_prefix',
  'tenant_id',
  'tenant_name',
  'endpoint',
  'model',
  'stream',
  'status',
  'http_status',
  'est_prompt_tokens',
  'est_completion_tokens',
  'est_cost_usd',
  'prompt_tokens',
  'cached_tokens',
  // Prompt tokens written to the prompt cache (Anthropic), billed at a premium over input.
  'cache_write_5m_tokens',
  'cache_write_1h_tokens',
  'completion_tokens',
  'reasoning_tokens',
  'cost_usd',
  'price_known',
  'usage_source',
  'latency_ms',
  'ttft_ms',
  'upstream_request_id',
  'error_code',
  // The end user and tags the request named (src/endusers): what finance splits costs by.
  'end_user',
  'tags',
  // The agent session (src/endusers/session.ts).
  'session',
] as const;

const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());
const dollars = (micros: number | null): string | null => (micros === null ? null : formatMicrosFixed(micros));

/** A ledger row as exported: ISO 8601 UTC times, exact USD strings, booleans. */
function exportRecord(row: LedgerExportRow): Record<(typeof LEDGER_EXPORT_COLUMNS)[number], string | number | boolean | null> {
  return {
    request_id: row.request_id,
    created_at: iso(row.created_at),
    completed_at: iso(row.completed_at),
    key_id: row.key_id,
    key_name: row.key_name,
    key_prefix: row.key_prefix,
    tenant_id: row.tenant_id,
    tenant_name: row.tenant_name,
    endpoint: row.endpoint,
    model: row.model,
    stream: row.stream === 1,
    status: row.status,
    http_status: row.http_status,
    est_prompt_tokens: row.est_prompt_tokens,
    est_completion_tokens: row.est_completion_tokens,
    est_cost_usd: dollars(row.est_cost_micros),
    prompt_tokens: row.prompt_tokens,
    cached_tokens: row.cached_tokens,
    cache_write_5m_tokens: row.cache_write_5m_tokens,
    cache_write_1h_tokens: row.cache_write_1h_tokens,
    completion_tokens: row.completion_tokens,
    reasoning_tokens: row.reasoning_tokens,
    cost_usd: dollars(row.cost_micros),
    price_known: row.price_known === 1,
    usage_source: row.usage_source,
    latency_ms: row.latency_ms,
    ttft_ms: row.ttft_ms,
    upstream_request_id: row.upstream_request_id,
    error_code: row.error_code,
    end_user: row.end_user,
    tags: row.tags,
    session: row.session,
  };
}

/** The header record of a CSV export; NDJSON has none. */
function ledgerExportHeader(format: LedgerExportFormat): string {
  return format === 'csv' ? csvLine(LEDGER_EXPORT_COLUMNS) : '';
}

/** One row as its CSV record or NDJSON line: the bytes of every ledger export, from either store. */
function ledgerExportLine(row: LedgerExportRow, format: LedgerExportFormat): string {
  const record = exportRecord(row);
  return format === 'csv' ? csvLine(Object.values(record)) : `${JSON.stringify(record)}\n`;
}

/** A ledger export as text: CSV (with its header) or NDJSON, in chunks (what the admin API and the CLI stream). */
export type LedgerExporter = (query: LedgerExportQuery, format: LedgerExportFormat) => AsyncGenerator<string, void, undefined>;

/**
 * The CSV or NDJSON bytes of `source`'s rows. The header goes out with the
 * first page, which is read before anything is yielded: an export that
 * cannot start fails before its first byte.
 */
export function ledgerExporter(source: LedgerExportSource): LedgerExporter {
  return async function* exportLedger(query, format) {
    const chunks = source.lines(query, (row) => ledgerExportLine(row, format));
    try {
      const first = await chunks.next();
      const head = ledgerExportHeader(format) + (first.done === true ? '' : first.value);
      if (head !== '') yield head;
      if (first.done === true) return;
      for (;;) {
        const next = await chunks.next();
        if (next.done === true) return;
        yield next.value;
      }
    } finally {
      await chunks.return(undefined);
    }
  };
}

/**
 * Chunks of text as a byte stream that pulls the next chunk only when the
 * reader wants more. The first chunk is read before the stream exists, so an
 * export that cannot start (its file or PostgreSQL unreachable) throws here,
 * while its caller can still answer with an error instead of a 200.
 */
export async function textStream(chunks: AsyncGenerator<string, void, undefined>): Promise<ReadableStream<Uint8Array>> {
  const encoder = new TextEncoder();
  const first = await chunks.next();
  return new ReadableStream<Uint8Array>({
    start(controller) {
      if (first.done === true) controller.close();
      else controller.enqueue(encoder.encode(first.value));
    },
    async pull(controller) {
      const next = await chunks.next();
      if (next.done === true) controller.close();
      else controller.enqueue(encoder.encode(next.value));
    },
    async cancel() {
      await chunks.return(undefined);
    },
  });
}
