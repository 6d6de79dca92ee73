/**
 * The operator's operations — keys, tenants, spend — as one interface with
 * two implementations: on the local SQLite file, or on a remote proxy through
 * its admin API. The CLI uses either; the admin API serves the local one.
 */
import type { TollgateDatabase } from '../storage/sqlite/open.js';
import { querySpend } from '../storage/sqlite/spend-reads.js';
import type { SpendGrouping, SpendQuery, SpendReport } from '../storage/spend-reads.js';
import type { Budget, LimitSpec, Policy } from '../domain/policy.js';
import { KeyStore, type IssuedKey, type KeyPatch, type KeyView, type TenantPatch, type TenantView } from '../keys/store.js';

interface CreateKeyInput {
  readonly name: string;
  readonly tenant?: string | undefined;
  readonly policy: Policy;
  readonly expiresAt?: number | null | undefined;
  readonly metadata?: Readonly<Record<string, string>> | undefined;
}

interface SpendRequest {
  /** A key reference (id, name or prefix). */
  readonly key?: string | undefined;
  readonly tenant?: string | undefined;
  readonly since: string;
  readonly until?: string | undefined;
  readonly by: SpendGrouping;
  /** Rows of the page (default: every row; the admin API always asks for a page: src/storage/spend-cursor.ts). */
  readonly limit?: number | undefined;
  /** The previous page's `nextCursor`. */
  readonly cursor?: string | undefined;
}

export interface AdminOps {
  createKey(input: CreateKeyInput): Promise<IssuedKey>;
  listKeys(options: { tenant?: string | undefined; includeRevoked?: boolean }): Promise<KeyView[]>;
  getKey(ref: string): Promise<KeyView>;
  updateKey(ref: string, patch: KeyPatch): Promise<KeyView>;
  revokeKey(ref: string): Promise<KeyView>;
  rotateKey(ref: string): Promise<IssuedKey>;
  createTenant(name: string, policy: { limits?: readonly LimitSpec[]; budget?: Budget; budgets?: readonly Budget[] }): Promise<TenantView>;
  listTenants(): Promise<TenantView[]>;
  getTenant(ref: string): Promise<TenantView>;
  updateTenant(ref: string, patch: TenantPatch): Promise<TenantView>;
  spend(request: SpendRequest): Promise<SpendReport>;
  close(): Promise<void>;
}

/** The operations on a local database (the CLI's default, and what the admin API serves). */
export function localAdminOps(
  database: TollgateDatabase,
  options: {
    now?: () => number;
    onChange?: () => void;
    closeDatabase?: boolean;
    /** Where spend reports are read (the proxy: on its read worker, src/storage/sqlite/read-worker.ts); default: here. */
    readSpend?: (query: SpendQuery, now: number) => Promise<SpendReport>;
  } = {},
): AdminOps {
  const store = new KeyStore(database, options.now);
  const now = options.now ?? Date.now;
  const readSpend = options.readSpend ?? (async (query: SpendQuery, at: number) => querySpend(database, query, at));
  const changed = <T>(value: T): T => {
    options.onChange?.();
    return value;
  };
  return {
    createKey: async (input) => changed(store.createKey(input)),
    listKeys: async (opts) => store.listKeys(opts),
    getKey: async (ref) => store.getKey(ref),
    updateKey: async (ref, patch) => changed(store.updateKey(ref, patch)),
    revokeKey: async (ref) => changed(store.revokeKey(ref)),
    rotateKey: async (ref) => changed(store.rotateKey(ref)),
    createTenant: async (name, policy) =>
      changed(
        store.createTenant(name, {
          limits: policy.limits ?? [],
          ...(policy.budget ? { budget: policy.budget } : {}),
          ...(policy.budgets?.length ? { budgets: policy.budgets } : {}),
        }),
      ),
    listTenants: async () => store.listTenants(),
    getTenant: async (ref) => store.getTenant(ref),
    updateTenant: async (ref, patch) => changed(store.updateTenant(ref, patch)),
    spend: async (request) =>
      readSpend(
        {
          keyId: request.key === undefined ? undefined : store.getKey(request.key).id,
          tenantId: request.tenant === undefined ? undefined : store.getTenant(request.tenant).id,
          since: request.since,
          until: request.until,
          by: request.by,
          limit: request.limit,
          cursor: request.cursor,
        },
        now(),
      ),
    close: async () => {
      if (options.closeDatabase) database.close();
    },
  };
}
