/** Output for people: aligned tables, dollars, dates, counts. */

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
export { formatMicrosShort as usd } from '../domain/money.js';

export function count(n: number): string {
  return n.toLocaleString('en-US');
}

/** `2026-11-21 08:31 UTC`, or `-`. */
export function when(ms: number | null | undefined): string {
  if (ms === null || ms === undefined) return '-';
  return `${new Date(ms).toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}

export { describeBudget, describeLimits } from '../domain/policy-options.js';
