/**
 * A key's lists as pages of JSON (GET /admin/api/dashboard/keys/:id/users,
 * /tags, /sessions and /requests): its end users, tags and agent sessions
 * (with `firstAt` and `lastAt`) since a day (the most spent
 * first), and its ledger rows (newest first; `status=429` for its 429s). Each
 * answers at most `limit` rows (default 50, at most 500) with `hasMore` and a
 * `nextCursor`; the key page shows the first few of each.
 */
import { TollgateError } from '../domain/errors.js';
import { monthStartOf, calendarDay } from '../domain/calendar.js';
import { parseSince } from '../reports/spend.js';
import { parseListLimit } from '../storage/request-cursor.js';
import { requestItem, type RequestItem } from './request-list.js';
import type { Page, TopRow } from '../storage/dashboard-reads.js';
import type { ViewContext } from './view-context.js';

export type KeyList = 'users' | 'tags' | 'sessions' | 'requests';

/** A page of a key's list, as the JSON answers it. */
export interface KeyListPage<T> {
  readonly data: readonly T[];
  readonly hasMore: boolean;
  readonly nextCursor: string | null;
}

type Query = Readonly<Record<string, string | undefined>>;

function answer<T, U>(page: Page<T>, map: (row: T) => U): KeyListPage<U> {
  return { data: page.rows.map(map), hasMore: page.hasMore, nextCursor: page.nextCursor };
}

/** One page of a key's list, or undefined when the viewer has no such key (404). */
export async function readKeyList(ctx: ViewContext, keyId: string, list: KeyList, query: Query): Promise<KeyListPage<TopRow | RequestItem> | undefined> {
  const { reads, now } = ctx;
  if (!(await reads.directory()).keysById.has(keyId)) return undefined;
  const limit = parseListLimit(query.limit);
  const cursor = query.cursor === undefined || query.cursor === '' ? undefined : query.cursor;
  if (list === 'requests') {
    const status = query.status;
    if (status !== undefined && status !== '429')
      throw new TollgateError('invalid_value', 'status must be 429 (or left out for every row)', { param: 'status' });
    const page = status === '429' ? await reads.recent429s(keyId, limit, cursor) : await reads.latestRequests(keyId, limit, cursor);
    return answer(page, (row) => requestItem(row, now));
  }
  let since: string;
  try {
    since = query.since === undefined ? monthStartOf(calendarDay(now)) : parseSince(query.since, now);
  } catch (error) {
    throw new TollgateError('invalid_value', (error as Error).message, { param: 'since' });
  }
  const by = list === 'users' ? 'user' : list === 'tags' ? 'tag' : 'session';
  return answer(await reads.keyTop(keyId, by, since, now, limit, cursor), (row) => row);
}
