/**
 * The runaway stop, run by the alert monitor (monitor.ts) for each key it
 * looks at: judges the last minutes of the key's sessions and end users, then
 * of the key, by the rule of runaway.ts; pauses the most specific owner that
 * runs away — one agent session, one end user, or else the key — in the key
 * store, which every node and worker reads as it reads a revocation
 * (src/keys/cache.ts); and lifts each pause once the window's rate is back
 * under the line. Each pause and each release sends one `spend.velocity`
 * alert.
 *
 * A session's or end user's "usual rate" is its key's: an owner spending
 * `factor` times what the whole key usually spends is a loop, and owners are
 * mostly too new to have a history of their own.
 */
import { HOUR_MS, utcHour } from '../domain/calendar.js';
import type { AuthKey, PauseOwner } from '../domain/keys.js';
import { formatMicrosExact, formatMicrosFixed } from '../domain/money.js';
import { pauseOf } from '../domain/owner-pauses.js';
import type { KeyStore } from '../storage/keys.js';
import { eventIdOf, type AlertEvent, type AlertOwner } from './events.js';
import { ruleForKey, runawayVerdict, type RunawayVerdict } from './runaway.js';
import { PolicyError } from '../domain/policy.js';
import type { RunawaySettings } from './settings.js';
import type { AlertSpendReads } from './spend-reads.js';
import type { Actor } from '../domain/admins.js';

/** Who the audit trail names for the runaway stop's pauses and resumes (docs/admins.md). */
const RUNAWAY_STOP: Actor = Object.freeze({ kind: 'system', name: 'runaway-stop' });

/** Sessions and end users of one key judged per look, at most (the ones that spent the most). */
const OWNERS_PER_LEVEL = 20;

export interface RunawayDeps {
  readonly settings: RunawaySettings;
  readonly reads: AlertSpendReads;
  readonly keys: Pick<KeyStore, 'throttleKey' | 'resumeKey' | 'pauseOwner' | 'releaseOwner'>;
  /** The key as this node knows it now (the noted caller's copy may be older than a pause or a resume). */
  readonly keyById: (id: string) => AuthKey | undefined;
}

/** Alerts to claim and send, and what is paused afterwards: `key`, `session:…`, `end_user:…`. */
export interface RunawayOutcome {
  readonly alerts: ReadonlyArray<{ readonly claimId: string; readonly event: AlertEvent }>;
  readonly paused: ReadonlySet<string>;
}

const ownerId = (owner: PauseOwner): string => `${owner.level}:${owner.name}`;

/** How people name an owner in messages ("spending <where>"), and the command that resumes it. */
function described(owner: PauseOwner | undefined, key: AuthKey): { who: string; where: string; resume: string } {
  if (owner === undefined) return { who: `key "${key.name}"`, where: `on key "${key.name}"`, resume: `tollgate keys resume ${key.name}` };
  const resume = `tollgate keys resume ${key.name} ${owner.level === 'session' ? '--session' : '--end-user'} ${JSON.stringify(owner.name)}`;
  if (owner.level === 'session')
    return { who: `session "${owner.name}" of key "${key.name}"`, where: `in session "${owner.name}" of key "${key.name}"`, resume };
  return { who: `end user "${owner.name}" of key "${key.name}"`, where: `by end user "${owner.name}" of key "${key.name}"`, resume };
}

/** The refusal's message (and the alert's summary). */
function runawayMessage(key: AuthKey, owner: PauseOwner | undefined, rule: RunawaySettings, verdict: RunawayVerdict): string {
  const minutes = Math.round(rule.windowMs / 60_000);
  const usual = owner === undefined ? 'its usual rate' : "the key's usual rate";
  const multiple = verdict.usualMicroUsdPerHour > 0 ? `, ${Math.floor(verdict.microUsdPerHour / verdict.usualMicroUsdPerHour)}× ${usual}` : '';
  const { where, resume } = described(owner, key);
  return (
    `Spending ${where} ran at ${formatMicrosExact(verdict.microUsdPerHour)}/hour over the last ${minutes} min${multiple}; ` +
    `${owner === undefined ? 'requests' : 'its requests'} are paused until the rate falls or an operator runs \`${resume}\`.`
  );
}

