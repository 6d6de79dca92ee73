/**
 * The command line's policy options (`tollgate keys|tenants create|update`:
 * limits, budgets, models, in flight, per end user, per session and per tag),
 * parsed into the policy's parts, and a policy described in the same words.
 * Pure; errors are PolicyErrors with the option's name (exit code 2). The
 * dashboard's policy form reads its fields through the same parsers.
 */
import {
  budgetsOf,
  BUDGET_PERIODS,
  formatLimit,
  parseLimit,
  parseUsdToMicros,
  PolicyError,
  TAG_PATTERN,
  type Budget,
  type BudgetPeriod,
  type EndUserPolicy,
  type LimitSpec,
  type Policy,
  type SessionPolicy,
  type TagBudget,
} from './policy.js';
import { formatMicrosExact } from './money.js';

export interface EndUserOptions {
  userLimit?: string[];
  userRpm?: string;
  userTpm?: string;
  userBudgetUsd?: string;
  userBudgetPeriod?: string;
  tagBudget?: string[];
  /** `--no-user-policy` (update): remove the per-user limits and budgets. */
  userPolicy?: boolean;
  /** `--no-tag-budgets` (update). */
  tagBudgets?: boolean;
}

export interface SessionOptions {
  sessionLimit?: string[];
  sessionBudgetUsd?: string;
  sessionBudgetPeriod?: string;
  /** `--no-session-policy` (update): remove the per-session limits and budgets. */
  sessionPolicy?: boolean;
}

/**
 * The key's or tenant's new `session` policy, as {@link endUserPolicyFrom}:
 * undefined keeps the current one, null clears it. A session's budget is for
 * its whole life unless a period is given (a session is one agent's run).
 */
export function sessionPolicyFrom(options: SessionOptions, current?: SessionPolicy): SessionPolicy | null | undefined {
  const texts = options.sessionLimit ?? [];
  const budgetGiven = options.sessionBudgetUsd !== undefined || options.sessionBudgetPeriod !== undefined;
  if (options.sessionPolicy === false) {
    if (texts.length > 0 || budgetGiven) throw new PolicyError('--no-session-policy cannot be combined with other --session-… options');
    return null;
  }
  if (texts.length === 0 && !budgetGiven) return undefined;
  const limits = texts.length > 0 ? texts.map(parseLimit) : (current?.limits ?? []);
  const budgets = budgetGiven
    ? [budgetFromOptions('session', options.sessionBudgetUsd, options.sessionBudgetPeriod, current?.budgets?.[0], 'total')]
    : (current?.budgets ?? []);
  return { limits, ...(budgets.length > 0 ? { budgets } : {}) };
}

/**
 * The key's new `endUser` policy from the options: undefined when no option
 * names it (keep the current one), null to clear it. Limits and budgets given
 * replace the current ones of their kind; the others are kept.
 */
export function endUserPolicyFrom(options: EndUserOptions, current?: EndUserPolicy): EndUserPolicy | null | undefined {
  const texts = [...(options.userLimit ?? [])];
  if (options.userRpm !== undefined) texts.push(`requests:${options.userRpm}/min`);
  if (options.userTpm !== undefined) texts.push(`tokens:${options.userTpm}/min`);
  const budgetGiven = options.userBudgetUsd !== undefined || options.userBudgetPeriod !== undefined;
  if (options.userPolicy === false) {
    if (texts.length > 0 || budgetGiven) throw new PolicyError('--no-user-policy cannot be combined with other --user-… options');
    return null;
  }
  if (texts.length === 0 && !budgetGiven) return undefined;
  const limits = texts.length > 0 ? texts.map(parseLimit) : (current?.limits ?? []);
  const budgets = budgetGiven
    ? [budgetFromOptions('user', options.userBudgetUsd, options.userBudgetPeriod, current?.budgets?.[0], 'month')]
    : (current?.budgets ?? []);
  return { limits, ...(budgets.length > 0 ? { budgets } : {}) };
}

/** `--<who>-budget-usd` and `--<who>-budget-period` into one budget, the current one filling what is not given. */
function budgetFromOptions(
  who: 'user' | 'session',
  usdText: string | undefined,
  periodText: string | undefined,
  current: Budget | undefined,
  defaultPeriod: BudgetPeriod,
): Budget {
  if (periodText !== undefined && !(BUDGET_PERIODS as readonly string[]).includes(periodText)) {
    throw new PolicyError(`--${who}-budget-period must be one of ${BUDGET_PERIODS.join(', ')} (got "${periodText}")`);
  }
  if (usdText === undefined) {
    const owner = who === 'user' ? 'end-user' : 'session';
    if (current === undefined) throw new PolicyError(`--${who}-budget-period needs --${who}-budget-usd (there is no ${owner} budget yet)`);
    return { microUsd: current.microUsd, period: periodText as BudgetPeriod };
  }
  const microUsd = parseUsdToMicros(usdText);
  if (microUsd <= 0) throw new PolicyError(`--${who}-budget-usd must be greater than zero`);
  return { microUsd, period: (periodText ?? current?.period ?? defaultPeriod) as BudgetPeriod };
}

/** Repeated `--tag-budget TAG=DOLLARS/PERIOD`: undefined when none was given, null for `--no-tag-budgets`. */
export function tagBudgetsFrom(options: EndUserOptions): TagBudget[] | null | undefined {
  if (options.tagBudgets === false) {
    if (options.tagBudget !== undefined) throw new PolicyError('--no-tag-budgets cannot be combined with --tag-budget');
    return null;
  }
  if (options.tagBudget === undefined) return undefined;
  return options.tagBudget.map(parseTagBudget);
}

