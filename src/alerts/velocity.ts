/**
 * The spend-velocity check: is the last hour's spend more than k times the
 * trailing hourly average (a runaway agent loop)? Pure, integer math: the
 * factor is taken in hundredths and the comparison is done in BigInt,
 * `lastHour · hours · 100 > k·100 · trailing`.
 */

export interface VelocityInput {
  /** Spent in the hour being judged. */
  readonly lastHourMicros: number;
  /** Spent in the trailing hours before it. */
  readonly trailingMicros: number;
  /** How many hours `trailingMicros` covers (≥ 1). */
  readonly trailingHours: number;
  /** k: how many times the average counts as runaway (> 0, hundredths kept). */
  readonly factor: number;
  /** Below this, an hour never alerts (a new key's first cents are not a runaway). */
  readonly minimumMicros: number;
}

/** The trailing hourly average, micro-USD (rounded down). */
export function trailingAverage(input: Pick<VelocityInput, 'trailingMicros' | 'trailingHours'>): number {
  return Math.floor(Math.max(0, input.trailingMicros) / Math.max(1, Math.floor(input.trailingHours)));
}

/** True when the last hour is at least the minimum and more than k × the trailing average. */
export function velocityExceeded(input: VelocityInput): boolean {
  if (input.lastHourMicros <= 0 || input.lastHourMicros < input.minimumMicros) return false;
  const hours = BigInt(Math.max(1, Math.floor(input.trailingHours)));
  const factorHundredths = BigInt(Math.round(input.factor * 100));
  return BigInt(input.lastHourMicros) * hours * 100n > factorHundredths * BigInt(Math.max(0, input.trailingMicros));
}
