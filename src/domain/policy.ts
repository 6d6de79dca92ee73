/**
 * A key's (or tenant's, or the global) policy: the limits its buckets enforce
 * and its budget. Pure data and parsing; no I/O.
 *
 * Amounts are kept in *bucket units*: requests, tokens, or integer micro-USD
 * for `usd` limits and budgets. The CLI and the dashboard convert to dollars
 * for people; nothing else ever sees a float dollar. The types are derived
 * from the zod schemas that read stored and admin-API policies.
 */
import { z } from 'zod';
import { formatMicrosExact } from './money.js';

const LIMIT_UNITS = ['requests', 'tokens', 'usd'] as const;
export type LimitUnit = (typeof LIMIT_UNITS)[number];

const LIMIT_PERIODS = ['s', 'min', 'h', 'day'] as const;
type LimitPeriod = (typeof LIMIT_PERIODS)[number];

export const PERIOD_SECONDS: Readonly<Record<LimitPeriod, number>> = {
  s: 1,
  min: 60,
  h: 3600,
  day: 86_400,
};

import { BUDGET_PERIODS } from './calendar.js';

export { BUDGET_PERIODS, type BudgetPeriod } from './calendar.js';

const costSourceSchema = z.union([
  z.object({ kind: z.literal('fixed') }).readonly(),
  z.object({ kind: z.enum(['header', 'query']), name: z.string().min(1), default: z.number().positive() }).readonly(),
]);

/** One limit, as stored and as the admin API takes it. */
export const limitSchema = z
  .object({
    /** Stable name, shown in 429s and headers; defaults to `<unit>-per-<period>`. */
    name: z.string().regex(/^[A-Za-z0-9_.-]{1,64}$/),
    unit: z.enum(LIMIT_UNITS),
    /** Refill per period, in bucket units (micro-USD for `usd`). */
    amount: z.number().positive(),
    period: z.enum(LIMIT_PERIODS),
    /** Capacity in bucket units; defaults to `amount`. */
    burst: z.number().positive(),
    /** Start an unseen bucket empty instead of full (abuse-prone keys). */
    startEmpty: z.boolean().optional(),
    /** `tokens` only: multiply a request's tokens by the weight of the first matching model prefix. */
    modelWeights: z.record(z.string(), z.number().positive()).readonly().optional(),
    /** `requests` only: where the request's cost comes from (a header or query parameter); fixed 1 by default. */
    costSource: costSourceSchema.optional(),
  })
  .readonly();

const budgetSchema = z
  .object({
    /** Cap in integer micro-USD for the period. */
    microUsd: z.number().int().positive(),
    /** Calendar day, ISO week or calendar month in the deployment's time zone, or the key's lifetime. */
    period: z.enum(BUDGET_PERIODS),
  })
  .readonly();

/**
 * Tags: letters, digits and `. _ : / @ + = -`, starting with a letter or digit,
 * at most 64 characters (src/endusers/attribution.ts reads them from requests).
 */
export const TAG_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:/@+=-]{0,63}$/;

/**
 * What applies to every end user of a key on its own (src/endusers): each
 * user has its own buckets of these limits and its own budgets, with their
 * own periods.
 */
const endUserPolicySchema = z
  .object({
    limits: z.array(limitSchema).readonly().default([]),
    budgets: z.array(budgetSchema).readonly().optional(),
  })
  .readonly();

/** A budget on the requests of a key that carry one tag. */
const tagBudgetSchema = z
  .object({
    tag: z.string().regex(TAG_PATTERN),
    microUsd: z.number().int().positive(),
    period: z.enum(BUDGET_PERIODS),
  })
  .readonly();

