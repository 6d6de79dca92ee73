/**
 * The dashboard's policy form: its fields as text, filled from a key's or
 * tenant's policy, and read back into the policy's parts. The fields take the
 * CLI's syntax and go through the CLI's own parsers (src/cli/key-options.ts,
 * src/domain/policy-options.ts), so a value the CLI refuses is refused here
 * with the same message, and the store checks the result as it checks the
 * admin API's (validatePolicy). The form holds the whole policy: an emptied
 * field clears what it held.
 */
import { budgetsOf, formatLimit, PolicyError, type Budget, type EndUserPolicy, type LimitSpec, type Policy, type TagBudget } from '../domain/policy.js';
import { endUserPolicyFrom, sessionPolicyFrom, tagBudgetsFrom } from '../domain/policy-options.js';
import { formatMicrosExact } from '../domain/money.js';
import { budgetFrom, extraBudgetsFrom, limitsFrom, maxInFlightFrom, modelsFrom } from '../domain/policy-options.js';

/** The fields of the form, as typed (names are the form's `name`s). */
export interface PolicyFields {
  readonly limits: string;
  readonly budgetUsd: string;
  readonly budgetPeriod: string;
  readonly extraBudgets: string;
  readonly maxInFlight: string;
  readonly sessionLimits: string;
  readonly sessionBudgetUsd: string;
  readonly sessionBudgetPeriod: string;
  /** Keys only from here on. */
  readonly models: string;
  readonly userLimits: string;
  readonly userBudgetUsd: string;
  readonly userBudgetPeriod: string;
  readonly tagBudgets: string;
}

const POLICY_FIELD_NAMES: ReadonlyArray<keyof PolicyFields> = [
  'limits',
  'budgetUsd',
  'budgetPeriod',
  'extraBudgets',
  'maxInFlight',
  'sessionLimits',
  'sessionBudgetUsd',
  'sessionBudgetPeriod',
  'models',
  'userLimits',
  'userBudgetUsd',
  'userBudgetPeriod',
  'tagBudgets',
];

/** The policy's parts a form sets; `null` clears one. */
export interface PolicyParts {
  readonly limits: LimitSpec[];
  readonly budget: Budget | null;
  readonly budgets: Budget[] | null;
  readonly maxInFlight: number | null;
  readonly session: EndUserPolicy | null;
  readonly models: string[] | null;
  readonly endUser: EndUserPolicy | null;
  readonly tagBudgets: TagBudget[] | null;
}

const dollars = (micros: number): string => formatMicrosExact(micros).slice(1);
const budgetText = (budget: Budget): string => `${dollars(budget.microUsd)}/${budget.period}`;

/** The form filled with a policy (empty for a new key or tenant). */
export function fieldsOfPolicy(policy: Policy | undefined): PolicyFields {
  const budget = policy?.budget;
  const extra = policy === undefined ? [] : budgetsOf(policy).slice(budget === undefined ? 0 : 1);
  const userBudget = policy?.endUser?.budgets?.[0];
  const sessionBudget = policy?.session?.budgets?.[0];
  return {
    limits: (policy?.limits ?? []).map(formatLimit).join('\n'),
    budgetUsd: budget === undefined ? '' : dollars(budget.microUsd),
    budgetPeriod: budget?.period ?? 'month',
    extraBudgets: extra.map(budgetText).join('\n'),
    maxInFlight: policy?.maxInFlight === undefined ? '' : String(policy.maxInFlight),
    sessionLimits: (policy?.session?.limits ?? []).map(formatLimit).join('\n'),
    sessionBudgetUsd: sessionBudget === undefined ? '' : dollars(sessionBudget.microUsd),
    sessionBudgetPeriod: sessionBudget?.period ?? 'total',
    models: (policy?.models ?? []).join(', '),
    userLimits: (policy?.endUser?.limits ?? []).map(formatLimit).join('\n'),
    userBudgetUsd: userBudget === undefined ? '' : dollars(userBudget.microUsd),
    userBudgetPeriod: userBudget?.period ?? 'month',
    tagBudgets: (policy?.tagBudgets ?? []).map((b) => `${b.tag}=${budgetText(b)}`).join('\n'),
  };
}

