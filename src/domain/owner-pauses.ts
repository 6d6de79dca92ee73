/**
 * The runaway stop's pauses below a key: one agent session or one end user
 * whose spend ran away is refused while the key's other sessions and users
 * go on (src/alerts/runaway-stop.ts decides, src/pipeline/refusals.ts
 * refuses). They are kept on the key's own row, as JSON beside its own
 * throttle, so a pause reaches every node and worker the way any key change
 * does (src/keys/cache.ts, and from PostgreSQL on replicas), and the list is
 * bounded so a key's row stays small whatever its tenants send.
 *
 * Pure: the stores read and write the list with these functions.
 */
import type { OwnerPause, PauseOwner } from './keys.js';

/** Owners of one key paused at once, at most; the monitor pauses the whole key rather than one more. */
export const MAX_ACTIVE_PAUSES = 50;
/** Released owners remembered (when, so spend before an operator's resume is not judged again), at most. */
const MAX_RELEASED = 50;

const same = (a: PauseOwner, b: PauseOwner): boolean => a.level === b.level && a.name === b.name;

/** The paused entries (those with a message). */
export function activePauses(pauses: readonly OwnerPause[] | undefined): OwnerPause[] {
  return (pauses ?? []).filter((pause) => pause.reason !== undefined);
}

/** The entry for `owner`, paused or released, if any. */
export function pauseOf(pauses: readonly OwnerPause[] | undefined, owner: PauseOwner): OwnerPause | undefined {
  return pauses?.find((pause) => same(pause, owner));
}

/**
 * The pause that refuses a request of this session or end user, if any. A
 * loop over at most {@link MAX_ACTIVE_PAUSES} entries, and none at all for
 * the keys nothing was paused on.
 */
export function pausedFor(pauses: readonly OwnerPause[] | undefined, session: string | undefined, endUser: string | undefined): OwnerPause | undefined {
  if (pauses === undefined || pauses.length === 0) return undefined;
  for (const pause of pauses) {
    if (pause.reason === undefined) continue;
    if (pause.level === 'session' ? pause.name === session : pause.name === endUser) return pause;
  }
  return undefined;
}

/** The list with `owner` paused from `at`; undefined when nothing changes (already paused, or the bound reached). */
export function withPause(pauses: readonly OwnerPause[], owner: PauseOwner, at: number, reason: string): OwnerPause[] | undefined {
  if (pauseOf(pauses, owner)?.reason !== undefined) return undefined;
  if (activePauses(pauses).length >= MAX_ACTIVE_PAUSES) return undefined;
  return bounded([...pauses.filter((pause) => !same(pause, owner)), { level: owner.level, name: owner.name, at, reason }]);
}

/** The list with `owner` released at `at` (every paused owner when undefined); undefined when nothing changes. */
export function withResume(pauses: readonly OwnerPause[], owner: PauseOwner | undefined, at: number): OwnerPause[] | undefined {
  let changed = false;
  const next = pauses.map((pause) => {
    if (pause.reason === undefined || (owner !== undefined && !same(pause, owner))) return pause;
    changed = true;
    return { level: pause.level, name: pause.name, at };
  });
  return changed ? bounded(next) : undefined;
}

/** Every paused entry, and the most recently released ones up to the bound. */
function bounded(pauses: OwnerPause[]): OwnerPause[] {
  const released = pauses.filter((pause) => pause.reason === undefined);
  if (released.length <= MAX_RELEASED) return pauses;
  const keep = new Set(released.sort((a, b) => b.at - a.at).slice(0, MAX_RELEASED));
  return pauses.filter((pause) => pause.reason !== undefined || keep.has(pause));
}

/** The stored column (null when empty), read back by {@link readPauses}. */
export function writePauses(pauses: readonly OwnerPause[]): string | null {
  return pauses.length === 0 ? null : JSON.stringify(pauses);
}

/** The stored column as a list; a value that is not one reads as empty (a pause lost is a pause the monitor makes again). */
export function readPauses(text: string | null | undefined): OwnerPause[] {
  if (text === null || text === undefined || text === '') return [];
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return [];
  }
  if (!Array.isArray(parsed)) return [];
  return parsed.flatMap((item: unknown): OwnerPause[] => {
    if (typeof item !== 'object' || item === null) return [];
    const { level, name, at, reason } = item as Record<string, unknown>;
    if ((level !== 'session' && level !== 'end_user') || typeof name !== 'string' || typeof at !== 'number') return [];
    return [typeof reason === 'string' ? { level, name, at, reason } : { level, name, at }];
  });
}

/** How a stored row's runaway columns read on a key: its own throttle or last resume, and its owners' pauses. */
export function runawayFields(
  throttledAt: number | string | null,
  throttleReason: string | null,
  pausesText: string | null | undefined,
): { throttle?: { at: number; reason: string }; resumedAt?: number; pauses?: OwnerPause[] } {
  const pauses = readPauses(pausesText);
  const own =
    throttledAt === null
      ? {}
      : throttleReason === null
        ? { resumedAt: Number(throttledAt) }
        : { throttle: { at: Number(throttledAt), reason: throttleReason } };
  return pauses.length === 0 ? own : { ...own, pauses };
}

/** A key row's runaway columns, as both stores keep them. */
export interface RunawayColumns {
  readonly throttledAt: number | null;
  readonly throttleReason: string | null;
  readonly pausedOwners: string | null;
}

/** What the runaway stop or an operator does to a key: pause or resume it whole, or one of its owners. */
export type RunawayChange =
  | { readonly kind: 'throttle'; readonly at: number; readonly reason: string }
  | { readonly kind: 'pause'; readonly owner: PauseOwner; readonly at: number; readonly reason: string }
  | { readonly kind: 'release'; readonly owner: PauseOwner; readonly at: number }
  /** An operator's `keys resume`: the key and every owner paused on it. */
  | { readonly kind: 'resume'; readonly at: number };

/** The columns after `change`, or undefined when nothing changes (the stores then keep the key's version). */
export function changeRunaway(columns: RunawayColumns, change: RunawayChange): RunawayColumns | undefined {
  const pauses = readPauses(columns.pausedOwners);
  switch (change.kind) {
    case 'throttle':
      return columns.throttleReason !== null ? undefined : { ...columns, throttledAt: change.at, throttleReason: change.reason };
    case 'pause': {
      const next = withPause(pauses, change.owner, change.at, change.reason);
      return next === undefined ? undefined : { ...columns, pausedOwners: writePauses(next) };
    }
    case 'release': {
      const next = withResume(pauses, change.owner, change.at);
      return next === undefined ? undefined : { ...columns, pausedOwners: writePauses(next) };
    }
    case 'resume': {
      const owners = withResume(pauses, undefined, change.at);
      const own = columns.throttleReason !== null;
      if (owners === undefined && !own) return undefined;
      return {
        throttledAt: own ? change.at : columns.throttledAt,
        throttleReason: null,
        pausedOwners: owners === undefined ? columns.pausedOwners : writePauses(owners),
      };
    }
  }
}