/** A key's, tenant's or the global policy: limits, budget, allowed models. */
export const policySchema = z
  .object({
    limits: z.array(limitSchema).readonly().default([]),
    budget: budgetSchema.optional(),
    /** More budgets, one per period (a day cap and a month cap at once); with `budget`, every one applies. */
    budgets: z.array(budgetSchema).readonly().optional(),
    /** Allowed model names (exact, or a prefix ending in `*`); absent = all models. */
    models: z.array(z.string().min(1)).readonly().optional(),
    /** Requests of this key (or tenant) in flight at once; absent = the proxy's default (keys) or none (tenants). */
    maxInFlight: z.number().int().positive().optional(),
    /** Keys only: limits and budgets each end user of the key gets for itself. */
    endUser: endUserPolicySchema.optional(),
    /**
     * Keys and tenants: limits and budgets each agent session gets for itself (src/endusers/session-checks.ts;
     * a tenant's apply to every session of each of its keys).
     */
    session: endUserPolicySchema.optional(),
    /**
     * Keys only: the runaway stop's rule for this key over the config's `alerts.runaway`
     * (src/alerts/runaway-stop.ts): its own multiple of the usual rate, its own USD-per-hour
     * ceiling (µUSD), or `off` — never paused.
     */
    runaway: z
      .strictObject({
        factor: z.number().min(1).max(1000).optional(),
        microUsdPerHour: z.number().int().positive().optional(),
        off: z.literal(true).optional(),
      })
      .readonly()
      .optional(),
    /** Keys only: budgets per tag. */
    tagBudgets: z.array(tagBudgetSchema).readonly().optional(),
    /**
     * Budget-aware downgrade (keys): once any budget of the key or its tenant has spent `atPercent`%
     * of its cap this period, a request for a model in `models` goes to the model it names.
     */
    downgrade: z
      .object({
        atPercent: z.number().gt(0).max(100),
        models: z.record(z.string().min(1).max(200), z.string().min(1).max(200)),
      })
      .readonly()
      .optional(),
  })
  .readonly();

export type EndUserPolicy = z.output<typeof endUserPolicySchema>;
/** What every agent session gets on its own: the same shape as an end user's. */
export type SessionPolicy = EndUserPolicy;
export type TagBudget = z.output<typeof tagBudgetSchema>;
export { endUserPolicySchema, tagBudgetSchema };

export type LimitSpec = z.output<typeof limitSchema>;
export type Budget = z.output<typeof budgetSchema>;
export type Policy = z.output<typeof policySchema>;

/** Every budget of a policy (`budget` and `budgets`), one per period. */
export function budgetsOf(policy: Policy | undefined): Budget[] {
  if (policy === undefined) return [];
  return policy.budget === undefined ? [...(policy.budgets ?? [])] : [policy.budget, ...(policy.budgets ?? [])];
}

export class PolicyError extends Error {
  override readonly name = 'PolicyError';
}

/** Refill rate in bucket units per second. */
export function ratePerSecond(limit: Pick<LimitSpec, 'amount' | 'period'>): number {
  return limit.amount / PERIOD_SECONDS[limit.period];
}

/** Dollars as typed by a person ("12.5", "0.000001") → integer micro-USD, exactly. */
export function parseUsdToMicros(text: string): number {
  const trimmed = text.trim().replace(/^\$/, '');
  const match = /^(\d+)(?:\.(\d{0,6})(\d*))?$/.exec(trimmed);
  if (!match) throw new PolicyError(`"${text}" is not a dollar amount (expected e.g. 5 or 0.25)`);
  const [, whole = '0', frac = '', rest = ''] = match;
  if (/[1-9]/.test(rest)) {
    throw new PolicyError(`"${text}" has more precision than one micro-dollar (6 decimals)`);
  }
  const micros = Number(whole) * 1_000_000 + Number(frac.padEnd(6, '0'));
  if (!Number.isSafeInteger(micros)) throw new PolicyError(`"${text}" is too large`);
  return micros;
}

function parsePositive(text: string, what: string): number {
  const n = Number(text);
  if (text.trim() === '' || !Number.isFinite(n)) throw new PolicyError(`${what} "${text}" is not a number`);
  if (n <= 0) throw new PolicyError(`${what} must be greater than zero (got ${text})`);
  return n;
}

function parseAmount(unit: LimitUnit, text: string, what: string): number {
  if (unit === 'usd') {
    const micros = parseUsdToMicros(text);
    if (micros <= 0) throw new PolicyError(`${what} must be greater than zero (got ${text})`);
    return micros;
  }
  return parsePositive(text, what);
}

