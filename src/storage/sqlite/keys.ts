/**
 * Keys and tenants in SQLite: the operations behind the CLI and the admin
 * API (as the KeyStore of src/storage/keys.ts: `async()`), and the lookups
 * behind the proxy's key cache (src/keys/cache.ts), which always read the
 * node's own file.
 *
 * A key or tenant is named by its id, its name, or (keys) its visible prefix.
 * Every change bumps the row's `version` (one more than the table's maximum,
 * inside the writing transaction), so a proxy polling `max(version)` sees it.
 */
import type Database from 'better-sqlite3';
import { and, asc, eq, gt, isNull, or, sql } from 'drizzle-orm';
import { TollgateError } from '../../domain/errors.js';
import type { TollgateDatabase } from './open.js';
import { apiKeys, tenants, type ApiKeyRow, type TenantRow } from './schema.js';
import type { Policy } from '../../domain/policy.js';
import { generateKey, hashKey, newId, visiblePrefix } from '../key-format.js';
import { readStoredPolicy } from '../../domain/policy-json.js';
import { changeRunaway, runawayFields, type RunawayChange } from '../../domain/owner-pauses.js';
import { checkName, checkPolicy, mergePolicy, storedPolicy, tenantPolicy } from '../key-rules.js';
import { KEY_VERSIONS_SQL } from '../directory.js';
import type { KeyListOptions, KeyLookups, KeyStore } from '../keys.js';
import {
  keyStatusOf,
  suspensionFields,
  type AuthKey,
  type AuthTenant,
  type IssuedKey,
  type KeyPatch,
  type KeyView,
  type NewKey,
  type TenantPatch,
  type TenantView,
} from '../../domain/keys.js';
import { liveKeyNamed, requireKeyRow, toAuthKey } from './key-rows.js';
import { actorName, SYSTEM_ACTOR, type Actor } from '../../domain/admins.js';
import { keyChange, RUNAWAY_ACTIONS, tenantChange, type AuditChange } from '../../domain/audit.js';
import { appendAudit } from './audit.js';

export class SqliteKeyStore implements KeyLookups {
  private readonly database: TollgateDatabase;
  private readonly now: () => number;
  /** The key cache's poll ({@link SqliteKeyStore.versions}), prepared on first use. */
  private versionsStatement: Database.Statement | undefined;

  constructor(database: TollgateDatabase, now: () => number = Date.now) {
    this.database = database;
    this.now = now;
  }

  private get db() {
    return this.database.db;
  }

  /** Runs `fn` in a write transaction taken up front (no upgrade deadlocks between processes). */
  private write<T>(fn: () => T): T {
    return this.database.sqlite.transaction(fn).immediate();
  }

  /** Appends the change's audit row (inside the caller's transaction). */
  private audit(change: AuditChange): void {
    appendAudit(this.database.sqlite, change, this.now());
  }

  private nextKeyVersion(): number {
    const row = this.db
      .select({ v: sql<number>`coalesce(max(${apiKeys.version}), 0)` })
      .from(apiKeys)
      .get();
    return (row?.v ?? 0) + 1;
  }

  private nextTenantVersion(): number {
    const row = this.db
      .select({ v: sql<number>`coalesce(max(${tenants.version}), 0)` })
      .from(tenants)
      .get();
    return (row?.v ?? 0) + 1;
  }

  /** The same operations as the KeyStore the CLI and the admin API use (src/storage/keys.ts). */
  async(): KeyStore {
    return {
      createKey: async (input, actor) => this.createKey(input, actor),
      listKeys: async (options) => this.listKeys(options),
      getKey: async (ref) => this.getKey(ref),
      updateKey: async (ref, patch, actor) => this.updateKey(ref, patch, actor),
      revokeKey: async (ref, actor) => this.revokeKey(ref, actor),
      rotateKey: async (ref, actor) => this.rotateKey(ref, actor),
      throttleKey: async (ref, at, reason, actor) => this.changeRunaway(ref, { kind: 'throttle', at, reason }, actor),
      resumeKey: async (ref, actor) => this.changeRunaway(ref, { kind: 'resume', at: this.now() }, actor),
      pauseOwner: async (ref, owner, at, reason, actor) => this.changeRunaway(ref, { kind: 'pause', owner, at, reason }, actor),
      releaseOwner: async (ref, owner, actor) => this.changeRunaway(ref, { kind: 'release', owner, at: this.now() }, actor),
      suspendKey: async (ref, actor) => this.changeSuspension(ref, true, actor),
      unsuspendKey: async (ref, actor) => this.changeSuspension(ref, false, actor),
      createTenant: async (name, policy = {}, actor) => this.createTenant(name, tenantPolicy(policy), actor),
      listTenants: async () => this.listTenants(),
      getTenant: async (ref) => this.getTenant(ref),
      updateTenant: async (ref, patch, actor) => this.updateTenant(ref, patch, actor),
    };
  }

