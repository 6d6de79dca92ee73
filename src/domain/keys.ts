/** Keys and tenants as the CLI, the admin API and the proxy's key cache see them. */
import type { Budget, EndUserPolicy, LimitSpec, Policy, PolicyError, SessionPolicy, TagBudget } from './policy.js';

/** `suspended`: an operator refuses the key until they lift it (docs/admins.md); a revoked key shows revoked, a suspended one suspended even past its expiry. */
export type KeyStatus = 'active' | 'suspended' | 'revoked' | 'expired';

/** An operator's suspension of a key: since when, and who (the actor's name). */
export interface KeySuspension {
  readonly at: number;
  readonly by: string;
}

/** A key as people and the admin API see it: never its hash, never the key. */
export interface KeyView {
  readonly id: string;
  readonly name: string;
  readonly tenantId: string | null;
  readonly tenant: string | null;
  readonly prefix: string;
  readonly status: KeyStatus;
  readonly createdAt: number;
  readonly updatedAt: number;
  readonly revokedAt: number | null;
  readonly expiresAt: number | null;
  readonly rotatedAt: number | null;
  readonly policy: Policy;
  readonly metadata: Readonly<Record<string, string>>;
  /** Set while the runaway stop refuses the key (src/alerts/runaway.ts). */
  readonly throttle?: KeyThrottle | undefined;
  /** When it was last resumed (its spend before then is not judged again). */
  readonly resumedAt?: number | undefined;
  /** The key's sessions and end users the runaway stop paused, and those it released since (owner-pauses.ts). */
  readonly pauses?: readonly OwnerPause[] | undefined;
  /** Set while an operator suspends the key; the runaway stop never lifts it. */
  readonly suspended?: KeySuspension | undefined;
}

/** A runaway key's throttle: since when, and the message its refusals carry. */
interface KeyThrottle {
  readonly at: number;
  readonly reason: string;
}

/** One of a key's agent sessions or end users, which the runaway stop can pause without the rest of the key. */
export interface PauseOwner {
  readonly level: 'session' | 'end_user';
  readonly name: string;
}

/** A paused owner (with the message its refusals carry), or one released at `at` (no reason). */
export interface OwnerPause extends PauseOwner {
  readonly at: number;
  readonly reason?: string | undefined;
}

/** A key just created or rotated: the only time the secret exists outside the client. */
export interface IssuedKey {
  readonly key: string;
  readonly view: KeyView;
}

export interface TenantView {
  readonly id: string;
  readonly name: string;
  readonly policy: Policy;
  readonly createdAt: number;
  readonly updatedAt: number;
  readonly keys: number;
}

export interface NewKey {
  readonly name: string;
  readonly tenant?: string | undefined;
  readonly policy: Policy;
  readonly expiresAt?: number | null | undefined;
  readonly metadata?: Readonly<Record<string, string>> | undefined;
}

/** Fields to change; `null` clears (tenant, budget, models, expiry, a metadata label). */
export interface KeyPatch {
  readonly name?: string | undefined;
  readonly tenant?: string | null | undefined;
  readonly limits?: readonly LimitSpec[] | undefined;
  readonly budget?: Budget | null | undefined;
  /** More budgets in other periods (replaces the list; `null` clears it). */
  readonly budgets?: readonly Budget[] | null | undefined;
  /** Requests in flight at once (`null`: back to the default). */
  readonly maxInFlight?: number | null | undefined;
  /** Limits and budgets every end user of the key gets for itself (replaces them; `null` clears). */
  readonly endUser?: EndUserPolicy | null | undefined;
  /** Limits and budgets every agent session of the key gets for itself (replaces them; `null` clears). */
  readonly session?: SessionPolicy | null | undefined;
  /** Budgets per tag (replaces the list; `null` clears it). */
  readonly tagBudgets?: readonly TagBudget[] | null | undefined;
  readonly models?: readonly string[] | null | undefined;
  /** Budget-aware downgrade (`null` removes it). */
  readonly downgrade?: Policy['downgrade'] | null | undefined;
  /** The runaway stop's rule for this key (`null`: back to the config's). */
  readonly runaway?: Policy['runaway'] | null | undefined;
  readonly expiresAt?: number | null | undefined;
  readonly metadata?: Readonly<Record<string, string | null>> | undefined;
}

export interface TenantPatch {
  readonly name?: string | undefined;
  readonly limits?: readonly LimitSpec[] | undefined;
  readonly budget?: Budget | null | undefined;
  /** More budgets in other periods (replaces the list; `null` clears it). */
  readonly budgets?: readonly Budget[] | null | undefined;
  /** Requests in flight at once (`null`: back to the default). */
  readonly maxInFlight?: number | null | undefined;
  /** Limits and budgets every agent session of each of the tenant's keys gets (replaces them; `null` clears). */
  readonly session?: SessionPolicy | null | undefined;
}

/** What the proxy's auth needs about a key; the policy may be an error (fail closed). */
export interface AuthKey {
  readonly id: string;
  readonly name: string;
  readonly keyHash: string;
  readonly tenantId: string | null;
  readonly revokedAt: number | null;
  readonly expiresAt: number | null;
  readonly policy: Policy | PolicyError;
  readonly version: number;
  readonly throttle?: KeyThrottle | undefined;
  readonly resumedAt?: number | undefined;
  readonly pauses?: readonly OwnerPause[] | undefined;
  /** When an operator suspended the key (refused with 403 key_suspended until lifted). */
  readonly suspendedAt?: number | undefined;
}

/** A view's suspension, from a key row's two columns (both stores keep them alike). */
export function suspensionFields(at: number | null, by: string | null): { suspended?: KeySuspension } {
  return at === null ? {} : { suspended: { at, by: by ?? '' } };
}

/** The status people see for a key at `now`. */
export function keyStatusOf(
  key: { readonly revokedAt: number | null; readonly expiresAt: number | null; readonly suspendedAt?: number | null | undefined },
  now: number,
): KeyStatus {
  if (key.revokedAt !== null) return 'revoked';
  if (key.suspendedAt !== null && key.suspendedAt !== undefined) return 'suspended';
  if (key.expiresAt !== null && key.expiresAt <= now) return 'expired';
  return 'active';
}

export interface AuthTenant {
  readonly id: string;
  readonly name: string;
  readonly policy: Policy | PolicyError;
  readonly version: number;
}
