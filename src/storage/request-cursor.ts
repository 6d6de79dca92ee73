/**
 * Pages of a key's ledger rows on the dashboard (its latest requests, its
 * recent 429s): newest first, and a keyset cursor holding the last row's time
 * and request id, so a page costs the same wherever it starts. Pure.
 */
import { TollgateError } from '../domain/errors.js';

/** Rows per page of a dashboard list when none is asked for, and the most a page may hold. */
const LIST_PAGE_ROWS = 50;
const MAX_LIST_PAGE_ROWS = 500;

/** Which list of which key a cursor belongs to. */
interface ListScope {
  readonly keyId: string;
  readonly list: 'requests' | '429';
}

/** Where the next page starts: after this row (older ones follow). */
export interface RequestPosition {
  readonly createdAt: number;
  readonly requestId: string;
}

export function encodeRequestCursor(scope: ListScope, after: RequestPosition): string {
  return Buffer.from(JSON.stringify({ v: 1, k: scope.keyId, l: scope.list, c: after.createdAt, r: after.requestId }), 'utf8').toString('base64url');
}

/** The position a cursor holds, checked against the list asked for; 400 `invalid_value` otherwise. */
export function decodeRequestCursor(cursor: string, scope: ListScope): RequestPosition {
  const bad = () =>
    new TollgateError('invalid_value', 'cursor is not one this list gave: pass the nextCursor of its previous page unchanged.', { param: 'cursor' });
  if (cursor.length > 1024 || !/^[A-Za-z0-9_-]+$/.test(cursor)) throw bad();
  let body: { v?: unknown; k?: unknown; l?: unknown; c?: unknown; r?: unknown };
  try {
    body = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as typeof body;
  } catch {
    throw bad();
  }
  if (body === null || typeof body !== 'object' || body.v !== 1 || body.k !== scope.keyId || body.l !== scope.list) throw bad();
  if (!Number.isSafeInteger(body.c) || typeof body.r !== 'string') throw bad();
  return { createdAt: body.c as number, requestId: body.r };
}

/** A page size from the request: a whole number from 1 to {@link MAX_LIST_PAGE_ROWS}; 400 otherwise. */
export function parseListLimit(text: string | undefined): number {
  if (text === undefined || text === '') return LIST_PAGE_ROWS;
  const limit = Number(text);
  if (!Number.isSafeInteger(limit) || limit < 1 || limit > MAX_LIST_PAGE_ROWS)
    throw new TollgateError('invalid_value', `limit must be a whole number from 1 to ${MAX_LIST_PAGE_ROWS}`, { param: 'limit' });
  return limit;
}
