/** The keys table's query string: filters, sort and page, read and written. */
import { TollgateError } from '../domain/errors.js';

/** Columns the keys table sorts by. */
const SORT_KEYS = ['name', 'tenant', 'status', 'today', 'month', 'requests', 'budget', 'last_used'] as const;
export type SortKey = (typeof SORT_KEYS)[number];
/** Statuses the keys table filters by. */
const STATUS_FILTERS = ['active', 'suspended', 'expired', 'revoked'] as const;
type StatusFilter = (typeof STATUS_FILTERS)[number];
/** Keys per page of the keys table. */
export const PAGE_SIZE = 50;

/** The keys table's filters, sort and page (normalised). */
export interface KeysQuery {
  /** A tenant id, `-` for keys without a tenant, or absent for all. */
  readonly tenant: string | undefined;
  readonly status: StatusFilter | undefined;
  /** Case-insensitive text in the name or prefix. */
  readonly q: string | undefined;
  readonly sort: SortKey;
  readonly dir: 'asc' | 'desc';
  readonly page: number;
}

type QueryInput = Readonly<Record<string, string | undefined>>;

/**
 * Reads the keys table's query string. Pages fall back to defaults on a bad
 * value (`strict: false`); the JSON API says what is wrong (`strict: true`).
 */
export function parseKeysQuery(input: QueryInput, strict: boolean): KeysQuery {
  const bad = (param: string, message: string): undefined => {
    if (strict) throw new TollgateError('invalid_value', message, { param });
    return undefined;
  };
  const pick = <T extends string>(param: string, allowed: readonly T[]): T | undefined => {
    const value = input[param];
    if (value === undefined || value === '') return undefined;
    return (allowed as readonly string[]).includes(value) ? (value as T) : bad(param, `${param} must be one of ${allowed.join(', ')}`);
  };
  const sort = pick('sort', SORT_KEYS) ?? 'month';
  const defaultDir = sort === 'name' || sort === 'tenant' || sort === 'status' ? 'asc' : 'desc';
  const dir = pick('dir', ['asc', 'desc'] as const) ?? defaultDir;
  const pageText = input.page;
  let page = 1;
  if (pageText !== undefined && pageText !== '') {
    const parsed = Number(pageText);
    if (Number.isSafeInteger(parsed) && parsed >= 1) page = parsed;
    else bad('page', 'page must be a whole number from 1');
  }
  const q = input.q?.trim().slice(0, 100);
  const tenant = input.tenant === undefined || input.tenant === '' ? undefined : input.tenant;
  return { tenant, status: pick('status', STATUS_FILTERS), q: q === undefined || q === '' ? undefined : q, sort, dir, page };
}

/** The query string for a keys-table link, leaving out defaults. */
export function keysQueryString(query: KeysQuery, change: Partial<KeysQuery> = {}): string {
  const next = { ...query, ...change };
  const params = new URLSearchParams();
  if (next.tenant !== undefined) params.set('tenant', next.tenant);
  if (next.status !== undefined) params.set('status', next.status);
  if (next.q !== undefined) params.set('q', next.q);
  if (next.sort !== 'month') params.set('sort', next.sort);
  const defaultDir = next.sort === 'name' || next.sort === 'tenant' || next.sort === 'status' ? 'asc' : 'desc';
  if (next.dir !== defaultDir) params.set('dir', next.dir);
  if (next.page !== 1) params.set('page', String(next.page));
  const text = params.toString();
  return text === '' ? '' : `?${text}`;
}
