/** The admin API's request bodies, validated with zod (responses are the views as JSON). */
import { z } from 'zod';
import type { PauseOwner } from '../domain/keys.js';
import { BUDGET_PERIODS } from '../domain/policy.js';
import { endUserPolicySchema, limitSchema, policySchema, tagBudgetSchema } from '../domain/policy.js';

const budgetSchema = z.object({ microUsd: z.number().int().positive(), period: z.enum(BUDGET_PERIODS) });

export const createKeyBody = z.object({
  name: z.string().min(1),
  tenant: z.string().min(1).optional(),
  policy: policySchema.default({ limits: [] }),
  expiresAt: z.number().int().positive().nullable().optional(),
  metadata: z.record(z.string(), z.string()).optional(),
});

export const updateKeyBody = z.object({
  name: z.string().min(1).optional(),
  tenant: z.string().min(1).nullable().optional(),
  limits: z.array(limitSchema).optional(),
  budget: budgetSchema.nullable().optional(),
  budgets: z.array(budgetSchema).nullable().optional(),
  models: z.array(z.string().min(1)).nullable().optional(),
  maxInFlight: z.number().int().positive().nullable().optional(),
  /** Limits and budgets each end user of the key gets (`null` clears them). */
  endUser: endUserPolicySchema.nullable().optional(),
  /** Limits and budgets each agent session of the key gets (`null` clears them). */
  session: endUserPolicySchema.nullable().optional(),
  /** Budgets per tag (`null` clears them). */
  tagBudgets: z.array(tagBudgetSchema).nullable().optional(),
  /** Budget-aware downgrade: `{"atPercent": 80, "models": {"gpt-4o": "gpt-4o-mini"}}`; null removes it. */
  downgrade: policySchema.unwrap().shape.downgrade.unwrap().nullable().optional(),
  /** The runaway stop's rule for this key: `{"factor": 20}`, `{"microUsdPerHour": 50000000}`, `{"off": true}`; null: the config's. */
  runaway: policySchema.unwrap().shape.runaway.unwrap().nullable().optional(),
  expiresAt: z.number().int().positive().nullable().optional(),
  metadata: z.record(z.string(), z.string().nullable()).optional(),
});

export const createTenantBody = z.object({
  name: z.string().min(1),
  limits: z.array(limitSchema).optional(),
  budget: budgetSchema.optional(),
  budgets: z.array(budgetSchema).optional(),
  maxInFlight: z.number().int().positive().optional(),
  /** Limits and budgets each agent session of each of the tenant's keys gets. */
  session: endUserPolicySchema.optional(),
});

export const updateTenantBody = z.object({
  name: z.string().min(1).optional(),
  limits: z.array(limitSchema).optional(),
  budget: budgetSchema.nullable().optional(),
  budgets: z.array(budgetSchema).nullable().optional(),
  maxInFlight: z.number().int().positive().nullable().optional(),
  session: endUserPolicySchema.nullable().optional(),
});

/** `POST /keys/:ref/resume`: the whole key (no body), or one session or end user the runaway stop paused. */
export const resumeKeyBody = z
  .strictObject({ session: z.string().min(1).max(512).optional(), endUser: z.string().min(1).max(512).optional() })
  .refine((value) => value.session === undefined || value.endUser === undefined, { message: 'give a session or an end user, not both' });

/** The owner a resume body names, if any. */
export function resumedOwner(value: z.output<typeof resumeKeyBody>): PauseOwner | undefined {
  if (value.session !== undefined) return { level: 'session', name: value.session };
  if (value.endUser !== undefined) return { level: 'end_user', name: value.endUser };
  return undefined;
}