/** The form's fields from a posted body (a missing field is empty). */
export function fieldsOfForm(form: URLSearchParams): PolicyFields {
  const entries = POLICY_FIELD_NAMES.map((name) => [name, (form.get(name) ?? '').trim()] as const);
  return Object.fromEntries(entries) as unknown as PolicyFields;
}

/** One value a line, blank lines skipped. */
function lines(text: string): string[] {
  return text
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter((line) => line !== '');
}

/** One value a line or between commas (for values that hold no comma). */
function items(text: string): string[] {
  return lines(text.replace(/,/g, '\n'));
}

const given = (text: string): string | undefined => (text === '' ? undefined : text);

/** A part of the form parsed, its PolicyError prefixed with the part's label (the message is the CLI's, naming its option). */
function labelled<T>(label: string, parse: () => T): T {
  try {
    return parse();
  } catch (error) {
    if (error instanceof PolicyError) throw new PolicyError(`${label}: ${error.message}`);
    throw error;
  }
}

/**
 * The policy's parts from the form, for a key (`key`) or a tenant: each
 * through the CLI's parser of the option it mirrors. Throws PolicyError.
 */
export function partsOfFields(fields: PolicyFields, owner: 'key' | 'tenant'): PolicyParts {
  const limits = labelled('Limits', () => limitsFrom({ limit: lines(fields.limits) }) ?? []);
  const budget = labelled(
    'Budget',
    () => budgetFrom(given(fields.budgetUsd), given(fields.budgetUsd) === undefined ? undefined : given(fields.budgetPeriod)) ?? null,
  );
  const extra = items(fields.extraBudgets);
  const budgets = labelled('Other budgets', () => extraBudgetsFrom(extra.length === 0 ? undefined : extra) ?? null);
  const inFlight = labelled('In flight', () => maxInFlightFrom({ maxInFlight: given(fields.maxInFlight) }).maxInFlight ?? null);
  const sessionLimits = lines(fields.sessionLimits);
  const session = labelled(
    'Per agent session',
    () =>
      sessionPolicyFrom({
        ...(sessionLimits.length === 0 ? {} : { sessionLimit: sessionLimits }),
        sessionBudgetUsd: given(fields.sessionBudgetUsd),
        sessionBudgetPeriod: given(fields.sessionBudgetUsd) === undefined ? undefined : given(fields.sessionBudgetPeriod),
      }) ?? null,
  );
  if (owner === 'tenant') return { limits, budget, budgets, maxInFlight: inFlight, session, models: null, endUser: null, tagBudgets: null };
  const userLimits = lines(fields.userLimits);
  const endUser = labelled(
    'Per end user',
    () =>
      endUserPolicyFrom({
        ...(userLimits.length === 0 ? {} : { userLimit: userLimits }),
        userBudgetUsd: given(fields.userBudgetUsd),
        userBudgetPeriod: given(fields.userBudgetUsd) === undefined ? undefined : given(fields.userBudgetPeriod),
      }) ?? null,
  );
  const tags = items(fields.tagBudgets);
  const tagBudgets = labelled('Tag budgets', () => tagBudgetsFrom(tags.length === 0 ? {} : { tagBudget: tags }) ?? null);
  const models = labelled('Models', () => (given(fields.models) === undefined ? null : (modelsFrom(fields.models) ?? null)));
  return { limits, budget, budgets, maxInFlight: inFlight, session, models, endUser, tagBudgets };
}

/** The parts as a whole policy (a new key or tenant: what is cleared is simply absent). */
export function policyOfParts(parts: PolicyParts): Policy {
  return {
    limits: parts.limits,
    ...(parts.budget === null ? {} : { budget: parts.budget }),
    ...(parts.budgets === null ? {} : { budgets: parts.budgets }),
    ...(parts.maxInFlight === null ? {} : { maxInFlight: parts.maxInFlight }),
    ...(parts.session === null ? {} : { session: parts.session }),
    ...(parts.models === null ? {} : { models: parts.models }),
    ...(parts.endUser === null ? {} : { endUser: parts.endUser }),
    ...(parts.tagBudgets === null ? {} : { tagBudgets: parts.tagBudgets }),
  };
}
