/**
 * Money is integer micro-USD everywhere (ledger, buckets of unit `usd`,
 * budgets, the API). This module is the one place that converts between
 * micro-USD and the dollars people read and write. Pure, no floats on the
 * way in.
 */

export const MICROS_PER_USD = 1_000_000;

/**
 * A decimal USD amount → integer micro-USD without floating-point arithmetic,
 * from the number's shortest decimal form (what the author wrote: 2.5 → "2.5";
 * exponents allowed). Null when it is not a plain non-negative amount or has
 * more than 6 decimals.
 */
export function usdToMicros(value: number | string): number | null {
  let text = typeof value === 'number' ? String(value) : value.trim();
  const exponent = /^(\d+(?:\.\d+)?)e([+-]?\d+)$/i.exec(text);
  if (exponent?.[1] && exponent[2]) {
    const [intPart = '', fracPart = ''] = exponent[1].split('.');
    const digits = intPart + fracPart;
    const point = intPart.length + Number(exponent[2]);
    if (point <= 0) text = `0.${'0'.repeat(-point)}${digits}`;
    else if (point >= digits.length) text = digits + '0'.repeat(point - digits.length);
    else text = `${digits.slice(0, point)}.${digits.slice(point)}`;
  }
  const match = /^(\d+)(?:\.(\d+))?$/.exec(text);
  if (!match?.[1]) return null;
  const fraction = (match[2] ?? '').replace(/0+$/, '');
  if (fraction.length > 6) return null;
  return Number(match[1]) * MICROS_PER_USD + Number(fraction.padEnd(6, '0'));
}

/** Micro-USD as a float number of dollars, for Prometheus counters only (never stored). */
export function microsToUsd(micros: number): number {
  return micros / MICROS_PER_USD;
}

/** Exact dollars with 6 decimals ("12.500000"), for headers and machine-read text. */
export function formatMicrosFixed(micros: number): string {
  const sign = micros < 0 ? '-' : '';
  const abs = Math.abs(micros);
  return `${sign}${Math.floor(abs / MICROS_PER_USD)}.${String(abs % MICROS_PER_USD).padStart(6, '0')}`;
}

/** Exact dollars for messages: "$12.50", "$0.000018" (no precision lost). */
export function formatMicrosExact(micros: number): string {
  const sign = micros < 0 ? '-' : '';
  const abs = Math.abs(micros);
  const whole = Math.floor(abs / MICROS_PER_USD);
  const frac = String(abs % MICROS_PER_USD)
    .padStart(6, '0')
    .replace(/0+$/, '')
    .padEnd(2, '0');
  return `${sign}$${whole}.${frac}`;
}

/** Dollars for tables: cents with thousands separators, or 4 significant digits under a cent ($0.000018). */
export function formatMicrosShort(micros: number): string {
  if (micros !== 0 && Math.abs(micros) < 10_000) {
    const dollars = Math.abs(micros) / MICROS_PER_USD;
    const digits = Math.max(0, 3 - Math.floor(Math.log10(dollars)));
    const text = dollars.toFixed(Math.min(digits, 6)).replace(/0+$/, '').replace(/\.$/, '');
    return `${micros < 0 ? '-' : ''}$${text}`;
  }
  const cents = Math.round(micros / 10_000);
  const sign = cents < 0 ? '-' : '';
  const abs = Math.abs(cents);
  return `${sign}$${Math.floor(abs / 100).toLocaleString('en-US')}.${String(abs % 100).padStart(2, '0')}`;
}

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
