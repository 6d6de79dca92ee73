/**
 * The runaway stop's rule: is an owner spending, over the last few minutes,
 * faster than it may — more than `factor` × its usual hourly rate, or more
 * than an absolute USD per hour? Pure, integer math (BigInt), like
 * velocity.ts: a rate is micro-USD per hour, `spent · HOUR / windowMs`, and
 * each comparison is cross-multiplied so nothing is rounded.
 *
 * An owner throttled is released when the same window's rate is back under
 * the line that throttled it ({@link runawayVerdict} says `over: false`), or
 * by an operator (`tollgate keys resume`).
 */

const HOUR_MS = 3_600_000n;

export interface RunawayRule {
  /** How many times the usual hourly rate counts as runaway (hundredths kept); undefined: no relative rule. */
  readonly factor: number | undefined;
  /** An hourly rate that is runaway whatever the history (micro-USD per hour); undefined: no absolute rule. */
  readonly microUsdPerHour: number | undefined;
  /** Below this spend in the window nothing is runaway (a new key's first cents are not a loop). */
  readonly minimumMicros: number;
}

export interface RunawayInput {
  /** Spent in the window being judged (the last `windowMs`). */
  readonly windowMicros: number;
  readonly windowMs: number;
  /** Spent in the trailing time before the window. */
  readonly trailingMicros: number;
  readonly trailingMs: number;
}

export interface RunawayVerdict {
  /** The window's rate is over the rule. */
  readonly over: boolean;
  /** The window's rate, micro-USD per hour (rounded down). */
  readonly microUsdPerHour: number;
  /** The usual rate, micro-USD per hour (rounded down). */
  readonly usualMicroUsdPerHour: number;
}

/** Micro-USD per hour for `micros` spent over `ms`, rounded down. */
export function hourlyRate(micros: number, ms: number): number {
  return Number((BigInt(Math.max(0, Math.floor(micros))) * HOUR_MS) / BigInt(Math.max(1, Math.floor(ms))));
}

/**
 * A key's own rule over the configured one (its policy's `runaway`): its own
 * factor or ceiling replaces the configured one it names; `off` has neither,
 * so nothing is ever over it (and a pause it had is released).
 */
export function ruleForKey<R extends RunawayRule>(
  configured: R,
  own: { readonly factor?: number | undefined; readonly microUsdPerHour?: number | undefined; readonly off?: true | undefined } | undefined,
): R {
  if (own === undefined) return configured;
  if (own.off === true) return { ...configured, factor: undefined, microUsdPerHour: undefined };
  return { ...configured, factor: own.factor ?? configured.factor, microUsdPerHour: own.microUsdPerHour ?? configured.microUsdPerHour };
}

/**
 * Over when the window spent at least the minimum and its rate is more than
 * `factor` × the trailing rate, or more than the absolute rate. A trailing
 * rate of zero (no history) makes any spend over the minimum a multiple of it:
 * the minimum is what keeps a new key's first requests free.
 */
export function runawayVerdict(rule: RunawayRule, input: RunawayInput): RunawayVerdict {
  const spent = BigInt(Math.max(0, Math.floor(input.windowMicros)));
  const windowMs = BigInt(Math.max(1, Math.floor(input.windowMs)));
  const trailing = BigInt(Math.max(0, Math.floor(input.trailingMicros)));
  const trailingMs = BigInt(Math.max(1, Math.floor(input.trailingMs)));
  const verdict = { microUsdPerHour: hourlyRate(input.windowMicros, input.windowMs), usualMicroUsdPerHour: hourlyRate(input.trailingMicros, input.trailingMs) };
  if (spent === 0n || spent < BigInt(Math.max(0, rule.minimumMicros))) return { over: false, ...verdict };
  // spent / windowMs > k · trailing / trailingMs, in hundredths of k.
  const relative = rule.factor !== undefined && spent * trailingMs * 100n > BigInt(Math.round(rule.factor * 100)) * trailing * windowMs;
  // spent · HOUR / windowMs > ceiling.
  const absolute = rule.microUsdPerHour !== undefined && spent * HOUR_MS > BigInt(Math.floor(rule.microUsdPerHour)) * windowMs;
  return { over: relative || absolute, ...verdict };
}
