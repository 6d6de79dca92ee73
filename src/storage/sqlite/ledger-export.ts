/**
 * A ledger export (../ledger-export.ts) from a node's SQLite file. The reads
 * run on the event loop, a page per turn: a page is cut short after 10 ms, so
 * requests waiting behind an export wait a few ms.
 */
import Database from 'better-sqlite3';
import { setImmediate as nextTurn } from 'node:timers/promises';
import type { LedgerExportQuery, LedgerExportRow, LedgerExportSource } from '../ledger-export.js';
import { ledgerExportSelect } from '../ledger-export-select.js';

/** The SQL and parameters of an export; rows come in time order for one key (its index), else in the order written. */
function ledgerExportStatement(query: LedgerExportQuery): { sql: string; params: Record<string, unknown> } {
  const where = ['l.created_at >= @sinceMs', 'l.created_at < @untilMs'];
  if (query.keyId !== undefined) where.push('l.key_id = @keyId');
  if (query.tenantId !== undefined) where.push('l.tenant_id = @tenantId');
  // CROSS JOIN keeps the ledger the outer loop, so rows stream in index or
  // rowid order with no sort (a sort would read the whole period before the
  // first row, in one blocking step).
  const order = query.keyId !== undefined ? 'ORDER BY l.key_id, l.created_at' : 'ORDER BY l.rowid';
  return {
    sql: `${ledgerExportSelect((column) => column)} FROM ledger l CROSS JOIN api_keys k ON k.id = l.key_id LEFT JOIN tenants t ON t.id = l.tenant_id WHERE ${where.join(' AND ')} ${order}`,
    params: { sinceMs: query.sinceMs, untilMs: query.untilMs, keyId: query.keyId, tenantId: query.tenantId },
  };
}

/**
 * One chunk is read and formatted in one event-loop turn: at most this many
 * rows, and no longer than PAGE_MS (a row costs tens of microseconds, more on
 * a busy machine), so requests waiting behind an export wait a few ms.
 */
const PAGE_ROWS = 1000;
const PAGE_MS = 10;

/**
 * The ledger rows of a period as text chunks (each row through `line`), in
 * constant memory: a cursor over the rows, one page of rows per chunk (up to
 * 1,000 rows or 10 ms of work), the next page only when the consumer asks for
 * it (backpressure) and after the event loop has had a turn.
 *
 * It reads through its own read-only connection to the file, so the export's
 * cursor never blocks the ledger writer's connection; in WAL mode it reads
 * one consistent snapshot while writes go on (the WAL cannot be
 * checkpointed past that snapshot until the export ends).
 */
async function* exportLines(databasePath: string, query: LedgerExportQuery, line: (row: LedgerExportRow) => string): AsyncGenerator<string, void, undefined> {
  const sqlite = new Database(databasePath, { readonly: true, fileMustExist: true });
  try {
    sqlite.pragma('busy_timeout = 5000');
    const { sql, params } = ledgerExportStatement(query);
    const rows = sqlite.prepare(sql).iterate(params) as IterableIterator<LedgerExportRow>;
    try {
      for (;;) {
        let page = '';
        let done = false;
        const deadline = performance.now() + PAGE_MS;
        for (let n = 1; n <= PAGE_ROWS; n += 1) {
          const next = rows.next();
          if (next.done === true) {
            done = true;
            break;
          }
          page += line(next.value);
          if (n % 50 === 0 && performance.now() > deadline) break;
        }
        if (page !== '') yield page;
        if (done) return;
        await nextTurn();
      }
    } finally {
      rows.return?.();
    }
  } finally {
    sqlite.close();
  }
}

/** The export of the SQLite file at `path`. */
export function sqliteLedgerExport(path: string): LedgerExportSource {
  return { lines: (query, line) => exportLines(path, query, line) };
}
