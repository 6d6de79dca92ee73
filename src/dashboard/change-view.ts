/**
 * What a change of a key's or tenant's policy means, in words: its parts
 * before and after, and each budget as a sentence with what its period has
 * spent ("This key may now spend $50.00 per month; $12.40 spent this
 * month."). The edit form shows it before saving (Preview), the key page and
 * the tenants page after.
 */
import { budgetsOf, formatLimit, type BudgetPeriod, type Policy } from '../domain/policy.js';
import { formatMicrosExact } from '../domain/money.js';
import { describeAttributedPolicy } from '../domain/policy-options.js';
import { describeBudget, describeLimits } from '../domain/policy-options.js';
import type { ViewContext } from './view-context.js';
import { spentInBudgetPeriod } from './budget-view.js';
import { usd } from './format.js';

interface ChangeRow {
  readonly label: string;
  readonly before: string;
  readonly after: string;
  readonly changed: boolean;
}

export interface ChangeView {
  readonly rows: readonly ChangeRow[];
  /** One sentence per budget after the change (or one saying there is none). */
  readonly sentences: readonly string[];
}

/** What a budget's period has spent, by period (a key's, or a tenant's keys' together). */
export type SpentIn = (period: BudgetPeriod) => number;

const CAP_TEXT: Record<BudgetPeriod, string> = { day: 'per day', week: 'per week', month: 'per month', total: 'in total' };
const SPENT_TEXT: Record<BudgetPeriod, string> = { day: 'today', week: 'this week', month: 'this month', total: 'in total' };

function parts(policy: Policy | undefined): Array<[string, string]> {
  if (policy === undefined) return [];
  const session = policy.session;
  return [
    ['Limits', describeLimits(policy)],
    ['Budgets', describeBudget(policy)],
    ['Models', policy.models?.join(', ') ?? 'all'],
    ['In flight', policy.maxInFlight === undefined ? 'the default' : `at most ${policy.maxInFlight}`],
    ...describeAttributedPolicy({ ...policy, session: undefined }).map(([label, text]): [string, string] => [
      label === 'per user' ? 'Per end user' : 'Tag budgets',
      text,
    ]),
    [
      'Per agent session',
      session === undefined
        ? 'none'
        : [...session.limits.map(formatLimit), ...(session.budgets ?? []).map((b) => `${formatMicrosExact(b.microUsd)}/${b.period}`)].join(', ') || 'none',
    ],
  ];
}

/** The budget sentences of a policy: what its owner may spend, and what it has spent. */
export function budgetSentences(owner: 'key' | 'tenant', policy: Policy, spent: SpentIn, verb = 'may now spend'): string[] {
  const budgets = budgetsOf(policy);
  if (budgets.length === 0) return [`This ${owner} has no budget: its spend is not capped.`];
  return budgets.map((b) => `This ${owner} ${verb} ${usd(b.microUsd)} ${CAP_TEXT[b.period]}; ${usd(spent(b.period))} spent ${SPENT_TEXT[b.period]}.`);
}

/** Before and after, part by part, and the budget sentences of `after`. */
export function describeChange(owner: 'key' | 'tenant', before: Policy | undefined, after: Policy, spent: SpentIn): ChangeView {
  const was = new Map(parts(before));
  const rows = parts(after).map(([label, text]) => {
    const old = was.get(label) ?? (before === undefined ? '' : 'none');
    return { label, before: old, after: text, changed: old !== text };
  });
  // Parts the change removes (a tag budget list cleared, say).
  for (const [label, text] of was) if (!rows.some((row) => row.label === label)) rows.push({ label, before: text, after: 'none', changed: true });
  return { rows, sentences: budgetSentences(owner, after, spent) };
}

/** What a key (or a tenant's keys together) has spent in each budget period, from the dashboard's reads. */
export async function spentOf(ctx: ViewContext, owner: { key: string } | { tenant: string }): Promise<SpentIn> {
  const [spend, directory] = await Promise.all([ctx.reads.spendByKey(ctx.now), ctx.reads.directory()]);
  const ids = 'key' in owner ? [owner.key] : directory.keys.filter((k) => k.tenantId === owner.tenant).map((k) => k.id);
  return (period) => spentInBudgetPeriod(spend, ids, period);
}
