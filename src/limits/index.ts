/**
 * Rate limits for the proxy's request path.
 *
 * ```ts
 * // Per request; the bindings are built once per policy and cached:
 * const bindings = [
 *   ...bindingsForPolicy('key', key.id, key.policy.limits),
 *   ...bindingsForPolicy('tenant', key.tenantId, tenantPolicy.limits),
 *   ...bindingsForPolicy('global', '', globalPolicy.limits),
 * ];
 * const demands = createDemands(bindings, facts);
 * const result = await limiter.acquire(demands);        // all-or-none
 * headers = buildRateLimitHeaders(result, key.id);
 * if (!result.ok) → 429 (rate_limited), 400 (never_fits), 503/429 (unavailable)
 * // After the response (once):
 * limiter.settle(result.ticket, computeSettlement(bindings, demands, usage));
 * ```
 */
export type { AcquireResult, Demand, Limiter, LimiterObserver, Ticket } from './limiter.js';
export * from './algorithm/bindings.js';
export * from './algorithm/demands.js';
export * from './algorithm/headers.js';
export { createLocalLimiter } from './local-store.js';
