/**
 * Pages of a spend report (`GET /admin/api/spend`, `tollgate spend`): at most
 * `limit` rows each, in the report's own order, and a cursor that says where
 * the next page starts. Pure: no I/O.
 *
 * The cursor is keyset, not an offset: it holds the last row's sort values
 * (its cost, name and id; the day for `by=day`), so a page costs the same
 * wherever it starts, and it holds what the report was asked for, so a
 * cursor given to another report is a 400, never a page of something else.
 * The rows of a live report move as spend is recorded: a row whose spend
 * changes between two page requests can cross the cursor (shown twice or not
 * at all). A report of past days (`until` before today) does not move.
 */
import { TollgateError } from '../domain/errors.js';

/** Rows per page when none is asked for, and the most a page may hold (README, "Admin API"). */
const SPEND_PAGE_ROWS = 1000;
export const MAX_SPEND_PAGE_ROWS = 5000;

/** Where a page starts: after the row with these sort values, or at the `(no end user)` row that ends a report by user. */
export type SpendPosition = { readonly after: { readonly cost: number; readonly name: string; readonly id: string } } | { readonly rest: true };

/** What a cursor was given for: another report's cursor is refused. */
export interface CursorScope {
  /** The grouping (spend-reads.ts's SpendGrouping). */
  readonly by: string;
  readonly since: string;
  readonly until: string;
  readonly keyId: string | undefined;
  readonly tenantId: string | undefined;
}

interface CursorBody {
  readonly v: 1;
  readonly by: string;
  readonly since: string;
  readonly until: string;
  readonly key: string | null;
  readonly tenant: string | null;
  /** ['a', cost, name, id] or ['r']. */
  readonly p: readonly unknown[];
}

export function encodeSpendCursor(scope: CursorScope, position: SpendPosition): string {
  const body: CursorBody = {
    v: 1,
    by: scope.by,
    since: scope.since,
    until: scope.until,
    key: scope.keyId ?? null,
    tenant: scope.tenantId ?? null,
    p: 'rest' in position ? ['r'] : ['a', position.after.cost, position.after.name, position.after.id],
  };
  return Buffer.from(JSON.stringify(body), 'utf8').toString('base64url');
}

function badCursor(why: string): TollgateError {
  return new TollgateError('invalid_value', `cursor ${why}: pass the nextCursor of the previous page of the same report unchanged.`, { param: 'cursor' });
}

/**
 * The position a cursor holds, checked against the report asked for; `until`
 * comes from the cursor when the request leaves it out (a report of "until
 * today" keeps its last day across midnight). Throws 400 `invalid_value`.
 */
export function decodeSpendCursor(
  cursor: string,
  asked: Omit<CursorScope, 'until'> & { readonly until: string | undefined },
): { position: SpendPosition; until: string } {
  if (cursor.length > 2048 || !/^[A-Za-z0-9_-]+$/.test(cursor)) throw badCursor('is not one Tollgate gave');
  let body: CursorBody;
  try {
    body = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as CursorBody;
  } catch {
    throw badCursor('is not one Tollgate gave');
  }
  if (body === null || typeof body !== 'object' || body.v !== 1 || !Array.isArray(body.p) || typeof body.until !== 'string')
    throw badCursor('is not one Tollgate gave');
  if (body.by !== asked.by || body.since !== asked.since || body.key !== (asked.keyId ?? null) || body.tenant !== (asked.tenantId ?? null))
    throw badCursor('belongs to another report (by, since, key or tenant differ)');
  if (asked.until !== undefined && asked.until !== body.until) throw badCursor('belongs to another report (until differs)');
  const [kind, cost, name, id] = body.p;
  if (kind === 'r' && body.p.length === 1) return { position: { rest: true }, until: body.until };
  if (kind === 'a' && Number.isSafeInteger(cost) && typeof name === 'string' && typeof id === 'string')
    return { position: { after: { cost: cost as number, name, id } }, until: body.until };
  throw badCursor('is not one Tollgate gave');
}

/** A page size from the request: a whole number from 1 to {@link MAX_SPEND_PAGE_ROWS}; 400 otherwise. */
export function parseSpendLimit(text: string | undefined): number {
  if (text === undefined || text === '') return SPEND_PAGE_ROWS;
  const limit = Number(text);
  if (!Number.isSafeInteger(limit) || limit < 1 || limit > MAX_SPEND_PAGE_ROWS)
    throw new TollgateError('invalid_value', `limit must be a whole number from 1 to ${MAX_SPEND_PAGE_ROWS}`, { param: 'limit' });
  return limit;
}
