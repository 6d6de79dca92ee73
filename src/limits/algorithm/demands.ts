/**
 * What a request costs in each limit's units — pure, no I/O.
 *
 * - `requests`: 1, or read from a header / query parameter per the limit's
 *   `costSource`, with its `default` when absent or not a number; never
 *   less than 1, so a client cannot send `x-weight: 0` to pass for free.
 * - `tokens`: reserved tokens × the weight of the first model prefix that
 *   matches (1 when none does), rounded up.
 * - `usd`: reserved micro-USD.
 * And the inverse for settlement: actual usage → actual cost per limit.
 */
import type { LimitSpec } from '../../domain/policy.js';

/** The facts about a request that its costs depend on. */
export interface RequestFacts {
  /** The model named in the request body. */
  readonly model: string;
  /** Prompt tokens plus the reserved completion (the estimate stage's number). */
  readonly reservedTokens: number;
  /** The reserved price in integer micro-USD. */
  readonly reservedMicroUsd: number;
  /** Reads a request header (case-insensitive, as the HTTP layer provides). */
  readonly headers: (name: string) => string | undefined;
  /** Reads a query parameter. */
  readonly query: (name: string) => string | undefined;
}

/** What the request actually used, known after the response. */
export interface UsageFacts {
  readonly model: string;
  /** Actual tokens billed (prompt + completion, as the estimate counted them). */
  readonly tokens: number;
  /** Actual price in integer micro-USD. */
  readonly microUsd: number;
}

/** Weight of `model` under a `tokens` limit: the first matching prefix, else 1. */
export function findModelWeight(limit: LimitSpec, model: string): number {
  if (!limit.modelWeights) return 1;
  for (const [prefix, weight] of Object.entries(limit.modelWeights)) {
    if (model.startsWith(prefix)) return weight;
  }
  return 1;
}

/** Cost of one request under one limit, in integer bucket units. */
export function computeLimitCost(limit: LimitSpec, facts: RequestFacts): number {
  switch (limit.unit) {
    case 'requests':
      return computeRequestCost(limit, facts);
    case 'tokens':
      return roundUp(facts.reservedTokens * findModelWeight(limit, facts.model));
    case 'usd':
      return roundUp(facts.reservedMicroUsd);
  }
}

/**
 * Actual cost under one limit once usage is known. A request stays one
 * request (its reserved cost is final); tokens and dollars follow usage.
 */
export function computeActualCost(limit: LimitSpec, reservedCost: number, usage: UsageFacts): number {
  switch (limit.unit) {
    case 'requests':
      return reservedCost;
    case 'tokens':
      return roundUp(usage.tokens * findModelWeight(limit, usage.model));
    case 'usd':
      return roundUp(usage.microUsd);
  }
}

function computeRequestCost(limit: LimitSpec, facts: RequestFacts): number {
  const source = limit.costSource;
  if (!source || source.kind === 'fixed') return 1;
  const text = source.kind === 'header' ? facts.headers(source.name) : facts.query(source.name);
  const parsed = parseCost(text);
  return Math.max(1, parsed ?? roundUp(source.default));
}

/** A non-negative finite number, or undefined for absent/blank/non-numeric text. */
function parseCost(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const trimmed = text.trim();
  // Number('') is 0 and Number('0x10') is 16: accept plain decimals only.
  if (!/^\d+(\.\d+)?$/.test(trimmed)) return undefined;
  return roundUp(Number(trimmed));
}

/** Costs are whole units; a fraction is rounded up so weighting never under-charges. */
function roundUp(value: number): number {
  if (!(value > 0)) return 0;
  return Math.ceil(value);
}
