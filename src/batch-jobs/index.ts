/**
 * Batch jobs through the proxy (docs/batches.md), put together for the
 * request path by the composition root: OpenAI's Files and Batch routes
 * (openai-routes.ts) and Anthropic's Message Batches (anthropic-routes.ts),
 * each batch admitted whole at its worst case
 * (admit-batch.ts) and settled from its results by the follower
 * (follower.ts), which survives restarts through the batch store's claims.
 */
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { Hono } from 'hono';
import type { AppEnv } from '../app-env.js';
import type { PriceTable } from '../estimate/prices.js';
import type { Logger } from '../logger.js';
import type { PipelineDeps } from '../pipeline/deps.js';
import type { BatchStore } from '../storage/batches.js';
import type { LedgerWriter } from '../storage/ledger.js';
import type { Upstream } from '../upstreams/pool.js';
import { mountAnthropicBatchRoutes } from './anthropic-routes.js';
import { BatchFollower } from './follower.js';
import { mountBatchRoutes } from './openai-routes.js';

export interface BatchSettings {
  /** How often unsettled batches are looked at, ms. */
  readonly pollMs: number;
  /** The most bytes one uploaded batch file may have. */
  readonly maxFileBytes: number;
}

export interface BatchJobs {
  readonly follower: BatchFollower;
  mount(routes: Hono<AppEnv>, deps: PipelineDeps): void;
  /** Follows the batches this node admitted, unsettled ones left by an earlier process included. */
  start(): void;
  close(): Promise<void>;
}

export function createBatchJobs(deps: {
  readonly store: BatchStore;
  readonly upstream: Upstream;
  /** Where Anthropic's Message Batches go; absent = not configured (their routes refuse, as /v1/messages does). */
  readonly anthropic?: Upstream | undefined;
  readonly ledger: LedgerWriter;
  readonly prices: PriceTable;
  readonly now: () => number;
  readonly logger: Logger;
  readonly settings: BatchSettings;
  /** The node's own database file (its ledger), which names the node; undefined in memory. */
  readonly databasePath: string | undefined;
  /** Told of each batch settled, by its key (the alert monitor judges the key's new spend). */
  readonly onSettled?: ((keyId: string) => void) | undefined;
}): BatchJobs {
  // A node is its host and its database file: the processes that share the file share its ledger.
  const node = deps.databasePath === undefined ? `memory:${randomUUID()}` : `${hostname()}:${deps.databasePath}`;
  const follower = new BatchFollower({
    upstream: deps.upstream,
    anthropic: deps.anthropic,
    store: deps.store,
    ledger: deps.ledger,
    prices: deps.prices,
    now: deps.now,
    logger: deps.logger,
    node,
    holder: randomUUID(),
    onSettled: deps.onSettled,
    // A claim outlives a few looks, so a busy process keeps it; a crashed one's lapses soon after.
    settings: { pollMs: deps.settings.pollMs, claimMs: Math.max(1000, 4 * deps.settings.pollMs) },
  });
  return {
    follower,
    mount(routes, pipeline) {
      mountBatchRoutes(routes, pipeline, { store: deps.store, follower, node, maxFileBytes: deps.settings.maxFileBytes });
      mountAnthropicBatchRoutes(routes, pipeline, {
        store: deps.store,
        follower,
        node,
        maxBodyBytes: deps.settings.maxFileBytes,
        anthropic: deps.anthropic,
        logger: deps.logger,
      });
    },
    start: () => follower.start(),
    close: () => follower.close(),
  };
}