  // ---- tenants -------------------------------------------------------------

  createTenant(name: string, policy: Policy = { limits: [] }, actor: Actor = SYSTEM_ACTOR): TenantView {
    const cleanName = checkName(name, 'tenant');
    checkPolicy(policy);
    return this.write(() => {
      if (this.findTenantRow(cleanName) !== undefined) {
        throw new TollgateError('conflict', `a tenant named "${cleanName}" already exists`);
      }
      const now = this.now();
      const row: TenantRow = {
        id: newId('tn'),
        name: cleanName,
        policy: JSON.stringify(policy),
        createdAt: now,
        updatedAt: now,
        version: this.nextTenantVersion(),
      };
      this.db.insert(tenants).values(row).run();
      const view = this.tenantView(row);
      this.audit(tenantChange(actor, 'tenant.create', null, view));
      return view;
    });
  }

  /** The tenant named `name`, created with no limits if it does not exist. */
  ensureTenant(name: string, actor: Actor = SYSTEM_ACTOR): TenantView {
    const existing = this.findTenantRow(name.trim());
    return existing === undefined ? this.createTenant(name, undefined, actor) : this.tenantView(existing);
  }

  listTenants(): TenantView[] {
    return this.db
      .select()
      .from(tenants)
      .orderBy(asc(tenants.name))
      .all()
      .map((row) => this.tenantView(row));
  }

  getTenant(ref: string): TenantView {
    return this.tenantView(this.requireTenantRow(ref));
  }

  updateTenant(ref: string, patch: TenantPatch, actor: Actor = SYSTEM_ACTOR): TenantView {
    return this.write(() => {
      const row = this.requireTenantRow(ref);
      const current = storedPolicy(row.policy, `tenant ${row.name}`);
      const policy = checkPolicy(mergePolicy(current, patch));
      const name = patch.name === undefined ? row.name : checkName(patch.name, 'tenant');
      if (name !== row.name && this.findTenantRow(name) !== undefined) {
        throw new TollgateError('conflict', `a tenant named "${name}" already exists`);
      }
      const updated: TenantRow = { ...row, name, policy: JSON.stringify(policy), updatedAt: this.now(), version: this.nextTenantVersion() };
      const before = this.tenantView(row);
      this.db.update(tenants).set(updated).where(eq(tenants.id, row.id)).run();
      const after = this.tenantView(updated);
      this.audit(tenantChange(actor, 'tenant.update', before, after));
      return after;
    });
  }

  private findTenantRow(ref: string): TenantRow | undefined {
    return this.db
      .select()
      .from(tenants)
      .where(or(eq(tenants.id, ref), eq(tenants.name, ref)))
      .get();
  }

  private requireTenantRow(ref: string): TenantRow {
    const row = this.findTenantRow(ref);
    if (row === undefined) throw new TollgateError('not_found', `no tenant "${ref}"`);
    return row;
  }

  private tenantView(row: TenantRow): TenantView {
    const count = this.db
      .select({ n: sql<number>`count(*)` })
      .from(apiKeys)
      .where(and(eq(apiKeys.tenantId, row.id), isNull(apiKeys.revokedAt)))
      .get();
    return {
      id: row.id,
      name: row.name,
      policy: storedPolicy(row.policy, `tenant ${row.name}`),
      createdAt: row.createdAt,
      updatedAt: row.updatedAt,
      keys: count?.n ?? 0,
    };
  }

  // ---- keys ----------------------------------------------------------------

  createKey(input: NewKey, actor: Actor = SYSTEM_ACTOR): IssuedKey {
    const name = checkName(input.name, 'key');
    const policy = checkPolicy(input.policy);
    return this.write(() => {
      if (liveKeyNamed(this.db, name) !== undefined) throw new TollgateError('conflict', `a key named "${name}" already exists`);
      const tenant = input.tenant === undefined ? undefined : this.ensureTenant(input.tenant, actor);
      const key = generateKey();
      const now = this.now();
      const row: ApiKeyRow = {
        id: newId('key'),
        name,
        tenantId: tenant?.id ?? null,
        keyHash: hashKey(key),
        prefix: visiblePrefix(key),
        createdAt: now,
        updatedAt: now,
        revokedAt: null,
        expiresAt: input.expiresAt ?? null,
        rotatedAt: null,
        throttledAt: null,
        throttleReason: null,
        pausedOwners: null,
        suspendedAt: null,
        suspendedBy: null,
        policy: JSON.stringify(policy),
        metadata: JSON.stringify(input.metadata ?? {}),
        version: this.nextKeyVersion(),
      };
      this.db.insert(apiKeys).values(row).run();
      return { key, view: this.audited(actor, 'key.create', undefined, row) };
    });
  }