/**
 * Judges one key and its owners now; pauses or releases them in the key
 * store. `wasPaused`: what this process saw paused on the key last time (to
 * tell an operator's resume from nothing at all).
 */
export async function checkRunaway(deps: RunawayDeps, known: AuthKey, now: number, wasPaused: ReadonlySet<string>): Promise<RunawayOutcome> {
  const key = deps.keyById(known.id) ?? known;
  // The key's own rule over the configured one; a policy that could not be read keeps the configured.
  const rule = ruleForKey(deps.settings, key.policy instanceof PolicyError ? undefined : key.policy.runaway);
  const alerts: Array<{ claimId: string; event: AlertEvent }> = [];
  const paused = new Set<string>();
  if (key.revokedAt !== null) return { alerts, paused };
  // Spend before an operator's resume is not judged again.
  const from = Math.max(now - rule.windowMs, key.resumedAt ?? 0);
  const keyOwner: AlertOwner = { level: 'key', id: key.id, name: key.name };
  const hour = utcHour(from);
  const trailingMicros = deps.reads.hourSpend(keyOwner, hour - rule.trailingMs, hour);
  const judge = (windowMicros: number, since: number): RunawayVerdict =>
    runawayVerdict(rule, { windowMicros, windowMs: Math.max(1, now - since), trailingMicros, trailingMs: rule.trailingMs });
  const alert = (kind: 'runaway' | 'runaway-released', owner: PauseOwner | undefined, at: number, summary: string, verdict: RunawayVerdict): void => {
    const claimId = `${kind}:key:${key.id}:${owner === undefined ? '' : `${ownerId(owner)}:`}${at}`;
    const action = kind === 'runaway' ? 'throttled' : 'released';
    alerts.push({ claimId, event: runawayEvent({ claimId, now, owner: keyOwner, below: owner, action, summary, rule, verdict }) });
  };

  // 1. Sessions and end users: what they spend while paused, or spent before an operator resumed
  //    them, is not the key's to answer for.
  let excluded = 0;
  for (const { owner, since, spent, forgiven } of ownersToJudge(deps.reads, key, from, now, rule.minimumMicros, wasPaused)) {
    excluded += forgiven;
    const verdict = judge(spent, since);
    const entry = pauseOf(key.pauses, owner);
    const { who } = described(owner, key);
    if (entry?.reason !== undefined) {
      if (verdict.over) {
        paused.add(ownerId(owner));
        excluded += spent;
        continue;
      }
      const view = await deps.keys.releaseOwner(key.id, owner, RUNAWAY_STOP);
      const minutes = Math.round(rule.windowMs / 60_000);
      const summary = `${who} is no longer paused: its spend over the last ${minutes} min fell to ${formatMicrosExact(verdict.microUsdPerHour)}/hour`;
      alert('runaway-released', owner, pauseOf(view.pauses, owner)?.at ?? now, summary, verdict);
    } else if (entry !== undefined && wasPaused.has(ownerId(owner))) {
      alert('runaway-released', owner, entry.at, `${who} is no longer paused: an operator resumed it`, verdict);
    } else if (verdict.over) {
      const view = await deps.keys.pauseOwner(key.id, owner, now, runawayMessage(key, owner, rule, verdict), RUNAWAY_STOP);
      const pause = pauseOf(view.pauses, owner);
      // Not paused: the key holds as many pauses as it may, so the key's own check judges this spend.
      if (pause?.reason === undefined) continue;
      paused.add(ownerId(owner));
      excluded += spent;
      alert('runaway', owner, pause.at, pause.reason, verdict);
    }
  }

  // 2. The key, on what its paused owners did not spend. A request of a paused session and a paused
  //    end user is excluded twice; the clamp keeps the rest from going below zero.
  const verdict = judge(Math.max(0, deps.reads.recentKeySpend(key.id, from, now + 1) - excluded), from);
  if (key.throttle === undefined) {
    if (wasPaused.has('key') && key.resumedAt !== undefined) {
      // An operator lifted it (`tollgate keys resume`): the release alert says so.
      alert('runaway-released', undefined, key.resumedAt, `key "${key.name}" is no longer paused: an operator resumed it`, verdict);
    } else if (verdict.over) {
      const view = await deps.keys.throttleKey(key.id, now, runawayMessage(key, undefined, rule, verdict), RUNAWAY_STOP);
      if (view.throttle !== undefined) {
        paused.add('key');
        alert('runaway', undefined, view.throttle.at, view.throttle.reason, verdict);
      }
    }
    return { alerts, paused };
  }
  if (verdict.over) {
    paused.add('key');
    return { alerts, paused };
  }
  const view = await deps.keys.resumeKey(key.id, RUNAWAY_STOP);
  const minutes = Math.round(rule.windowMs / 60_000);
  const summary = `key "${key.name}" is no longer paused: its spend over the last ${minutes} min fell to ${formatMicrosExact(verdict.microUsdPerHour)}/hour`;
  alert('runaway-released', undefined, view.resumedAt ?? now, summary, verdict);
  // The key's resume lifted its owners' pauses too (KeyStore.resumeKey).
  paused.clear();
  return { alerts, paused };
}

