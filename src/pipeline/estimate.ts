/**
 * Stage 2, estimate: read the body (with its size limit, and within the
 * intake's bounds: src/http/body-intake.ts), check the fields the proxy itself
 * relies on and the key's model allow-list, and price the request: prompt
 * tokens counted with the model's tokenizer, the completion reserved, both
 * priced, and every id it refers to checked against the key
 * (src/pipeline/ownership.ts). A large body is parsed and estimated on a
 * worker thread from its raw bytes (src/estimate/index.ts, openBody). A
 * request refused here is filed as a refusal.
 */
import { dialectOf, type Dialect } from '../dialects/index.js';
import { TollgateError, type ErrorCode } from '../domain/errors.js';
import { budgetChecksFor } from '../budgets/check.js';
import { downgradeSource, downgradeTarget } from '../budgets/downgrade.js';
import { readAttribution } from '../endusers/attribution.js';
import { hasAttributedUsdCap } from '../endusers/checks.js';
import { hasSessionUsdCap } from '../endusers/session-checks.js';
import { EstimateInputError, openBody, resolvePrice, withStoredHistory, type Estimate, type OpenBody } from '../estimate/index.js';
import { checkReferences } from './ownership.js';
import { checkModelAllowed } from '../domain/caller.js';
import { bindingsFor } from '../limits/index.js';
import { usdToMicros } from '../domain/money.js';
import type { RequestFacts } from '../estimate/client-body.js';
import { refusesUnpricedModel } from '../estimate/prices.js';
import { reservationPricing } from '../upstreams/route-prices.js';
import type { Route } from '../upstreams/router.js';
import { chargeRefusal } from './charge-refusal.js';
import type { EstimatedRequest, RequestContext, Whole } from './context.js';
import type { PipelineDeps } from './deps.js';
import { AdmissionRefused } from './refusals.js';
import { settleRefused } from './settle.js';

/** Stage 2: the request with its body, facts and estimate, or a 4xx (recorded). */
export async function estimate(request: RequestContext, deps: PipelineDeps): Promise<EstimatedRequest> {
  let facts: RequestFacts | undefined;
  let opened: OpenBody | undefined;
  // Held until the estimate is known: a large body's parse and count are the worker time the intake bounds.
  const intake = deps.intake?.open(request.caller.key.id, request.client.left);
  try {
    opened = await openBody(request.endpoint, await request.client.readBody(deps.maxBodyBytes, intake));
    facts = opened.facts;
    checkModelAllowed(request.caller.policy, facts.model);
    const asked = facts.model;
    const cheaper = downgradeOf(request, asked, deps);
    if (cheaper !== undefined) facts = { ...facts, model: cheaper };
    const route = routeOf(facts.model, dialectOf(request.endpoint), deps);
    checkModelPriced(facts.model, route, request, deps);
    const maxCostMicroUsd = readCostCap(request.client.headers[COST_CAP_HEADER]);
    const attribution = readAttribution(opened.fields, request.client.headers);
    // Only a configured fallback can be below the highest prices; otherwise nothing to decide per key.
    const highestForUnknown = deps.estimate.prices.fallbackExplicit === true && hasUsdCap(request, deps);
    const base = highestForUnknown ? { ...deps.estimate, highestForUnknown: true } : deps.estimate;
    const counted: Estimate = await opened.estimate(withRoutePricing(base, route, highestForUnknown), cheaper);
    // Every id the body refers to must be the key's own; a stored history Tollgate settled is reserved at its size.
    const known = await checkReferences(request.caller.key.id, counted.references, deps.responses?.stored);
    const estimated = known.historyTokens === undefined ? counted : withStoredHistory(counted, known.historyTokens);
    const estimatedRequest: Whole<EstimatedRequest> = {
      requestId: request.requestId,
      endpoint: request.endpoint,
      startedAt: request.startedAt,
      url: request.url,
      client: request.client,
      caller: request.caller,
      bytes: opened.bytes,
      body: opened.fields,
      layout: opened.layout,
      edits: [],
      facts,
      estimate: estimated,
      maxCostMicroUsd,
      attribution,
      route,
      downgradedFrom: cheaper === undefined ? undefined : asked,
    };
    return estimatedRequest;
  } catch (error) {
    // Refusals count against the key's request limits too (charge-refusal.ts).
    const refusal = await chargeRefusal(request, asRefusal(error), deps);
    const limited = refusal instanceof AdmissionRefused;
    // Turned away by the intake's bounds (src/http/body-intake.ts), not by what the body says.
    const busy = refusal.code === 'rate_limit_exceeded' || refusal.code === 'server_busy';
    settleRefused(
      request,
      refusal,
      {
        model: facts?.model ?? modelOf(error),
        stream: facts?.stream ?? false,
        status:
          limited || busy || refusal.code === 'model_not_allowed' || refusal.code === 'model_not_found' || refusal.code === 'model_not_priced'
            ? 'rejected'
            : 'invalid_request',
        reason: limited ? refusal.reason : refusal.code === 'rate_limit_exceeded' ? 'rate_limit' : 'other',
      },
      deps,
    );
    throw refusal;
  } finally {
    opened?.close();
    intake?.release();
  }
}

const COST_CAP_HEADER = 'x-tollgate-max-cost-usd';