  listKeys(options: KeyListOptions = {}): KeyView[] {
    const tenantId = options.tenant === undefined ? undefined : this.requireTenantRow(options.tenant).id;
    const rows = this.db
      .select()
      .from(apiKeys)
      .where(and(tenantId === undefined ? undefined : eq(apiKeys.tenantId, tenantId), options.includeRevoked ? undefined : isNull(apiKeys.revokedAt)))
      .orderBy(asc(apiKeys.name), asc(apiKeys.createdAt))
      .all();
    return rows.map((row) => this.keyView(row));
  }

  getKey(ref: string): KeyView {
    return this.keyView(requireKeyRow(this.db, ref));
  }

  updateKey(ref: string, patch: KeyPatch, actor: Actor = SYSTEM_ACTOR): KeyView {
    return this.write(() => {
      const row = requireKeyRow(this.db, ref);
      if (row.revokedAt !== null) throw new TollgateError('invalid_request', `key ${row.name} (${row.id}) is revoked and cannot be changed`);
      const policy = checkPolicy(mergePolicy(storedPolicy(row.policy, `key ${row.name}`), patch));
      const name = patch.name === undefined ? row.name : checkName(patch.name, 'key');
      if (name !== row.name && liveKeyNamed(this.db, name) !== undefined) throw new TollgateError('conflict', `a key named "${name}" already exists`);
      let tenantId = row.tenantId;
      if (patch.tenant === null) tenantId = null;
      else if (patch.tenant !== undefined) tenantId = this.ensureTenant(patch.tenant, actor).id;
      const metadata: Record<string, string> = { ...(JSON.parse(row.metadata) as Record<string, string>) };
      for (const [label, value] of Object.entries(patch.metadata ?? {})) {
        if (value === null) delete metadata[label];
        else metadata[label] = value;
      }
      const updated: ApiKeyRow = {
        ...row,
        name,
        tenantId,
        policy: JSON.stringify(policy),
        metadata: JSON.stringify(metadata),
        expiresAt: patch.expiresAt === undefined ? row.expiresAt : patch.expiresAt,
        updatedAt: this.now(),
        version: this.nextKeyVersion(),
      };
      this.db.update(apiKeys).set(updated).where(eq(apiKeys.id, row.id)).run();
      return this.audited(actor, 'key.update', row, updated);
    });
  }

  revokeKey(ref: string, actor: Actor = SYSTEM_ACTOR): KeyView {
    return this.write(() => {
      const row = requireKeyRow(this.db, ref);
      if (row.revokedAt !== null) return this.keyView(row);
      const now = this.now();
      const updated: ApiKeyRow = { ...row, revokedAt: now, updatedAt: now, version: this.nextKeyVersion() };
      this.db.update(apiKeys).set(updated).where(eq(apiKeys.id, row.id)).run();
      return this.audited(actor, 'key.revoke', row, updated);
    });
  }

  /** A new secret for the same key (id, name, policy, ledger history); the old secret stops working at once. */
  rotateKey(ref: string, actor: Actor = SYSTEM_ACTOR): IssuedKey {
    return this.write(() => {
      const row = requireKeyRow(this.db, ref);
      if (row.revokedAt !== null) throw new TollgateError('invalid_request', `key ${row.name} (${row.id}) is revoked; create a new one instead`);
      const key = generateKey();
      const now = this.now();
      const updated: ApiKeyRow = { ...row, keyHash: hashKey(key), prefix: visiblePrefix(key), rotatedAt: now, updatedAt: now, version: this.nextKeyVersion() };
      this.db.update(apiKeys).set(updated).where(eq(apiKeys.id, row.id)).run();
      return { key, view: this.audited(actor, 'key.rotate', row, updated) };
    });
  }

