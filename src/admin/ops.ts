/**
 * The operator's operations — keys, tenants, spend — as one interface with
 * two implementations: on this installation's store (keys and tenants in the
 * KeyStore of src/storage/keys.ts, on SQLite or PostgreSQL alike), or on a
 * remote proxy through its admin API (client.ts). The CLI uses either; the
 * admin API serves the first.
 */
import { pgUnavailable } from '../domain/errors.js';
import { isPgUnreachable } from '../storage/postgres/open.js';
import type { SpendGrouping, SpendQuery, SpendReport } from '../storage/spend-reads.js';
import type { IssuedKey, KeyListOptions, KeyPatch, KeyStore, KeyView, NewKey, NewTenantPolicy, TenantPatch, TenantView } from '../storage/keys.js';
import type { PauseOwner } from '../domain/keys.js';

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
  createKey(input: NewKey): Promise<IssuedKey>;
  listKeys(options: KeyListOptions): Promise<KeyView[]>;
  getKey(ref: string): Promise<KeyView>;
  updateKey(ref: string, patch: KeyPatch): Promise<KeyView>;
  revokeKey(ref: string): Promise<KeyView>;
  /** Lifts the runaway stop's pause: of one session or end user, or of the key and everything paused on it. */
  resumeKey(ref: string, owner?: PauseOwner): Promise<KeyView>;
  rotateKey(ref: string): Promise<IssuedKey>;
  createTenant(name: string, policy: NewTenantPolicy): Promise<TenantView>;
  listTenants(): Promise<TenantView[]>;
  getTenant(ref: string): Promise<TenantView>;
  updateTenant(ref: string, patch: TenantPatch): Promise<TenantView>;
  spend(request: SpendRequest): Promise<SpendReport>;
  close(): Promise<void>;
}

/** Where spend reports are read (the proxy: on its read worker, src/storage/sqlite/read-worker.ts; replicas: PostgreSQL). */
export type SpendReader = (query: SpendQuery, now: number) => Promise<SpendReport>;

/** The operations on this installation's own store (what the CLI opens without --url, and what the admin API serves). */
export function storeAdminOps(
  keys: KeyStore,
  options: {
    readSpend: SpendReader;
    now?: () => number;
    /** After every change (the node that made it sees it before answering; the others by polling or notification). */
    onChange?: () => unknown;
    /** Closes what was opened for these operations (the CLI's database or pool). */
    close?: () => Promise<void> | void;
  },
): AdminOps {
  const now = options.now ?? Date.now;
  const changed = async <T>(value: T): Promise<T> => {
    await options.onChange?.();
    return value;
  };
  return {
    createKey: async (input) => changed(await keys.createKey(input)),
    listKeys: (opts) => keys.listKeys(opts),
    getKey: (ref) => keys.getKey(ref),
    updateKey: async (ref, patch) => changed(await keys.updateKey(ref, patch)),
    revokeKey: async (ref) => changed(await keys.revokeKey(ref)),
    resumeKey: async (ref, owner) => changed(await (owner === undefined ? keys.resumeKey(ref) : keys.releaseOwner(ref, owner))),
    rotateKey: async (ref) => changed(await keys.rotateKey(ref)),
    createTenant: async (name, policy) => changed(await keys.createTenant(name, policy)),
    listTenants: () => keys.listTenants(),
    getTenant: (ref) => keys.getTenant(ref),
    updateTenant: async (ref, patch) => changed(await keys.updateTenant(ref, patch)),
    spend: async (request) => {
      const query: SpendQuery = {
        keyId: request.key === undefined ? undefined : (await keys.getKey(request.key)).id,
        tenantId: request.tenant === undefined ? undefined : (await keys.getTenant(request.tenant)).id,
        since: request.since,
        until: request.until,
        by: request.by,
        limit: request.limit,
        cursor: request.cursor,
      };
      try {
        return await options.readSpend(query, now());
      } catch (error) {
        // A replica's spend: "PostgreSQL did not answer" as the 503 every other operation gives.
        if (!isPgUnreachable(error)) throw error;
        throw pgUnavailable('Keys, tenants and spend live in', error);
      }
    },
    close: async () => {
      await options.close?.();
    },
  };
}
