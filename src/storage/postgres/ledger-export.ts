/**
 * The raw ledger export on a replica (TOLLGATE_DATABASE_URL): PostgreSQL's
 * ledger, every node's rows, with the columns a node's own SQLite file gives
 * (one select list, ../ledger-export-select.ts; one line formatter,
 * src/reports/export.ts).
 *
 * Keyset pagination, not a server-side cursor (`DECLARE … CURSOR` in a
 * transaction): a cursor would pin one of the node's few pooled connections
 * (src/storage/postgres/open.ts; the shipper and the key sync share them) and an open
 * transaction for as long as the slowest reader takes — minutes for a big
 * download over a slow link — holding back vacuum meanwhile. Here each page
 * is one short query through the ledger's time index (`ledger_created`, or
 * `ledger_key_time` for one key), and no connection is held between pages, so
 * a reader that stops, fast or slow, leaves nothing behind. The order
 * (created_at, request_id) is unique, so every row comes exactly once. The
 * price: no single snapshot. A row shipped during the export with a time the
 * export has passed is left out (as if the export had run a moment earlier),
 * and a row settled mid-export shows the state its page read.
 *
 * PostgreSQL not answering: `ledger_unavailable` (503), never one node's
 * share. The first page is read before the first chunk is yielded, so the
 * admin route answers that error before any byte (textStream in
 * src/reports/export.ts reads the first chunk before the 200).
 */
import type pg from 'pg';
import type { PgPool } from './open.js';
import { pgUnavailable } from '../../domain/errors.js';
import type { LedgerExportQuery, LedgerExportRow, LedgerExportSource } from '../ledger-export.js';
import { ledgerExportSelect } from '../ledger-export-select.js';

/** Rows per query: one chunk of about 500 kB of NDJSON, formatted in a few ms. */
const PAGE_ROWS = 1000;

interface Position {
  readonly createdAt: number;
  readonly requestId: string;
}

/**
 * One page: the rows after `after` in (created_at, request_id) order.
 * Request ids compare bytewise (`COLLATE "C"`), the same in the condition
 * and the order, whatever the database's collation.
 */
function pageStatement(query: LedgerExportQuery, after: Position | undefined): { text: string; values: unknown[] } {
  const values: unknown[] = [query.sinceMs, query.untilMs];
  const where = ['l.created_at >= $1', 'l.created_at < $2'];
  if (query.keyId !== undefined) {
    values.push(query.keyId);
    where.push(`l.key_id = $${values.length}`);
  }
  if (query.tenantId !== undefined) {
    values.push(query.tenantId);
    where.push(`l.tenant_id = $${values.length}`);
  }
  if (after !== undefined) {
    values.push(after.createdAt, after.requestId);
    const [at, id] = [`$${values.length - 1}`, `$${values.length}`];
    // PostgreSQL starts the time index's scan at the row comparison's first column (EXPLAIN: an Index Cond on created_at).
    where.push(`(l.created_at, l.request_id COLLATE "C") > (${at}, ${id})`);
  }
  values.push(PAGE_ROWS);
  return {
    text: `${ledgerExportSelect((column) => `${column}::int`)}
      FROM ledger l JOIN api_keys k ON k.id = l.key_id LEFT JOIN tenants t ON t.id = l.tenant_id
      WHERE ${where.join(' AND ')}
      ORDER BY l.created_at, l.request_id COLLATE "C" LIMIT $${values.length}`,
    values,
  };
}

async function readPage(pool: PgPool, query: LedgerExportQuery, after: Position | undefined): Promise<LedgerExportRow[]> {
  try {
    return (await pool.query<LedgerExportRow & pg.QueryResultRow>(pageStatement(query, after))).rows;
  } catch (error) {
    throw pgUnavailable('The ledger export reads', error);
  }
}

/**
 * PostgreSQL's ledger rows of a period as text chunks (each row through
 * `line`), one page per chunk, in constant memory: the next page is read
 * only when the consumer asks for the next chunk.
 */
async function* exportLines(pool: PgPool, query: LedgerExportQuery, line: (row: LedgerExportRow) => string): AsyncGenerator<string, void, undefined> {
  let rows = await readPage(pool, query, undefined);
  for (;;) {
    let chunk = '';
    for (const row of rows) chunk += line(row);
    if (chunk !== '') yield chunk;
    const last = rows.at(-1);
    if (rows.length < PAGE_ROWS || last === undefined) return;
    rows = await readPage(pool, query, { createdAt: last.created_at, requestId: last.request_id });
  }
}

/** The export of PostgreSQL's ledger: every node's shipped rows. */
export function postgresLedgerExport(pool: PgPool): LedgerExportSource {
  return { lines: (query, line) => exportLines(pool, query, line) };
}
