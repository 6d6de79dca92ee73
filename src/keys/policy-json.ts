/**
 * Policies as stored (JSON in SQLite) and as sent to the admin API: one zod
 * schema, then the policy module's own checks (positive rates, burst that
 * holds a request, unique names).
 */
import { z } from 'zod';
import { BUDGET_PERIODS, LIMIT_PERIODS, LIMIT_UNITS, PolicyError, validatePolicy, type Policy } from '../limits/algorithm/policy.js';

const costSourceSchema = z.union([
  z.object({ kind: z.literal('fixed') }),
  z.object({ kind: z.enum(['header', 'query']), name: z.string().min(1), default: z.number().positive() }),
]);

export const limitSchema = z.object({
  name: z.string().regex(/^[A-Za-z0-9_.-]{1,64}$/),
  unit: z.enum(LIMIT_UNITS),
  amount: z.number().positive(),
  period: z.enum(LIMIT_PERIODS),
  burst: z.number().positive(),
  startEmpty: z.boolean().optional(),
  modelWeights: z.record(z.string(), z.number().positive()).optional(),
  costSource: costSourceSchema.optional(),
});

export const policySchema = z.object({
  limits: z.array(limitSchema).default([]),
  budget: z.object({ microUsd: z.number().int().positive(), period: z.enum(BUDGET_PERIODS) }).optional(),
  models: z.array(z.string().min(1)).optional(),
});

/** Parses and checks a policy from untrusted JSON; throws PolicyError with a readable message. */
export function parsePolicy(value: unknown): Policy {
  const parsed = policySchema.safeParse(value);
  if (!parsed.success) {
    const first = parsed.error.issues[0];
    throw new PolicyError(`invalid policy at ${first?.path.join('.') || '(root)'}: ${first?.message ?? 'invalid'}`);
  }
  const policy = parsed.data as Policy;
  validatePolicy(policy);
  return policy;
}

/**
 * Parses a policy column. A corrupt row comes back as an error value, not an
 * exception: the key then fails closed (its requests are refused) instead of
 * silently losing its limits or budget, and nothing else is affected.
 */
export function readStoredPolicy(text: string): Policy | PolicyError {
  try {
    return parsePolicy(JSON.parse(text));
  } catch (error) {
    return error instanceof PolicyError ? error : new PolicyError(`stored policy is not JSON: ${String(error)}`);
  }
}
