/**
 * What every page's view model needs: the reads, the clock, the limiter's
 * live view, and a few texts shared by the pages. A view model holds raw
 * numbers (for API users and tests) next to the text people read; the
 * server renders a page from it and the browser polls the same view model
 * as JSON and binds it into the same markup, so the two never differ.
 */
import type { SpendTotals } from '../storage/spend-reads.js';
import { count, timestamp } from './format.js';
import type { DashboardReads } from '../storage/dashboard-reads.js';

/**
 * Live state of one of a key's buckets, from the limiter. Amounts are in
 * bucket units (requests, tokens, or integer micro-USD for `usd`); an entry
 * whose `limitName` matches one of the key's limits is shown on that limit's
 * row, others (tenant, global) get rows of their own.
 */
export interface LimitSnapshotEntry {
  readonly limitName: string;
  readonly remaining: number;
  readonly burst: number;
  readonly unit: string;
}

/** The limiter's view of a key's buckets right now (absent: "not available"). */
export type LimitSnapshot = (keyId: string) => ReadonlyArray<LimitSnapshotEntry>;

/** What the views need besides the reads. */
export interface ViewContext {
  /** SQLite's (one host) or PostgreSQL's (replicas). */
  readonly reads: DashboardReads;
  readonly now: number;
  readonly limitSnapshot?: LimitSnapshot | undefined;
  /** Set when a tenant's read-only session is looking: pages say so and leave out what is not the tenant's. */
  readonly tenant?: { readonly id: string; readonly name: string } | undefined;
}

/** The link to a key's page. */
export function keyHref(id: string): string {
  return `/dashboard/keys/${encodeURIComponent(id)}`;
}

/** Tokens in and out. */
export function tokensOf(totals: SpendTotals): number {
  return totals.promptTokens + totals.completionTokens;
}

/** The "in flight" line under today's spend. */
export function inFlightText(pending: number): string {
  if (pending === 0) return 'no requests in flight';
  return pending === 1 ? '1 request in flight, at its estimate' : `${count(pending)} requests in flight, at their estimate`;
}

/** The "updated HH:MM:SS UTC" line of a page. */
export function updatedText(now: number): string {
  return `updated ${timestamp(now).slice(11)}`;
}
