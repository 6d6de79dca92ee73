/**
 * Budget-aware downgrade (README, "Upstreams"): a key's policy may name, per
 * model, a cheaper one to use once any of its budgets — its own or its
 * tenant's — has spent a share of its cap this period. The request is then
 * sent, priced, limited and recorded as the cheaper model, and the response
 * says so (`x-tollgate-downgraded: A->B`). Pure: the spend is passed in.
 */
import type { Policy } from '../limits/algorithm/policy.js';

/** The model to use instead of `model`, or undefined. `spentShares`: each budget's spend / cap (0–1+). */
export function downgradeTarget(downgrade: Policy['downgrade'], model: string, spentShares: readonly number[]): string | undefined {
  if (downgrade === undefined || !Object.hasOwn(downgrade.models, model)) return undefined;
  const threshold = downgrade.atPercent / 100;
  return spentShares.some((share) => share >= threshold) ? downgrade.models[model] : undefined;
}