/** The cheaper model a key's downgrade sends this request to, now that its budgets are spent so far (src/budgets/downgrade.ts). */
function downgradeOf(request: RequestContext, model: string, deps: PipelineDeps): string | undefined {
  const downgrade = request.caller.policy.downgrade;
  if (downgradeSource(downgrade, model) === undefined) return undefined;
  const shares = budgetChecksFor(request.caller).map((check) => deps.spend.spent(check.scope, check.budget.period, request.startedAt) / check.budget.microUsd);
  return downgradeTarget(downgrade, model, shares);
}

/** The upstreams that serve the model, in order; a model none serves is refused (400 model_not_found). */
function routeOf(model: string, dialect: Dialect, deps: PipelineDeps): Route | undefined {
  if (deps.router === undefined) return undefined;
  const kind = dialect.upstreamKind;
  const route = deps.router.route(model, kind);
  if (route !== undefined) return route;
  // Without upstreams of its kind in the config, a dialect other than OpenAI's goes to its own
  // default upstream (Messages to TOLLGATE_ANTHROPIC_URL: forward.ts).
  if (kind !== 'openai' && !deps.router.upstreams.some((upstream) => upstream.spec.kind === kind)) return undefined;
  throw new TollgateError('model_not_found', `The model "${model}" is not served by any upstream of this proxy.`, { param: 'model' });
}

/** Estimate options for a routed request: its route's prices and prompt margin (src/upstreams/route-prices.ts). */
function withRoutePricing(options: PipelineDeps['estimate'], route: Route | undefined, highestForUnknown: boolean): PipelineDeps['estimate'] {
  if (route === undefined) return options;
  const pricing = reservationPricing(route, highestForUnknown);
  const single = route.candidates.length === 1 ? route.candidates[0]!.upstream.spec.prices : undefined;
  return {
    ...options,
    ...(single === undefined ? {} : { prices: single }),
    ...(pricing.price === undefined ? {} : { price: pricing.price }),
    ...(pricing.promptTokenFactor > 1 ? { promptTokenFactor: pricing.promptTokenFactor } : {}),
  };
}

/** The client's own cap on what this request may cost (`x-tollgate-max-cost-usd: 0.25`), in µUSD. */
function readCostCap(value: string | string[] | undefined): number | undefined {
  if (value === undefined) return undefined;
  const micros = typeof value === 'string' ? usdToMicros(value) : null;
  if (micros === null || micros <= 0 || !Number.isSafeInteger(micros)) {
    throw new TollgateError('invalid_value', `The ${COST_CAP_HEADER} header must be a positive amount of USD with at most 6 decimals, e.g. 0.25.`, {
      param: COST_CAP_HEADER,
    });
  }
  return micros;
}

/**
 * A model the price table (of any upstream it may go to) lacks is refused when TOLLGATE_UNKNOWN_MODELS
 * says so for this key (refusesUnpricedModel): by default, for keys with a budget or a `usd` limit.
 */
function checkModelPriced(model: string, route: Route | undefined, request: RequestContext, deps: PipelineDeps): void {
  const mode = deps.estimate.unknownModels ?? 'fallback';
  if (mode === 'fallback') return;
  const tables = route === undefined ? [deps.estimate.prices] : route.candidates.map((c) => c.upstream.spec.prices);
  if (tables.every((table) => resolvePrice(model, table).known)) return;
  // Only now, for an unpriced model, is the key's cap looked up: known models skip the walk.
  if (!refusesUnpricedModel(mode, hasUsdCap(request, deps))) return;
  if (mode === 'refuse') {
    throw new TollgateError(
      'model_not_found',
      `The model "${model}" has no price in Tollgate's price table, so it cannot be billed. Add it to the config's prices.`,
      {
        param: 'model',
      },
    );
  }
  throw new TollgateError(
    'model_not_priced',
    `The model "${model}" has no price in Tollgate's price table, and this key has a budget or USD limit that a guessed price could overrun. ` +
      `Check the model's name; to serve it, the proxy's operator adds its price to the config file's "prices.models" ` +
      `(USD per 1M tokens, e.g. {"input": 1, "cachedInput": 0.5, "output": 2}), or sets TOLLGATE_UNKNOWN_MODELS=fallback to bill unpriced models at the fallback price.`,
    { param: 'model' },
  );
}

/**
 * Keys with a budget or a `usd` limit (their own, their tenant's or a global one) price unknown
 * models at the table's highest prices, whatever the configured fallback: a guessed price could
 * let their spend pass the cap.
 */
function hasUsdCap(request: RequestContext, deps: PipelineDeps): boolean {
  if (budgetChecksFor(request.caller).length > 0 || hasAttributedUsdCap(request.caller.policy) || hasSessionUsdCap(request.caller)) return true;
  return bindingsFor(request.caller, deps.globalLimits).some((binding) => binding.limit.unit === 'usd');
}

/** A refusal before forwarding, as the TollgateError the client gets. */
function asRefusal(error: unknown): TollgateError {
  if (error instanceof TollgateError) return error;
  if (error instanceof EstimateInputError) {
    const code: ErrorCode =
      error.code === 'context_length_exceeded' ? 'context_length_exceeded' : error.code === 'invalid_type' ? 'invalid_type' : 'invalid_value';
    return new TollgateError(code, error.message, { param: error.param });
  }
  return new TollgateError('internal_error', 'Tollgate could not read this request.', { cause: error });
}

function modelOf(error: unknown): string {
  return error instanceof TollgateError && error.param === 'model' ? '(invalid)' : '(unknown)';
}
