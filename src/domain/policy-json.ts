/**
 * Policies as stored (JSON in SQLite) and as sent to the admin API: the
 * policy's zod schema (src/domain/policy.ts), then the policy module's own checks (positive rates, burst that
 * holds a request, unique names).
 */
import { PolicyError, policySchema, validatePolicy, type Policy } from './policy.js';

/** Parses and checks a policy from untrusted JSON; throws PolicyError with a readable message. */
function parsePolicy(value: unknown): Policy {
  const parsed = policySchema.safeParse(value);
  if (!parsed.success) {
    const first = parsed.error.issues[0];
    throw new PolicyError(`invalid policy at ${first?.path.join('.') || '(root)'}: ${first?.message ?? 'invalid'}`);
  }
  const policy: Policy = parsed.data;
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