/** `search=5/day` → a budget of $5 a day on the requests tagged `search`. */
export function parseTagBudget(text: string): TagBudget {
  const match = /^([^=]+)=([^/]+)\/([a-z]+)$/.exec(text.trim());
  if (!match) throw new PolicyError(`--tag-budget "${text}" is not TAG=DOLLARS/PERIOD (e.g. search=5/day)`);
  const [, tag = '', usd = '', period = ''] = match;
  if (!TAG_PATTERN.test(tag.trim())) throw new PolicyError(`--tag-budget: tag "${tag}" may hold only letters, digits and . _ : / @ + = - (at most 64)`);
  if (!(BUDGET_PERIODS as readonly string[]).includes(period)) {
    throw new PolicyError(`--tag-budget "${text}": PERIOD must be one of ${BUDGET_PERIODS.join(', ')}`);
  }
  const microUsd = parseUsdToMicros(usd);
  if (microUsd <= 0) throw new PolicyError('--tag-budget must be greater than zero');
  return { tag: tag.trim(), microUsd, period: period as BudgetPeriod };
}

/** Lines for `keys show`: what each end user gets, and the tag budgets; none when the key has neither. */
export function describeAttributedPolicy(policy: Policy): Array<[string, string]> {
  const rows: Array<[string, string]> = [];
  const endUser = policy.endUser;
  if (endUser !== undefined) {
    const parts = [...endUser.limits.map(formatLimit), ...(endUser.budgets ?? []).map((b) => `${formatMicrosExact(b.microUsd)}/${b.period}`)];
    rows.push(['per user', parts.join(', ')]);
  }
  const session = policy.session;
  if (session !== undefined) {
    const parts = [...session.limits.map(formatLimit), ...(session.budgets ?? []).map((b) => `${formatMicrosExact(b.microUsd)}/${b.period}`)];
    rows.push(['per session', parts.join(', ')]);
  }
  if ((policy.tagBudgets ?? []).length > 0) {
    rows.push(['tag budgets', policy.tagBudgets!.map((b) => `${b.tag} ${formatMicrosExact(b.microUsd)}/${b.period}`).join(', ')]);
  }
  return rows;
}

export interface LimitOptions {
  limit?: string[];
  rpm?: string;
  tpm?: string;
  maxInFlight?: string;
}

/** `--max-in-flight N` as a policy field (set at creation), or nothing. */
export function maxInFlightFrom(options: LimitOptions): { maxInFlight?: number } {
  if (options.maxInFlight === undefined) return {};
  const n = Number(options.maxInFlight);
  if (!/^\d+$/.test(options.maxInFlight.trim()) || !Number.isSafeInteger(n) || n < 1) {
    throw new PolicyError(`--max-in-flight "${options.maxInFlight}" is not a whole number of requests above zero`);
  }
  return { maxInFlight: n };
}

/** Limits from --limit/--rpm/--tpm, or undefined when none was given. */
export function limitsFrom(options: LimitOptions): LimitSpec[] | undefined {
  const texts = [...(options.limit ?? [])];
  if (options.rpm !== undefined) texts.push(`requests:${options.rpm}/min`);
  if (options.tpm !== undefined) texts.push(`tokens:${options.tpm}/min`);
  return texts.length === 0 ? undefined : texts.map(parseLimit);
}

export function budgetFrom(usdText: string | undefined, periodText: string | undefined, current?: Budget): Budget | undefined {
  if (periodText !== undefined && !(BUDGET_PERIODS as readonly string[]).includes(periodText)) {
    throw new PolicyError(`--budget-period must be one of ${BUDGET_PERIODS.join(', ')} (got "${periodText}")`);
  }
  if (usdText === undefined) {
    if (periodText === undefined) return undefined;
    if (current === undefined) throw new PolicyError('--budget-period needs --budget-usd (the key has no budget yet)');
    return { microUsd: current.microUsd, period: periodText as BudgetPeriod };
  }
  const microUsd = parseUsdToMicros(usdText);
  if (microUsd <= 0) throw new PolicyError('--budget-usd must be greater than zero');
  return { microUsd, period: (periodText ?? current?.period ?? 'month') as BudgetPeriod };
}

/** Budgets from repeated `--extra-budget 100/month`, or undefined when none was given. */
export function extraBudgetsFrom(texts: readonly string[] | undefined): Budget[] | undefined {
  if (texts === undefined) return undefined;
  return texts.map((text) => {
    const [usd = '', period = ''] = text.split('/');
    if (!(BUDGET_PERIODS as readonly string[]).includes(period)) {
      throw new PolicyError(`--extra-budget takes DOLLARS/PERIOD with PERIOD one of ${BUDGET_PERIODS.join(', ')} (got "${text}")`);
    }
    const microUsd = parseUsdToMicros(usd);
    if (microUsd <= 0) throw new PolicyError('--extra-budget must be greater than zero');
    return { microUsd, period: period as BudgetPeriod };
  });
}

export function modelsFrom(text: string | undefined): string[] | undefined {
  if (text === undefined) return undefined;
  const models = text
    .split(',')
    .map((m) => m.trim())
    .filter((m) => m !== '');
  if (models.length === 0) throw new PolicyError('--models needs at least one model name');
  return models;
}

export function describeLimits(policy: Policy): string {
  return policy.limits.length === 0 ? 'none' : policy.limits.map(formatLimit).join(', ');
}

export function describeBudget(policy: Policy): string {
  const budgets = budgetsOf(policy);
  if (budgets.length === 0) return 'none';
  return budgets.map((budget) => `${formatMicrosExact(budget.microUsd)} ${budget.period === 'total' ? 'in total' : `per ${budget.period}`}`).join(', ');
}