/**
 * Parses the CLI's limit syntax: `UNIT:AMOUNT/PERIOD[,burst=B][,name=N][,start=empty]`,
 * e.g. `tokens:40000/min,burst=60000` or `usd:5/day`. USD amounts are dollars.
 */
export function parseLimit(text: string): LimitSpec {
  const [head = '', ...options] = text.split(',').map((part) => part.trim());
  const match = /^([a-z]+):([^/]+)\/([a-z]+)$/.exec(head);
  if (!match) {
    throw new PolicyError(`limit "${text}" is not of the form UNIT:AMOUNT/PERIOD[,burst=B] (e.g. tokens:40000/min,burst=60000)`);
  }
  const [, unitText = '', amountText = '', periodText = ''] = match;
  if (!(LIMIT_UNITS as readonly string[]).includes(unitText)) {
    throw new PolicyError(`unknown limit unit "${unitText}" (expected one of ${LIMIT_UNITS.join(', ')})`);
  }
  const unit = unitText as LimitUnit;
  const period = normalizePeriod(periodText);
  const amount = parseAmount(unit, amountText, 'limit amount');
  let burst = amount;
  let name = `${unit}-per-${period}`;
  let startEmpty = false;
  for (const option of options) {
    const [optionKey = '', optionValue = ''] = option.split('=').map((part) => part.trim());
    switch (optionKey) {
      case 'burst':
        burst = parseAmount(unit, optionValue, 'burst');
        break;
      case 'name':
        if (!/^[A-Za-z0-9_.-]{1,64}$/.test(optionValue)) {
          throw new PolicyError(`limit name "${optionValue}" may only hold letters, digits, "_", "." and "-"`);
        }
        name = optionValue;
        break;
      case 'start':
        if (optionValue !== 'empty' && optionValue !== 'full') {
          throw new PolicyError(`start must be "empty" or "full" (got "${optionValue}")`);
        }
        startEmpty = optionValue === 'empty';
        break;
      default:
        throw new PolicyError(`unknown limit option "${optionKey}" in "${text}" (known: burst, name, start)`);
    }
  }
  const spec: LimitSpec = { name, unit, amount, period, burst, ...(startEmpty ? { startEmpty } : {}) };
  validateLimit(spec);
  return spec;
}

function normalizePeriod(text: string): LimitPeriod {
  switch (text) {
    case 's':
    case 'sec':
    case 'second':
      return 's';
    case 'm':
    case 'min':
    case 'minute':
      return 'min';
    case 'h':
    case 'hour':
      return 'h';
    case 'd':
    case 'day':
      return 'day';
    default:
      throw new PolicyError(`unknown period "${text}" (expected one of ${LIMIT_PERIODS.join(', ')})`);
  }
}

/**
 * Checks a limit on its own: positive finite rate and burst, and a burst that
 * holds at least one request (a `requests` limit whose burst is below its
 * smallest cost could never admit anything).
 */
function validateLimit(spec: LimitSpec): void {
  if (!(LIMIT_UNITS as readonly string[]).includes(spec.unit)) {
    throw new PolicyError(`unknown limit unit "${String(spec.unit)}"`);
  }
  if (!(LIMIT_PERIODS as readonly string[]).includes(spec.period)) {
    throw new PolicyError(`unknown limit period "${String(spec.period)}"`);
  }
  if (!(Number.isFinite(spec.amount) && spec.amount > 0)) {
    throw new PolicyError(`limit "${spec.name}": amount must be greater than zero`);
  }
  if (!(Number.isFinite(spec.burst) && spec.burst > 0)) {
    throw new PolicyError(`limit "${spec.name}": burst must be greater than zero`);
  }
  const smallestCost = spec.unit === 'requests' ? (spec.costSource?.kind === 'fixed' || !spec.costSource ? 1 : spec.costSource.default) : 0;
  if (spec.burst < smallestCost) {
    throw new PolicyError(`limit "${spec.name}": burst ${spec.burst} is below the cost of one request (${smallestCost}); no request could ever pass`);
  }
  if (spec.modelWeights) {
    for (const [model, weight] of Object.entries(spec.modelWeights)) {
      if (!(Number.isFinite(weight) && weight > 0)) {
        throw new PolicyError(`limit "${spec.name}": weight for "${model}" must be greater than zero`);
      }
    }
  }
}

