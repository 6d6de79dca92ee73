/**
 * The proxy's view of keys and tenants: an in-memory map by key hash, kept in
 * step with the database by polling `max(version)` (a few hundred µs every
 * 250 ms), so a revoke, rotate or update from the CLI — another process —
 * takes effect within a second without a restart.
 */
import { hashKey } from '../storage/key-format.js';
import type { AuthKey, AuthTenant, KeyLookups } from '../storage/keys.js';

export interface KeyCacheOptions {
  /** How often to look for changes (default 250 ms). */
  readonly pollMs?: number;
  /** Most unknown hashes remembered (someone trying random keys must not grow memory). */
  readonly maxNegative?: number;
  readonly onError?: (error: unknown) => void;
}

/** Known secrets remembered with their hash (cleared when full: a memo, not a store). */
const MAX_REMEMBERED_HASHES = 10_000;

export class KeyCache {
  private readonly store: KeyLookups;
  private readonly pollMs: number;
  private readonly maxNegative: number;
  private readonly onError: ((error: unknown) => void) | undefined;
  private readonly byHash = new Map<string, AuthKey>();
  private readonly hashById = new Map<string, string>();
  private readonly unknown = new Set<string>();
  /** Presented secrets of keys found, and their hashes. */
  private readonly hashes = new Map<string, string>();
  private readonly tenantsById = new Map<string, AuthTenant>();
  private keysVersion = 0;
  private tenantsVersion = 0;
  private timer: NodeJS.Timeout | undefined;

  constructor(store: KeyLookups, options: KeyCacheOptions = {}) {
    this.store = store;
    this.pollMs = options.pollMs ?? 250;
    this.maxNegative = options.maxNegative ?? 10_000;
    this.onError = options.onError;
    const versions = store.versions();
    this.keysVersion = versions.keys;
    this.tenantsVersion = versions.tenants;
    for (const tenant of store.authTenants()) this.tenantsById.set(tenant.id, tenant);
  }

  /** Starts polling for changes. */
  start(): void {
    if (this.timer !== undefined) return;
    this.timer = setInterval(() => this.refresh(), this.pollMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
  }

  /** The key whose secret is `key`, or undefined. One hash, then a map lookup (a database read on first sight). */
  lookup(key: string): AuthKey | undefined {
    const remembered = this.hashes.get(key);
    const hash = remembered ?? hashKey(key);
    const cached = this.byHash.get(hash);
    if (cached !== undefined) {
      if (remembered === undefined) this.rememberHash(key, hash);
      return cached;
    }
    if (this.unknown.has(hash)) return undefined;
    const found = this.store.authKeyByHash(hash);
    if (found === undefined) {
      if (this.unknown.size >= this.maxNegative) this.unknown.clear();
      this.unknown.add(hash);
      return undefined;
    }
    this.remember(found);
    this.rememberHash(key, hash);
    return found;
  }

  /**
   * Known keys skip SHA-256 next time. A rotated-away secret still maps to its
   * old hash, which nothing answers to any more, so it keeps failing.
   */
  private rememberHash(key: string, hash: string): void {
    if (this.hashes.size >= MAX_REMEMBERED_HASHES) this.hashes.clear();
    this.hashes.set(key, hash);
  }

  /** The tenant (a database read on first sight: a new key may name a tenant newer than the last poll). */
  tenant(id: string): AuthTenant | undefined {
    const cached = this.tenantsById.get(id);
    if (cached !== undefined) return cached;
    const found = this.store.authTenant(id);
    if (found !== undefined) this.tenantsById.set(id, found);
    return found;
  }

  /** Picks up changes made since the last look (by any process). */
  refresh(): void {
    try {
      const versions = this.store.versions();
      if (versions.keys !== this.keysVersion) {
        for (const key of this.store.authKeysChangedSince(this.keysVersion)) {
          // Only keys already in memory need replacing; others load on first use.
          if (this.hashById.has(key.id)) this.remember(key);
          this.unknown.delete(key.keyHash);
        }
        this.keysVersion = versions.keys;
      }
      if (versions.tenants !== this.tenantsVersion) {
        for (const tenant of this.store.authTenants(this.tenantsVersion)) this.tenantsById.set(tenant.id, tenant);
        this.tenantsVersion = versions.tenants;
      }
    } catch (error) {
      this.onError?.(error);
    }
  }

  private remember(key: AuthKey): void {
    const previous = this.hashById.get(key.id);
    // A rotated key's old secret must stop working: forget its old hash.
    if (previous !== undefined && previous !== key.keyHash) this.byHash.delete(previous);
    this.hashById.set(key.id, key.keyHash);
    this.byHash.set(key.keyHash, key);
  }
}
