/**
 * Budget counters as coordination keeps them: one run of `lua/budget.lua`
 * reserves, `INCRBY` adjusts. On Redis here; on the primary of `tollgate
 * serve --workers N` through ipc-store.ts (ipc-primary.ts runs the script's
 * transcription, budget-script-model.ts). What a reservation means for a
 * key's budgets is budgets/shared-budgets.ts.
 */
import { readFileSync } from 'node:fs';
import type { Cluster, Redis } from 'ioredis';

const BUDGET_SCRIPT = readFileSync(new URL('../../lua/budget.lua', import.meta.url), 'utf8');
const COMMAND = 'tollgateBudgetReserve';

type BudgetClient = (Redis | Cluster) & {
  [COMMAND]?: (key: string, cap: number, amount: number, seed: number, ttlMs: number, least: number) => Promise<[number, number, number]>;
};

/** Where the counters live: Redis, or the primary process of `tollgate serve --workers N`. */
export interface BudgetCounters {
  /** One run of lua/budget.lua (its header documents the arguments): [admitted, spent before, granted]. */
  reserve(key: string, cap: number, amount: number, seed: number, ttlMs: number, least: number): Promise<[number, number, number]>;
  /** `INCRBY key delta`. */
  adjust(key: string, delta: number): Promise<unknown>;
}

/** The counters on Redis (a single server or a Cluster). */
export function redisBudgetCounters(redis: Redis | Cluster): BudgetCounters {
  const client = redis as BudgetClient;
  // EVALSHA with a fallback on NOSCRIPT, on every Cluster node: ioredis does it.
  if (typeof client[COMMAND] !== 'function') client.defineCommand(COMMAND, { numberOfKeys: 1, lua: BUDGET_SCRIPT });
  return {
    reserve: (key, cap, amount, seed, ttlMs, least) => client[COMMAND]!(key, cap, amount, seed, ttlMs, least),
    adjust: (key, delta) => client.incrby(key, delta),
  };
}
