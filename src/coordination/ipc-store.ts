/**
 * The limiter and the budget counters of a worker of `tollgate serve
 * --workers N` when no Redis is configured: the lease store's escrow leases
 * (lease-store.ts, docs/leases.md) with the primary in Redis' place
 * (ipc-primary.ts). Same node code, same protocol, same guarantee; only the
 * transport differs, and the contract tests run over it
 * (test/integration/coordination/ipc-store.contract.test.ts).
 */
import type { BudgetCounters } from './budget-counters.js';
import type { IpcClient } from './ipc-client.js';
import type { LeaseOutcome, LeaseTransport } from './lease-script.js';
import { createLeaseLimiter, type LeaseLimiter, type LeaseLimiterOptions } from './lease-store.js';

/** Lease calls answered by the primary. */
function ipcLeaseTransport(client: IpcClient): LeaseTransport {
  return {
    isClosed: () => client.isClosed(),
    async run(calls, timeoutMs): Promise<LeaseOutcome[]> {
      try {
        // Sent at once: lease-calls.ts gathered this tick's calls already.
        const replies = await client.call('lease', { calls }, timeoutMs, true);
        return replies.map((reply) => ({ ok: true, reply }));
      } catch (error) {
        const fault = error instanceof Error ? error : new Error(String(error));
        return calls.map(() => ({ ok: false, error: fault }));
      }
    },
  };
}

/**
 * Budget counters kept by the primary: a reservation waits for its answer
 * (bounded like a Redis call; see budgets/shared-budgets.ts), an adjustment does not
 * (it leaves with the turn's batch, summed with the others on its counter).
 */
export function ipcBudgetCounters(client: IpcClient, timeoutMs: number): BudgetCounters {
  return {
    reserve: (key, cap, amount, seed, ttlMs, least) => client.call('budget-reserve', { args: [key, cap, amount, seed, ttlMs, least] }, timeoutMs),
    adjust: (key, delta) => client.adjust(key, delta),
  };
}

/** A lease limiter whose leases come from the primary. */
export function createIpcLimiter(client: IpcClient, options: Omit<LeaseLimiterOptions, 'redis' | 'transport'> = {}): LeaseLimiter {
  return createLeaseLimiter({ ...options, transport: ipcLeaseTransport(client) });
}
