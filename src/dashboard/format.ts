/**
 * Numbers for people, formatted once on the server: the pages and the JSON
 * they poll carry the same text, so the browser never formats money.
 */
import { formatMicrosShort as usd, usdTotal } from '../domain/money.js';

export { usd, usdTotal };

/** A whole number with thousands separators: 1,234,567. */
export function count(n: number): string {
  return Math.round(n).toLocaleString('en-US');
}

/** "42%", "<1%" for a sliver, "0%" for nothing; over 100% shown as it is. */
export function percent(fraction: number): string {
  if (!Number.isFinite(fraction) || fraction <= 0) return '0%';
  if (fraction < 0.01) return '<1%';
  return `${Math.floor(fraction * 100).toLocaleString('en-US')}%`;
}

/** "850 ms", "3.4 s", or "-" when unknown. */
export function duration(ms: number | null): string {
  if (ms === null) return '-';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  return `${(ms / 60_000).toFixed(1)} min`;
}

/** "just now", "12 s ago", "3 min ago", "5 h ago", "2 days ago"; "never" without a time. */
export function relativeTime(at: number | null, now: number): string {
  if (at === null) return 'never';
  const seconds = Math.max(0, Math.round((now - at) / 1000));
  if (seconds < 5) return 'just now';
  if (seconds < 60) return `${seconds} s ago`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes} min ago`;
  const hours = Math.floor(minutes / 60);
  if (hours < 48) return `${hours} h ago`;
  const days = Math.floor(hours / 24);
  return `${count(days)} days ago`;
}

/** "2026-11-21 08:31:05 UTC" (for tooltips and tables). */
export function timestamp(at: number | null): string {
  if (at === null) return '-';
  return `${new Date(at).toISOString().slice(0, 19).replace('T', ' ')} UTC`;
}
