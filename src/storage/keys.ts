/**
 * Keys and tenants as the operator manages them (the CLI, the admin API):
 * one interface, kept in the node's SQLite file or, on replicas, in
 * PostgreSQL (src/storage/sqlite/keys.ts, src/storage/postgres/keys.ts). The
 * contract suite (test/integration/storage/keys.contract.test.ts) holds both
 * to the same answers.
 *
 * The proxy itself never asks this store on the request path: it reads the
 * node's own SQLite copy through its key cache (src/keys/cache.ts), which a
 * replica keeps current from PostgreSQL (src/storage/postgres/key-sync.ts).
 */
import type { Actor } from '../domain/admins.js';
import type { Policy } from '../domain/policy.js';
import type { AuthKey, AuthTenant, IssuedKey, KeyPatch, KeyView, NewKey, PauseOwner, TenantPatch, TenantView } from '../domain/keys.js';

export type { AuthKey, AuthTenant, IssuedKey, KeyPatch, KeyView, NewKey, TenantPatch, TenantView } from '../domain/keys.js';

/** What a tenant is created with: the policy fields a tenant takes (the others are a key's alone). */
export type NewTenantPolicy = Partial<Pick<Policy, 'limits' | 'budget' | 'budgets' | 'maxInFlight' | 'session'>>;

export interface KeyListOptions {
  /** Only this tenant's keys (id or name). */
  readonly tenant?: string | undefined;
  /** Revoked keys too. */
  readonly includeRevoked?: boolean | undefined;
}

/**
 * Keys and tenants. A key is named by its id, its visible prefix or its
 * name; a tenant by its id or name. Errors are TollgateErrors (`not_found`,
 * `conflict`, `ambiguous_reference`, `invalid_request`, `invalid_policy`);
 * a PostgreSQL that does not answer is `ledger_unavailable`.
 *
 * Every write that changes something appends one audit row (src/domain/audit.ts)
 * in its own transaction, naming `actor` (Tollgate itself when none is given:
 * the runaway stop, tests); a write that changes nothing appends none.
 */
export interface KeyStore {
  /** Issues a key (the secret is returned once, only its hash is kept); a tenant it names is created if new. */
  createKey(input: NewKey, actor?: Actor): Promise<IssuedKey>;
  listKeys(options?: KeyListOptions): Promise<KeyView[]>;
  getKey(ref: string): Promise<KeyView>;
  /** Changes what the patch names; `null` clears. A revoked key cannot be changed. */
  updateKey(ref: string, patch: KeyPatch, actor?: Actor): Promise<KeyView>;
  /** Revokes at once (again: no change). */
  revokeKey(ref: string, actor?: Actor): Promise<KeyView>;
  /** The runaway stop refuses the key from `at` with `reason` (already throttled or revoked: no change). */
  throttleKey(ref: string, at: number, reason: string, actor?: Actor): Promise<KeyView>;
  /** Lifts the key's throttle and every pause of its sessions and end users (none: no change). */
  resumeKey(ref: string, actor?: Actor): Promise<KeyView>;
  /** The runaway stop refuses one session or end user of the key from `at` (already paused, revoked, or MAX_ACTIVE_PAUSES reached: no change). */
  pauseOwner(ref: string, owner: PauseOwner, at: number, reason: string, actor?: Actor): Promise<KeyView>;
  /** Lifts one session's or end user's pause (none: no change). */
  releaseOwner(ref: string, owner: PauseOwner, actor?: Actor): Promise<KeyView>;
  /** An operator refuses the key until they lift it, as `actor` (already suspended or revoked: no change). The runaway stop never lifts it. */
  suspendKey(ref: string, actor?: Actor): Promise<KeyView>;
  /** Lifts an operator's suspension (none, or revoked: no change). */
  unsuspendKey(ref: string, actor?: Actor): Promise<KeyView>;
  /** A new secret for the same key (id, name, policy, history); the old one stops working. */
  rotateKey(ref: string, actor?: Actor): Promise<IssuedKey>;
  createTenant(name: string, policy?: NewTenantPolicy, actor?: Actor): Promise<TenantView>;
  listTenants(): Promise<TenantView[]>;
  getTenant(ref: string): Promise<TenantView>;
  updateTenant(ref: string, patch: TenantPatch, actor?: Actor): Promise<TenantView>;
}

/**
 * What the proxy's key cache reads (src/keys/cache.ts): always the node's own
 * SQLite file, which on a replica holds the copy kept from PostgreSQL, so
 * the request path never waits on the network. Synchronous on purpose.
 */
export interface KeyLookups {
  /** Highest version of keys and of tenants: a change anywhere moves one of them. */
  versions(): { keys: number; tenants: number };
  authKeyById(id: string): AuthKey | undefined;
  authKeyByHash(hash: string): AuthKey | undefined;
  /** Keys changed after `version` (rotated ones included, whose old hash must be forgotten). */
  authKeysChangedSince(version: number): AuthKey[];
  authTenant(id: string): AuthTenant | undefined;
  authTenants(sinceVersion?: number): AuthTenant[];
}
