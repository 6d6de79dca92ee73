/**
 * Budget-aware downgrade (README, "Upstreams"): a key's policy may name, per
 * model, a cheaper one to use once any of its budgets — its own or its
 * tenant's — has spent a share of its cap this period. The request is then
 * sent, priced, limited and recorded as the cheaper model, and the response
 * says so (`x-tollgate-downgraded: A->B`). A pair names a model the way the
 * price table does: `gpt-4o=gpt-4o-mini` also takes `gpt-4o-2024-08-06`,
 * `openai/gpt-4o` and fine-tunes of gpt-4o, which are all priced as gpt-4o.
 * Pure: the spend is passed in.
 */
import { baseModelOf, stripProviderPrefix, stripSnapshotSuffix } from '../estimate/models.js';
import type { Policy } from '../domain/policy.js';

/**
 * The names a requested model goes by, most specific first, as the price
 * table looks them up (src/estimate/prices.ts): as written (prefix stripped,
 * lower-case), undated, its fine-tune base, the base undated.
 */
function namesOf(model: string): string[] {
  const stripped = stripProviderPrefix(model);
  const names = [stripped, stripSnapshotSuffix(stripped)];
  const base = baseModelOf(stripped);
  if (base !== stripped) names.push(base, stripSnapshotSuffix(base));
  return names;
}

/** The FROM of the key's downgrade pair that covers `model` (its dated snapshots and fine-tunes too), or undefined. */
export function downgradeSource(downgrade: Policy['downgrade'], model: string): string | undefined {
  if (downgrade === undefined) return undefined;
  if (Object.hasOwn(downgrade.models, model)) return model;
  const froms = Object.keys(downgrade.models);
  for (const name of namesOf(model)) {
    const from = froms.find((candidate) => stripProviderPrefix(candidate) === name);
    if (from !== undefined) return from;
  }
  return undefined;
}

/** The model to use instead of `model`, or undefined. `spentShares`: each budget's spend / cap (0–1+). */
export function downgradeTarget(downgrade: Policy['downgrade'], model: string, spentShares: readonly number[]): string | undefined {
  const from = downgradeSource(downgrade, model);
  if (downgrade === undefined || from === undefined) return undefined;
  const threshold = downgrade.atPercent / 100;
  return spentShares.some((share) => share >= threshold) ? downgrade.models[from] : undefined;
}
