/** Output for people: aligned tables, dollars, dates, counts. */
import { budgetsOf, formatLimit, type Policy } from '../limits/algorithm/policy.js';
import { formatMicrosExact, formatMicrosShort } from '../money.js';

/**
 * A cell as a terminal should show it: control characters (C0, DEL, C1 —
 * escape sequences, carriage returns, newlines) become U+FFFD. Cells hold
 * what tenants chose (model names in the ledger, key and tenant names), and
 * an operator's terminal must not run their escape sequences or have a row
 * rewritten by a carriage return.
 */
export function printable(text: string): string {
  // eslint-disable-next-line no-control-regex -- matching control characters is the point
  return text.replace(/[\u0000-\u001f\u007f-\u009f]/g, '\ufffd');
}

/** Columns padded to their widest cell; numbers (right-aligned) are marked by `align`. */
export function table(headers: readonly string[], cellRows: ReadonlyArray<readonly string[]>, align: ReadonlyArray<'left' | 'right'> = []): string {
  const rows = cellRows.map((row) => row.map(printable));
  const widths = headers.map((header, i) => Math.max(header.length, ...rows.map((row) => (row[i] ?? '').length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((cell, i) => (align[i] === 'right' ? cell.padStart(widths[i]!) : cell.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [line(headers), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n');
}

/** Dollars for tables (the dashboard shares it). */
export { formatMicrosShort as usd } from '../money.js';

/** Decimals `usd` shows for an amount: 2 from a cent up, up to 6 below. */
function usdDecimals(micros: number): number {
  const text = formatMicrosShort(micros);
  const dot = text.indexOf('.');
  return dot === -1 ? 0 : text.length - dot - 1;
}

/**
 * A total shown beside `usd` rows, at the finest precision any of them (or the total) shows: rows of
 * $0.0085 and $0.0265 total $0.035, not $0.04 — a total rounded coarser than its rows reads as a
 * sum that does not add up. Trailing zeros past the cents are dropped, as `usd` drops them.
 */
export function usdTotal(totalMicros: number, rowMicros: Iterable<number>): string {
  let decimals = Math.max(2, usdDecimals(totalMicros));
  for (const micros of rowMicros) decimals = Math.max(decimals, usdDecimals(micros));
  if (decimals === 2) return formatMicrosShort(totalMicros);
  const unit = 10 ** (6 - decimals);
  const scaled = Math.round(Math.abs(totalMicros) / unit);
  const whole = Math.floor(scaled / 10 ** decimals);
  const fraction = String(scaled % 10 ** decimals)
    .padStart(decimals, '0')
    .replace(/0+$/, '')
    .padEnd(2, '0');
  return `${totalMicros < 0 ? '-' : ''}$${whole.toLocaleString('en-US')}.${fraction}`;
}

export function count(n: number): string {
  return n.toLocaleString('en-US');
}

/** `2026-11-21 08:31 UTC`, or `-`. */
export function when(ms: number | null | undefined): string {
  if (ms === null || ms === undefined) return '-';
  return `${new Date(ms).toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}

export function describeLimits(policy: Policy): string {
  return policy.limits.length === 0 ? 'none' : policy.limits.map(formatLimit).join(', ');
}

export function describeBudget(policy: Policy): string {
  const budgets = budgetsOf(policy);
  if (budgets.length === 0) return 'none';
  return budgets.map((budget) => `${formatMicrosExact(budget.microUsd)} ${budget.period === 'total' ? 'in total' : `per ${budget.period}`}`).join(', ');
}