/** An owner to judge: its window starts at `since`; `forgiven` is what it spent in the key's window before (an operator resumed it then). */
interface OwnerWindow {
  readonly owner: PauseOwner;
  readonly since: number;
  readonly spent: number;
  readonly forgiven: number;
}

/**
 * The owners to judge: the ones paused or seen paused, and those that spent
 * the most (at least the minimum: below it nothing is runaway).
 */
function ownersToJudge(reads: AlertSpendReads, key: AuthKey, from: number, now: number, minimum: number, wasPaused: ReadonlySet<string>): OwnerWindow[] {
  const owners = new Map<string, PauseOwner>();
  for (const level of ['session', 'end_user'] as const) {
    for (const { name } of reads.recentOwners(key.id, level, from, now + 1, Math.max(1, minimum), OWNERS_PER_LEVEL))
      owners.set(`${level}:${name}`, { level, name });
  }
  for (const pause of key.pauses ?? []) {
    if (pause.reason !== undefined || wasPaused.has(ownerId(pause))) owners.set(ownerId(pause), { level: pause.level, name: pause.name });
  }
  return [...owners.values()].map((owner) => {
    const entry = pauseOf(key.pauses, owner);
    // Released by an operator inside the window: judged from then on.
    const since = entry !== undefined && entry.reason === undefined ? Math.max(from, entry.at) : from;
    const forgiven = since > from ? reads.recentOwnerSpend(key.id, owner, from, since) : 0;
    return { owner, since, spent: reads.recentOwnerSpend(key.id, owner, since, now + 1), forgiven };
  });
}

function runawayEvent(input: {
  claimId: string;
  now: number;
  owner: AlertOwner;
  below: PauseOwner | undefined;
  action: 'throttled' | 'released';
  summary: string;
  rule: RunawaySettings;
  verdict: RunawayVerdict;
}): AlertEvent {
  const { rule, verdict, below } = input;
  return {
    id: eventIdOf(input.claimId),
    type: 'spend.velocity',
    createdAt: new Date(input.now).toISOString(),
    owner: input.owner,
    summary: input.summary,
    runaway: {
      action: input.action,
      ...(below === undefined ? {} : below.level === 'session' ? { session: below.name } : { endUser: below.name }),
      windowMinutes: Math.round(rule.windowMs / 60_000),
      usdPerHour: formatMicrosFixed(verdict.microUsdPerHour),
      usualUsdPerHour: formatMicrosFixed(verdict.usualMicroUsdPerHour),
      trailingHours: Math.round(rule.trailingMs / HOUR_MS),
      factor: rule.factor ?? null,
      ceilingUsdPerHour: rule.microUsdPerHour === undefined ? null : formatMicrosFixed(rule.microUsdPerHour),
    },
  };
}
