/**
 * Keys and tenants in PostgreSQL: the KeyStore of src/storage/keys.ts for the
 * CLI and the admin API of replicas, with the same checks and answers as the
 * SQLite store (src/storage/sqlite/keys.ts). A PostgreSQL that does not
 * answer is a 503 `ledger_unavailable`, not a raw driver error and a 500.
 *
 * Every write takes one transaction-scoped advisory lock before it reads
 * `max(version)`: writes are rare, and serializing them is what makes
 * versions commit in order, so a node pulling "everything above the version I
 * have" never skips a change committed late with a smaller number.
 */
import type pg from 'pg';
import { TollgateError } from '../../domain/errors.js';
import type { PgPool } from './open.js';
import { answeredByPg, lockedWrite } from './locked-write.js';
import { generateKey, hashKey, newId, visiblePrefix } from '../key-format.js';
import { checkName, checkPolicy, mergePolicy, storedPolicy, tenantPolicy } from '../key-rules.js';
import type { Policy } from '../../domain/policy.js';
import type { KeyListOptions, KeyStore, NewTenantPolicy } from '../keys.js';
import type { IssuedKey, KeyPatch, KeyView, NewKey, PauseOwner, TenantPatch, TenantView } from '../../domain/keys.js';
import { changeRunaway, type RunawayChange } from '../../domain/owner-pauses.js';
import { keyParams, keyView, tenantView, type KeyRecord, type TenantRecord } from './key-records.js';
import { actorName, SYSTEM_ACTOR, type Actor } from '../../domain/admins.js';
import { keyChange, RUNAWAY_ACTIONS, tenantChange, type AuditChange } from '../../domain/audit.js';
import { appendAudit } from './audit.js';

/** "tollgate-keys" as a lock id (distinct from the migration lock in src/storage/postgres/open.ts). */
const KEYS_LOCK = '7813575385137752000';

type Queryable = Pick<pg.PoolClient, 'query'>;

export class PostgresKeyStore implements KeyStore {
  private readonly pool: PgPool;
  private readonly now: () => number;

  constructor(pool: PgPool, now: () => number = Date.now) {
    this.pool = pool;
    this.now = now;
  }

  private write<T>(fn: (client: Queryable) => Promise<T>): Promise<T> {
    return lockedWrite(this.pool, KEYS_LOCK, 'Keys and tenants live in', fn);
  }

  private answered<T>(fn: () => Promise<T>): Promise<T> {
    return answeredByPg('Keys and tenants live in', fn);
  }

  /** Appends the change's audit row in the write's transaction. */
  private async audit(client: Queryable, change: AuditChange): Promise<void> {
    await appendAudit(client, change, this.now());
  }

  /** The view of a key just written, after appending its audit row (`before`: the row it replaced; none when created). */
  private async audited(client: Queryable, actor: Actor, action: AuditChange['action'], before: KeyRecord | undefined, after: KeyRecord): Promise<KeyView> {
    const view = await keyView(this.now(), client, after);
    await this.audit(client, keyChange(actor, action, before === undefined ? null : await keyView(this.now(), client, before), view));
    return view;
  }

  private async nextVersion(client: Queryable, table: 'api_keys' | 'tenants'): Promise<number> {
    const result = await client.query<{ v: number }>(`SELECT coalesce(max(version), 0)::bigint AS v FROM ${table}`);
    return (result.rows[0]?.v ?? 0) + 1;
  }

  // ---- tenants -------------------------------------------------------------

  async createTenant(name: string, policy: NewTenantPolicy = {}, actor: Actor = SYSTEM_ACTOR): Promise<TenantView> {
    return this.write((client) => this.createTenantIn(client, name, tenantPolicy(policy), actor));
  }

  private async createTenantIn(client: Queryable, name: string, policy: Policy, actor: Actor): Promise<TenantView> {
    const cleanName = checkName(name, 'tenant');
    checkPolicy(policy);
    if ((await this.findTenant(client, cleanName)) !== undefined) throw new TollgateError('conflict', `a tenant named "${cleanName}" already exists`);
    const now = this.now();
    const row: TenantRecord = {
      id: newId('tn'),
      name: cleanName,
      policy: JSON.stringify(policy),
      created_at: now,
      updated_at: now,
      version: await this.nextVersion(client, 'tenants'),
    };
    await client.query('INSERT INTO tenants (id, name, policy, created_at, updated_at, version) VALUES ($1, $2, $3, $4, $5, $6)', [
      row.id,
      row.name,
      row.policy,
      row.created_at,
      row.updated_at,
      row.version,
    ]);
    const view = await tenantView(client, row);
    await this.audit(client, tenantChange(actor, 'tenant.create', null, view));
    return view;
  }

