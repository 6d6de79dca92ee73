/**
 * Prices of a routed request. It is billed at the price of the upstream that
 * answered (its own prices over the global table), but reserved before anyone
 * answers: at the dearest of its candidates' prices, every dimension taken on
 * its own, and with the largest prompt margin among them — so whichever
 * upstream answers, the reservation bounds the bill and budgets stay hard caps.
 */
import { resolvePrice, type ResolvedPrice } from '../estimate/prices.js';
import type { TokenPrices } from '../estimate/price-types.js';
import type { Route } from './router.js';

export interface RoutePricing {
  /** The price to reserve at; undefined when every candidate bills from the same table (the estimate resolves it). */
  readonly price: ResolvedPrice | undefined;
  readonly promptTokenFactor: number;
}

/** What a request for `route` is reserved at. */
export function reservationPricing(route: Route, highestForUnknown: boolean): RoutePricing {
  const { candidates } = route;
  const promptTokenFactor = Math.max(...candidates.map((c) => c.upstream.spec.promptTokenFactor));
  const tables = new Set(candidates.map((c) => c.upstream.spec.prices));
  if (tables.size === 1) return { price: undefined, promptTokenFactor };
  const prices = candidates.map((c) => resolvePrice(route.model, c.upstream.spec.prices, { highestForUnknown }));
  return { price: dearestOf(prices), promptTokenFactor };
}

/** The price an answer of `upstream` is billed at. */
export function answerPrice(route: Route, upstreamName: string, highestForUnknown: boolean): ResolvedPrice | undefined {
  const candidate = route.candidates.find((c) => c.upstream.name === upstreamName);
  return candidate === undefined ? undefined : resolvePrice(route.model, candidate.upstream.spec.prices, { highestForUnknown });
}

function dearer(a: TokenPrices, b: TokenPrices): TokenPrices {
  return {
    inputMicroUsdPer1M: Math.max(a.inputMicroUsdPer1M, b.inputMicroUsdPer1M),
    cachedInputMicroUsdPer1M: Math.max(a.cachedInputMicroUsdPer1M, b.cachedInputMicroUsdPer1M),
    outputMicroUsdPer1M: Math.max(a.outputMicroUsdPer1M, b.outputMicroUsdPer1M),
  };
}

function larger(a: number | undefined, b: number | undefined): number | undefined {
  return a === undefined || b === undefined ? undefined : Math.max(a, b);
}

/**
 * Every dimension at its highest over `prices` (non-empty). An unknown output limit on any
 * candidate leaves the limit unknown (the worst case); the context window is the largest, so a
 * prompt one candidate accepts is not refused for another's smaller window.
 */
export function dearestOf(prices: readonly ResolvedPrice[]): ResolvedPrice {
  return prices.reduce((a, b) => {
    const maxOutputTokens = larger(a.maxOutputTokens, b.maxOutputTokens);
    const contextWindow = larger(a.contextWindow, b.contextWindow);
    return {
      ...dearer(a, b),
      model: a.model,
      known: a.known && b.known,
      matchedBy: a.known ? a.matchedBy : b.matchedBy,
      priority: dearer(a.priority, b.priority),
      flex: dearer(a.flex, b.flex),
      audio: dearer(a.audio, b.audio),
      assumed: [...new Set([...a.assumed, ...b.assumed])],
      ...(maxOutputTokens === undefined ? {} : { maxOutputTokens }),
      ...(contextWindow === undefined ? {} : { contextWindow }),
    };
  });
}