  private keyView(row: ApiKeyRow): KeyView {
    const tenant = row.tenantId === null ? undefined : this.db.select({ name: tenants.name }).from(tenants).where(eq(tenants.id, row.tenantId)).get();
    return {
      id: row.id,
      name: row.name,
      tenantId: row.tenantId,
      tenant: tenant?.name ?? null,
      prefix: row.prefix,
      status: keyStatusOf(row, this.now()),
      createdAt: row.createdAt,
      updatedAt: row.updatedAt,
      revokedAt: row.revokedAt,
      expiresAt: row.expiresAt,
      rotatedAt: row.rotatedAt,
      policy: storedPolicy(row.policy, `key ${row.name}`),
      metadata: JSON.parse(row.metadata) as Record<string, string>,
      ...runawayFields(row.throttledAt, row.throttleReason, row.pausedOwners),
      ...suspensionFields(row.suspendedAt, row.suspendedBy),
    };
  }

  /** The view of a key just written, after appending its audit row (`before`: the row it replaced; none when created). */
  private audited(actor: Actor, action: AuditChange['action'], before: ApiKeyRow | undefined, after: ApiKeyRow): KeyView {
    const view = this.keyView(after);
    this.audit(keyChange(actor, action, before === undefined ? null : this.keyView(before), view));
    return view;
  }

  /** Pauses or resumes the key or one of its owners (a revoked key, or no change, keeps its version). */
  private changeRunaway(ref: string, change: RunawayChange, actor: Actor = SYSTEM_ACTOR): KeyView {
    return this.write(() => {
      const row = requireKeyRow(this.db, ref);
      const columns = row.revokedAt === null ? changeRunaway(row, change) : undefined;
      if (columns === undefined) return this.keyView(row);
      const updated: ApiKeyRow = { ...row, ...columns, version: this.nextKeyVersion() };
      this.db.update(apiKeys).set(updated).where(eq(apiKeys.id, row.id)).run();
      return this.audited(actor, RUNAWAY_ACTIONS[change.kind], row, updated);
    });
  }

  /** Suspends the key, or lifts its suspension (revoked, or already so: no change, no row). */
  private changeSuspension(ref: string, suspend: boolean, actor: Actor = SYSTEM_ACTOR): KeyView {
    return this.write(() => {
      const row = requireKeyRow(this.db, ref);
      if (row.revokedAt !== null || (row.suspendedAt !== null) === suspend) return this.keyView(row);
      const now = this.now();
      const by = suspend ? actorName(actor) : null;
      const updated: ApiKeyRow = { ...row, suspendedAt: suspend ? now : null, suspendedBy: by, updatedAt: now, version: this.nextKeyVersion() };
      this.db.update(apiKeys).set(updated).where(eq(apiKeys.id, row.id)).run();
      return this.audited(actor, suspend ? 'key.suspend' : 'key.unsuspend', row, updated);
    });
  }

  // ---- the proxy's lookups -------------------------------------------------

  /**
   * Highest version of keys and of tenants: a change anywhere moves one of them. Prepared once: the key
   * cache polls it four times a second, and a prepare each time cost five times the read (20 against
   * 4 µs measured alone; more still in code that runs too seldom to be optimised).
   */
  versions(): { keys: number; tenants: number } {
    this.versionsStatement ??= this.database.sqlite.prepare(KEY_VERSIONS_SQL);
    return this.versionsStatement.get() as { keys: number; tenants: number };
  }

  authKeyById(id: string): AuthKey | undefined {
    const row = this.db.select().from(apiKeys).where(eq(apiKeys.id, id)).get();
    return row === undefined ? undefined : toAuthKey(row);
  }

  authKeyByHash(hash: string): AuthKey | undefined {
    const row = this.db.select().from(apiKeys).where(eq(apiKeys.keyHash, hash)).get();
    return row === undefined ? undefined : toAuthKey(row);
  }

  /** Keys changed after `version` (including rotated ones, whose old hash must be forgotten). */
  authKeysChangedSince(version: number): AuthKey[] {
    return this.db.select().from(apiKeys).where(gt(apiKeys.version, version)).all().map(toAuthKey);
  }

  authTenant(id: string): AuthTenant | undefined {
    const row = this.db.select().from(tenants).where(eq(tenants.id, id)).get();
    return row === undefined ? undefined : { id: row.id, name: row.name, policy: readStoredPolicy(row.policy), version: row.version };
  }

  authTenants(sinceVersion = 0): AuthTenant[] {
    return this.db
      .select()
      .from(tenants)
      .where(gt(tenants.version, sinceVersion))
      .all()
      .map((row) => ({ id: row.id, name: row.name, policy: readStoredPolicy(row.policy), version: row.version }));
  }
}
