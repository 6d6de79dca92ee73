/**
 * The operator's operations on PostgreSQL (replicas): what the CLI uses when
 * TOLLGATE_DATABASE_URL is set, and what a replica's admin API serves — the
 * same AdminOps as on a SQLite file (ops.ts), so every caller is unchanged.
 */
import { pgUnavailable } from '../domain/errors.js';
import { isPgUnreachable, type PgPool } from '../storage/postgres/open.js';
import { PgKeyStore } from '../keys/pg-store.js';
import { queryPgSpend } from '../storage/postgres/spend-reads.js';
import type { AdminOps } from './ops.js';

export function pgAdminOps(pool: PgPool, options: { now?: () => number; onChange?: () => Promise<unknown>; closePool?: boolean } = {}): AdminOps {
  const store = new PgKeyStore(pool, options.now);
  const now = options.now ?? Date.now;
  // The node that made a change sees it before answering; the others by notification.
  const changed = async <T>(value: T): Promise<T> => {
    await options.onChange?.();
    return value;
  };
  return unreachableAs503({
    createKey: async (input) => changed(await store.createKey(input)),
    listKeys: (opts) => store.listKeys(opts),
    getKey: (ref) => store.getKey(ref),
    updateKey: async (ref, patch) => changed(await store.updateKey(ref, patch)),
    revokeKey: async (ref) => changed(await store.revokeKey(ref)),
    rotateKey: async (ref) => changed(await store.rotateKey(ref)),
    createTenant: async (name, policy) =>
      changed(await store.createTenant(name, { limits: policy.limits ?? [], ...(policy.budget ? { budget: policy.budget } : {}) })),
    listTenants: () => store.listTenants(),
    getTenant: (ref) => store.getTenant(ref),
    updateTenant: async (ref, patch) => changed(await store.updateTenant(ref, patch)),
    spend: async (request) =>
      queryPgSpend(
        pool,
        {
          keyId: request.key === undefined ? undefined : (await store.getKey(request.key)).id,
          tenantId: request.tenant === undefined ? undefined : (await store.getTenant(request.tenant)).id,
          since: request.since,
          until: request.until,
          by: request.by,
          limit: request.limit,
          cursor: request.cursor,
        },
        now(),
      ),
    close: async () => {
      if (options.closePool) await pool.end();
    },
  });
}

/**
 * Every operation's "PostgreSQL did not answer" as a 503 `ledger_unavailable`
 * (the admin API's answer, the CLI's message), not a raw driver error and a
 * 500; the driver's error stays the cause, for the log.
 */
function unreachableAs503(ops: AdminOps): AdminOps {
  const guarded = {} as Record<string, unknown>;
  for (const [name, op] of Object.entries(ops) as [string, (...args: unknown[]) => Promise<unknown>][]) {
    guarded[name] = async (...args: unknown[]) => {
      try {
        return await op(...args);
      } catch (error) {
        if (!isPgUnreachable(error)) throw error;
        throw pgUnavailable('Keys, tenants and spend live in', error);
      }
    };
  }
  return guarded as unknown as AdminOps;
}