  private async ensureTenant(client: Queryable, name: string, actor: Actor): Promise<TenantRecord> {
    const existing = await this.findTenant(client, name.trim());
    if (existing !== undefined) return existing;
    const created = await this.createTenantIn(client, name, tenantPolicy({}), actor);
    return (await this.findTenant(client, created.id))!;
  }

  async listTenants(): Promise<TenantView[]> {
    return this.answered(async () => {
      const rows = (await this.pool.query<TenantRecord>('SELECT * FROM tenants ORDER BY name')).rows;
      return Promise.all(rows.map((row) => tenantView(this.pool, row)));
    });
  }

  async getTenant(ref: string): Promise<TenantView> {
    return this.answered(async () => tenantView(this.pool, await this.requireTenant(this.pool, ref)));
  }

  async updateTenant(ref: string, patch: TenantPatch, actor: Actor = SYSTEM_ACTOR): Promise<TenantView> {
    return this.write(async (client) => {
      const row = await this.requireTenant(client, ref);
      const policy = checkPolicy(mergePolicy(storedPolicy(row.policy, `tenant ${row.name}`), patch));
      const name = patch.name === undefined ? row.name : checkName(patch.name, 'tenant');
      if (name !== row.name && (await this.findTenant(client, name)) !== undefined) {
        throw new TollgateError('conflict', `a tenant named "${name}" already exists`);
      }
      const updated: TenantRecord = {
        ...row,
        name,
        policy: JSON.stringify(policy),
        updated_at: this.now(),
        version: await this.nextVersion(client, 'tenants'),
      };
      await client.query('UPDATE tenants SET name = $2, policy = $3, updated_at = $4, version = $5 WHERE id = $1', [
        row.id,
        updated.name,
        updated.policy,
        updated.updated_at,
        updated.version,
      ]);
      const after = await tenantView(client, updated);
      await this.audit(client, tenantChange(actor, 'tenant.update', await tenantView(client, row), after));
      return after;
    });
  }

  private async findTenant(client: Queryable, ref: string): Promise<TenantRecord | undefined> {
    return (await client.query<TenantRecord>('SELECT * FROM tenants WHERE id = $1 OR name = $1 LIMIT 1', [ref])).rows[0];
  }

  private async requireTenant(client: Queryable, ref: string): Promise<TenantRecord> {
    const row = await this.findTenant(client, ref);
    if (row === undefined) throw new TollgateError('not_found', `no tenant "${ref}"`);
    return row;
  }

  // ---- keys ----------------------------------------------------------------