/** Checks a whole policy: each limit, unique names, and the budget. */
export function validatePolicy(policy: Policy): void {
  const names = new Set<string>();
  for (const limit of policy.limits) {
    validateLimit(limit);
    if (names.has(limit.name)) {
      throw new PolicyError(`two limits are named "${limit.name}"; add ,name=… to tell them apart`);
    }
    names.add(limit.name);
  }
  if (policy.maxInFlight !== undefined && !(Number.isSafeInteger(policy.maxInFlight) && policy.maxInFlight > 0)) {
    throw new PolicyError('max in flight must be a whole number of requests greater than zero');
  }
  if (policy.downgrade !== undefined) {
    const { atPercent, models } = policy.downgrade;
    if (!(atPercent > 0 && atPercent <= 100)) throw new PolicyError('the downgrade threshold must be a percentage above 0 and at most 100');
    if (Object.keys(models).length === 0) throw new PolicyError('a downgrade needs at least one FROM=TO model pair');
    for (const [from, to] of Object.entries(models)) if (from === to) throw new PolicyError(`downgrade ${from}=${to} names the same model twice`);
  }
  validateBudgets([...(policy.budget ? [policy.budget] : []), ...(policy.budgets ?? [])], '');
  if (policy.endUser !== undefined) {
    const userNames = new Set<string>();
    for (const limit of policy.endUser.limits) {
      validateLimit(limit);
      if (userNames.has(limit.name)) throw new PolicyError(`two end-user limits are named "${limit.name}"; add ,name=… to tell them apart`);
      userNames.add(limit.name);
    }
    validateBudgets(policy.endUser.budgets ?? [], 'end-user ');
  }
  if (policy.session !== undefined) {
    const sessionNames = new Set<string>();
    for (const limit of policy.session.limits) {
      validateLimit(limit);
      if (sessionNames.has(limit.name)) throw new PolicyError(`two session limits are named "${limit.name}"; add ,name=… to tell them apart`);
      sessionNames.add(limit.name);
    }
    validateBudgets(policy.session.budgets ?? [], 'session ');
  }
  const byTag = new Map<string, Budget[]>();
  for (const { tag, microUsd, period } of policy.tagBudgets ?? []) {
    if (!TAG_PATTERN.test(tag)) throw new PolicyError(`tag "${tag}" may hold only letters, digits and . _ : / @ + = - (at most 64)`);
    byTag.set(tag, [...(byTag.get(tag) ?? []), { microUsd, period }]);
  }
  for (const [tag, budgets] of byTag) validateBudgets(budgets, `tag "${tag}" `);
}

/** Positive budgets in known periods, at most one per period. */
function validateBudgets(budgets: readonly Budget[], owner: string): void {
  const periods = new Set<string>();
  for (const budget of budgets) {
    if (!(Number.isSafeInteger(budget.microUsd) && budget.microUsd > 0)) {
      throw new PolicyError(`${owner}budget must be a positive amount of dollars`);
    }
    if (!(BUDGET_PERIODS as readonly string[]).includes(budget.period)) {
      throw new PolicyError(`unknown ${owner}budget period "${String(budget.period)}" (expected day, week, month or total)`);
    }
    if (periods.has(budget.period)) throw new PolicyError(`two ${owner}budgets per ${budget.period}; give each period one budget`);
    periods.add(budget.period);
  }
}

/** Human form of a limit, the inverse of {@link parseLimit}. */
export function formatLimit(spec: LimitSpec): string {
  const amount = (n: number) => (spec.unit === 'usd' ? formatMicrosExact(n).slice(1) : String(n));
  let text = `${spec.unit}:${amount(spec.amount)}/${spec.period}`;
  if (spec.burst !== spec.amount) text += `,burst=${amount(spec.burst)}`;
  if (spec.name !== `${spec.unit}-per-${spec.period}`) text += `,name=${spec.name}`;
  if (spec.startEmpty) text += ',start=empty';
  return text;
}
