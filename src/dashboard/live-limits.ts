/**
 * What a key's buckets have left right now, as this process sees them: the
 * dashboard's key page and the `tollgate_ratelimit_bucket_fill_ratio` gauge
 * (sampled at scrape time for the keys seen most recently) read it here.
 */
import type { Caller } from '../domain/caller.js';
import { callerFor } from '../keys/caller.js';
import { bindingsFor, type Limiter } from '../limits/index.js';
import type { KeyCache } from '../keys/cache.js';
import type { AuthKey } from '../domain/keys.js';
import type { LimitSpec } from '../domain/policy.js';

/** One bucket of a key (its own, its tenant's or a global one) and what it has left. */
export interface LiveBucket {
  readonly level: 'key' | 'tenant' | 'global';
  readonly limitName: string;
  readonly remaining: number;
  readonly burst: number;
  readonly unit: string;
}

/** Keys remembered for the gauge; older ones drop out. */
const RECENT_CALLERS = 200;

export class LiveLimits {
  private readonly recent = new Map<string, Caller>();
  /** The key noted last (the Map's last entry while it is still in it). */
  private mostRecent: string | undefined;

  constructor(
    private readonly limiter: Limiter,
    private readonly globalLimits: readonly LimitSpec[],
    private readonly keys: KeyCache,
    private readonly keyById: (id: string) => AuthKey | undefined,
  ) {}

  /** Remembers a caller that has limits, most recent last. */
  noteCaller(caller: Caller): void {
    if (bindingsFor(caller, this.globalLimits).length === 0) return;
    const id = caller.key.id;
    // Already the most recent: updated in place. Deleting the one entry of a single busy key and
    // adding it again shrank and grew the Map's table through V8's runtime on every request.
    if (id === this.mostRecent && this.recent.has(id)) {
      this.recent.set(id, caller);
      return;
    }
    this.mostRecent = id;
    this.recent.delete(id);
    this.recent.set(id, caller);
    if (this.recent.size > RECENT_CALLERS) this.recent.delete(this.recent.keys().next().value!);
  }

  /** Every bucket of a caller, without taking anything. */
  bucketsOf(caller: Caller): LiveBucket[] {
    return bindingsFor(caller, this.globalLimits).map(({ limit, bucket }) => {
      const state = this.limiter.peek(bucket);
      const level = bucket.hashTag === 'global' ? 'global' : bucket.hashTag.startsWith('tenant:') ? 'tenant' : 'key';
      return { level, limitName: limit.name, remaining: state.remaining, burst: state.burst, unit: limit.unit };
    });
  }

  /** The dashboard's view of a key: tenant and global buckets named by their level. */
  forKey(keyId: string): Array<{ limitName: string; remaining: number; burst: number; unit: string }> {
    const key = this.keyById(keyId);
    if (key === undefined) return [];
    let caller: Caller;
    try {
      caller = callerFor(key, this.keys);
    } catch {
      return []; // a corrupt stored policy: nothing live to show
    }
    return this.bucketsOf(caller).map((entry) => ({
      limitName: entry.level === 'key' ? entry.limitName : `${entry.level} ${entry.limitName}`,
      remaining: entry.remaining,
      burst: entry.burst,
      unit: entry.unit,
    }));
  }

  /** Fill ratios of the recent keys' buckets, for the gauge. */
  *samples(keyLabel: (key: AuthKey) => string): Iterable<{ key: string; limit: string; ratio: number }> {
    for (const caller of this.recent.values()) {
      for (const entry of this.bucketsOf(caller)) {
        yield {
          key: entry.level === 'key' ? keyLabel(caller.key) : entry.level,
          limit: entry.limitName,
          ratio: entry.burst > 0 ? entry.remaining / entry.burst : 0,
        };
      }
    }
  }
}