  async createKey(input: NewKey, actor: Actor = SYSTEM_ACTOR): Promise<IssuedKey> {
    const name = checkName(input.name, 'key');
    const policy = checkPolicy(input.policy);
    return this.write(async (client) => {
      if ((await this.liveKeyNamed(client, name)) !== undefined) throw new TollgateError('conflict', `a key named "${name}" already exists`);
      const tenant = input.tenant === undefined ? undefined : await this.ensureTenant(client, input.tenant, actor);
      const key = generateKey();
      const now = this.now();
      const row: KeyRecord = {
        id: newId('key'),
        name,
        tenant_id: tenant?.id ?? null,
        key_hash: hashKey(key),
        prefix: visiblePrefix(key),
        created_at: now,
        updated_at: now,
        revoked_at: null,
        expires_at: input.expiresAt ?? null,
        rotated_at: null,
        throttled_at: null,
        throttle_reason: null,
        paused_owners: null,
        suspended_at: null,
        suspended_by: null,
        policy: JSON.stringify(policy),
        metadata: JSON.stringify(input.metadata ?? {}),
        version: await this.nextVersion(client, 'api_keys'),
      };
      await client.query(
        `INSERT INTO api_keys (id, name, tenant_id, key_hash, prefix, created_at, updated_at, revoked_at, expires_at, rotated_at, policy, metadata, version)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
        keyParams(row),
      );
      return { key, view: await this.audited(client, actor, 'key.create', undefined, row) };
    });
  }

  async listKeys(options: KeyListOptions = {}): Promise<KeyView[]> {
    return this.answered(async () => {
      const tenantId = options.tenant === undefined ? null : (await this.requireTenant(this.pool, options.tenant)).id;
      const rows = (
        await this.pool.query<KeyRecord>(
          `SELECT * FROM api_keys WHERE ($1::text IS NULL OR tenant_id = $1) AND ($2 OR revoked_at IS NULL) ORDER BY name, created_at`,
          [tenantId, options.includeRevoked ?? false],
        )
      ).rows;
      return Promise.all(rows.map((row) => keyView(this.now(), this.pool, row)));
    });
  }

  async getKey(ref: string): Promise<KeyView> {
    return this.answered(async () => keyView(this.now(), this.pool, await this.requireKey(this.pool, ref)));
  }

  async updateKey(ref: string, patch: KeyPatch, actor: Actor = SYSTEM_ACTOR): Promise<KeyView> {
    return this.write(async (client) => {
      const row = await this.requireKey(client, ref);
      if (row.revoked_at !== null) throw new TollgateError('invalid_request', `key ${row.name} (${row.id}) is revoked and cannot be changed`);
      const policy = checkPolicy(mergePolicy(storedPolicy(row.policy, `key ${row.name}`), patch));
      const name = patch.name === undefined ? row.name : checkName(patch.name, 'key');
      if (name !== row.name && (await this.liveKeyNamed(client, name)) !== undefined)
        throw new TollgateError('conflict', `a key named "${name}" already exists`);
      let tenantId = row.tenant_id;
      if (patch.tenant === null) tenantId = null;
      else if (patch.tenant !== undefined) tenantId = (await this.ensureTenant(client, patch.tenant, actor)).id;
      const metadata: Record<string, string> = { ...(JSON.parse(row.metadata) as Record<string, string>) };
      for (const [label, value] of Object.entries(patch.metadata ?? {})) {
        if (value === null) delete metadata[label];
        else metadata[label] = value;
      }
      const updated: KeyRecord = {
        ...row,
        name,
        tenant_id: tenantId,
        policy: JSON.stringify(policy),
        metadata: JSON.stringify(metadata),
        expires_at: patch.expiresAt === undefined ? row.expires_at : patch.expiresAt,
        updated_at: this.now(),
        version: await this.nextVersion(client, 'api_keys'),
      };
      await this.saveKey(client, updated);
      return this.audited(client, actor, 'key.update', row, updated);
    });
  }

  async revokeKey(ref: string, actor: Actor = SYSTEM_ACTOR): Promise<KeyView> {
    return this.write(async (client) => {
      const row = await this.requireKey(client, ref);
      if (row.revoked_at !== null) return keyView(this.now(), client, row);
      const now = this.now();
      const updated: KeyRecord = { ...row, revoked_at: now, updated_at: now, version: await this.nextVersion(client, 'api_keys') };
      await this.saveKey(client, updated);
      return this.audited(client, actor, 'key.revoke', row, updated);
    });
  }

  async rotateKey(ref: string, actor: Actor = SYSTEM_ACTOR): Promise<IssuedKey> {
    return this.write(async (client) => {
      const row = await this.requireKey(client, ref);
      if (row.revoked_at !== null) throw new TollgateError('invalid_request', `key ${row.name} (${row.id}) is revoked; create a new one instead`);
      const key = generateKey();
      const now = this.now();
      const updated: KeyRecord = {
        ...row,
        key_hash: hashKey(key),
        prefix: visiblePrefix(key),
        rotated_at: now,
        updated_at: now,
        version: await this.nextVersion(client, 'api_keys'),
      };
      await this.saveKey(client, updated);
      return { key, view: await this.audited(client, actor, 'key.rotate', row, updated) };
    });
  }

  private async saveKey(client: Queryable, row: KeyRecord): Promise<void> {
    await client.query(
      `UPDATE api_keys SET name = $2, tenant_id = $3, key_hash = $4, prefix = $5, created_at = $6, updated_at = $7, revoked_at = $8,
         expires_at = $9, rotated_at = $10, policy = $11, metadata = $12, version = $13, throttled_at = $14, throttle_reason = $15, paused_owners = $16,
         suspended_at = $17, suspended_by = $18 WHERE id = $1`,
      [...keyParams(row), row.throttled_at, row.throttle_reason, row.paused_owners, row.suspended_at, row.suspended_by],
    );
  }

  readonly throttleKey = (ref: string, at: number, reason: string, actor?: Actor): Promise<KeyView> =>
    this.changeRunaway(ref, { kind: 'throttle', at, reason }, actor);
  readonly resumeKey = (ref: string, actor?: Actor): Promise<KeyView> => this.changeRunaway(ref, { kind: 'resume', at: this.now() }, actor);
  readonly pauseOwner = (ref: string, owner: PauseOwner, at: number, reason: string, actor?: Actor): Promise<KeyView> =>
    this.changeRunaway(ref, { kind: 'pause', owner, at, reason }, actor);
  readonly releaseOwner = (ref: string, owner: PauseOwner, actor?: Actor): Promise<KeyView> =>
    this.changeRunaway(ref, { kind: 'release', owner, at: this.now() }, actor);

  readonly suspendKey = (ref: string, actor?: Actor): Promise<KeyView> => this.changeSuspension(ref, true, actor);
  readonly unsuspendKey = (ref: string, actor?: Actor): Promise<KeyView> => this.changeSuspension(ref, false, actor);

  /** Suspends the key, or lifts its suspension (revoked, or already so: no change, no row). */
  private async changeSuspension(ref: string, suspend: boolean, actor: Actor = SYSTEM_ACTOR): Promise<KeyView> {
    return this.write(async (client) => {
      const row = await this.requireKey(client, ref);
      if (row.revoked_at !== null || (row.suspended_at !== null) === suspend) return keyView(this.now(), client, row);
      const now = this.now();
      const by = suspend ? actorName(actor) : null;
      const version = await this.nextVersion(client, 'api_keys');
      const updated: KeyRecord = { ...row, suspended_at: suspend ? now : null, suspended_by: by, updated_at: now, version };
      await this.saveKey(client, updated);
      return this.audited(client, actor, suspend ? 'key.suspend' : 'key.unsuspend', row, updated);
    });
  }

  /** Pauses or resumes the key or one of its owners (a revoked key, or no change, keeps its version). */
  private async changeRunaway(ref: string, change: RunawayChange, actor: Actor = SYSTEM_ACTOR): Promise<KeyView> {
    return this.write(async (client) => {
      const row = await this.requireKey(client, ref);
      const stored = {
        throttledAt: row.throttled_at === null ? null : Number(row.throttled_at),
        throttleReason: row.throttle_reason,
        pausedOwners: row.paused_owners,
      };
      const columns = row.revoked_at === null ? changeRunaway(stored, change) : undefined;
      if (columns === undefined) return keyView(this.now(), client, row);
      const version = await this.nextVersion(client, 'api_keys');
      const updated: KeyRecord = {
        ...row,
        throttled_at: columns.throttledAt,
        throttle_reason: columns.throttleReason,
        paused_owners: columns.pausedOwners,
        version,
      };
      await this.saveKey(client, updated);
      return this.audited(client, actor, RUNAWAY_ACTIONS[change.kind], row, updated);
    });
  }

  /** Resolves a reference (id, visible prefix, or name) as the SQLite store does. */
  private async requireKey(client: Queryable, ref: string): Promise<KeyRecord> {
    const text = ref.trim();
    const byId = (await client.query<KeyRecord>('SELECT * FROM api_keys WHERE id = $1', [text])).rows[0];
    if (byId !== undefined) return byId;
    const byPrefix = (await client.query<KeyRecord>('SELECT * FROM api_keys WHERE prefix = $1', [text])).rows;
    if (byPrefix.length === 1) return byPrefix[0]!;
    if (byPrefix.length > 1) {
      throw new TollgateError('ambiguous_reference', `prefix ${text} matches several keys (${byPrefix.map((r) => r.id).join(', ')}); use an id`);
    }
    const live = await this.liveKeyNamed(client, text);
    if (live !== undefined) return live;
    const revoked = (await client.query<KeyRecord>('SELECT * FROM api_keys WHERE name = $1', [text])).rows;
    if (revoked.length === 1) return revoked[0]!;
    if (revoked.length > 1) {
      throw new TollgateError('ambiguous_reference', `several revoked keys are named "${text}" (${revoked.map((r) => r.id).join(', ')}); use an id`);
    }
    throw new TollgateError('not_found', `no key "${text}" (give its id, name or prefix)`);
  }

  private async liveKeyNamed(client: Queryable, name: string): Promise<KeyRecord | undefined> {
    return (await client.query<KeyRecord>('SELECT * FROM api_keys WHERE name = $1 AND revoked_at IS NULL', [name])).rows[0];
  }
}
