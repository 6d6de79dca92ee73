/**
 * What the request path needs, built once by the composition root
 * (src/tollgate.ts) and shared by every stage.
 */
import type { SharedBudgets } from '../budgets/shared-budgets.js';
import type { SpendTracker } from '../budgets/spend-tracker.js';
import type { EstimateOptions } from '../estimate/index.js';
import type { KeyCache } from '../keys/cache.js';
import type { LedgerWriter } from '../storage/ledger.js';
import type { Limiter } from '../limits/index.js';
import type { LimitSpec } from '../domain/policy.js';
import type { InFlightLimits } from '../limits/in-flight.js';
import type { BodyIntake } from '../http/body-intake.js';
import type { Upstream } from '../upstreams/pool.js';
import type { Router } from '../upstreams/router.js';
import type { Hono } from 'hono';
import type { AppEnv } from '../app-env.js';
import type { StoredObjects } from './ownership.js';
import type { AdmittedRequest, Ending } from './context.js';
import type { RequestEvents } from './finished.js';
import type { OpenRequests } from './open-requests.js';
import type { RequestTracing } from './trace-hooks.js';

/** Stored and background Responses (src/responses), as the request path calls them. */
export interface ResponsesHooks {
  /** Owners of stored responses and their items: whose ids a request may refer to (src/pipeline/ownership.ts). */
  readonly stored: StoredObjects;
  /** A Responses answer carried its id: remember it for the key (before the client sees it). */
  created(request: AdmittedRequest, responseId: string): void;
  /** A Responses request was settled: remember what its stored response bills when continued (its reported usage), and its items. */
  settled(request: AdmittedRequest, ending: Ending): void;
  /** Takes over settling a background job whose usage is not known yet; true when it did. */
  deferSettlement(request: AdmittedRequest, ending: Ending): boolean;
  /** Mounts the lifecycle routes (retrieve, cancel, delete, input items). */
  mount(routes: Hono<AppEnv>, deps: PipelineDeps): void;
}

export interface PipelineDeps {
  readonly keys: KeyCache;
  /** Largest request body accepted, enforced while it is read. */
  readonly maxBodyBytes: number;
  /** Bodies being read and parsed at once, per key and in all (absent: unbounded, as in tests that build deps by hand). */
  readonly intake?: BodyIntake;
  readonly estimate: EstimateOptions;
  /** Fewest completion tokens per choice worth admitting a budget-capped request with. */
  readonly minOutputTokens: number;
  readonly limiter: Limiter;
  /** Limits over every key at once (from the config file). */
  readonly globalLimits: readonly LimitSpec[];
  /** Spend per key and tenant as this process knows it (the ledger's rollups plus its own changes). */
  readonly spend: SpendTracker;
  /** With Redis: budgets shared by every node, and what to do when Redis cannot be asked. */
  readonly sharedBudgets: SharedBudgets | undefined;
  readonly ledger: LedgerWriter;
  /** The first upstream (the shorthand's one): background Responses polls, model listings of one upstream. */
  readonly upstream: Upstream;
  /** Where Anthropic's Messages API goes (src/upstreams/anthropic-upstream.ts); absent = /v1/messages answers 502. */
  readonly anthropic?: Upstream;
  /** Every upstream and the routes to them (absent in tests that build deps by hand: `upstream` serves all). */
  readonly router?: Router;
  readonly events: RequestEvents;
  /** Requests in flight per key and tenant (absent: no cap, as in tests that build deps by hand). */
  readonly inFlight?: InFlightLimits;
  /** Wall clock (ms since the epoch): ledger times, budget periods. */
  readonly now: () => number;
  /** Stored and background Responses; absent = answers are settled as they end. */
  readonly responses?: ResponsesHooks;
  /** Batch jobs (src/batch-jobs): their routes; absent = not served. */
  readonly batches?: { mount(routes: Hono<AppEnv>, deps: PipelineDeps): void };
  /** OpenTelemetry traces (src/tracing); absent = tracing is off and the request path does no span work. */
  readonly tracing?: RequestTracing;
  /** Requests sent and not settled yet, which a shutdown stops and settles (absent in tests that build deps by hand). */
  readonly open?: OpenRequests;
}
