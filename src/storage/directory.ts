/**
 * Every key and tenant as the dashboard lists them, with their policies
 * parsed. Re-read only when a key or tenant changed (their `version`s), and
 * a policy text already parsed is not parsed again (keys often share one).
 */
import { PolicyError, type Policy } from '../domain/policy.js';
import { readStoredPolicy } from '../domain/policy-json.js';

/**
 * The highest version of the keys and of the tenants (SQLite and PostgreSQL alike): a change to any
 * key or tenant, by any process, moves one of them. The proxy's key cache polls it four times a
 * second, the dashboard's directory before every read.
 */
export const KEY_VERSIONS_SQL = 'SELECT (SELECT coalesce(max(version), 0) FROM api_keys) AS keys, (SELECT coalesce(max(version), 0) FROM tenants) AS tenants';

/** A key as the dashboard lists it (never its hash or secret). */
export interface KeyRecord {
  readonly id: string;
  readonly name: string;
  readonly tenantId: string | null;
  readonly tenant: string | null;
  readonly prefix: string;
  readonly createdAt: number;
  readonly revokedAt: number | null;
  readonly expiresAt: number | null;
  readonly suspendedAt: number | null;
  /** Undefined when the stored policy is corrupt (the key then fails closed). */
  readonly policy: Policy | undefined;
  readonly policyError: string | undefined;
}

/** A tenant, for names, filters and tenant budgets. */
interface TenantRecord {
  readonly id: string;
  readonly name: string;
  readonly policy: Policy | undefined;
}

/** Every key and tenant, parsed once per change. */
export interface Directory {
  readonly keys: readonly KeyRecord[];
  readonly keysById: ReadonlyMap<string, KeyRecord>;
  readonly tenants: readonly TenantRecord[];
  readonly tenantsById: ReadonlyMap<string, TenantRecord>;
}

type ParsedPolicy = { readonly policy: Policy | undefined; readonly error: string | undefined };

/** A key row as the directory's query returns it (policy as stored text). */
export type StoredKeyRow = Omit<KeyRecord, 'policy' | 'policyError'> & { readonly policy: string };
/** A tenant row as stored. */
export type StoredTenantRow = { readonly id: string; readonly name: string; readonly policy: string };

/**
 * The parsed directory of one database, rebuilt only when the stored keys or
 * tenants changed (their highest `version`s, the `signature`). The SQLite and
 * PostgreSQL reads (sqlite/directory.ts, postgres/dashboard-reads.ts) fetch the rows; this parses them.
 */
export class DirectoryCache {
  private cached: { signature: string; directory: Directory } | undefined;
  /** Parsed policies by their stored text. */
  private policies = new Map<string, ParsedPolicy>();

  /** The directory read at `signature`, if nothing changed since. */
  current(signature: string): Directory | undefined {
    return this.cached?.signature === signature ? this.cached.directory : undefined;
  }

  /** Parses the rows read at `signature` (policy texts already parsed are not parsed again). */
  build(signature: string, keyRows: readonly StoredKeyRow[], tenantRows: readonly StoredTenantRow[]): Directory {
    const parsed = new Map<string, ParsedPolicy>();
    const policyOf = (text: string): ParsedPolicy => {
      let result = this.policies.get(text) ?? parsed.get(text);
      if (result === undefined) {
        const read = readStoredPolicy(text);
        result = read instanceof PolicyError ? { policy: undefined, error: read.message } : { policy: read, error: undefined };
      }
      parsed.set(text, result);
      return result;
    };
    const keys = keyRows.map((row): KeyRecord => {
      const { policy, error } = policyOf(row.policy);
      return { ...row, policy, policyError: error };
    });
    const tenants = tenantRows.map((row): TenantRecord => ({ id: row.id, name: row.name, policy: policyOf(row.policy).policy }));
    this.policies = parsed;
    const directory: Directory = {
      keys,
      keysById: new Map(keys.map((key) => [key.id, key])),
      tenants,
      tenantsById: new Map(tenants.map((tenant) => [tenant.id, tenant])),
    };
    this.cached = { signature, directory };
    return directory;
  }
}
