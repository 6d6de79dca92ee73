/**
 * The runaway stop, run by the alert monitor (monitor.ts) for each key it
 * looks at: judges the key's last minutes by the rule of runaway.ts, pauses
 * the key in the key store — which every node and worker reads as it reads a
 * revocation (src/keys/cache.ts) — and lifts the pause once the window's rate
 * is back under the line. Each pause and each release sends one
 * `spend.velocity` alert.
 */
import { HOUR_MS, utcHour } from '../domain/calendar.js';
import type { AuthKey } from '../domain/keys.js';
import { formatMicrosExact, formatMicrosFixed } from '../domain/money.js';
import type { KeyStore } from '../storage/keys.js';
import { eventIdOf, type AlertEvent, type AlertOwner } from './events.js';
import { runawayVerdict, type RunawayVerdict } from './runaway.js';
import type { RunawaySettings } from './settings.js';
import type { AlertSpendReads } from './spend-reads.js';

export interface RunawayDeps {
  readonly settings: RunawaySettings;
  readonly reads: AlertSpendReads;
  readonly keys: Pick<KeyStore, 'throttleKey' | 'resumeKey'>;
  /** The key as this node knows it now (the noted caller's copy may be older than a pause or a resume). */
  readonly keyById: (id: string) => AuthKey | undefined;
}

/** What the check did: an alert to claim and send, and whether the key is paused afterwards. */
export interface RunawayOutcome {
  readonly alert?: { readonly claimId: string; readonly event: AlertEvent };
  readonly paused: boolean;
}

/** The refusal's message (and the alert's summary). */
function runawayMessage(name: string, rule: RunawaySettings, verdict: RunawayVerdict): string {
  const minutes = Math.round(rule.windowMs / 60_000);
  const multiple = verdict.usualMicroUsdPerHour > 0 ? `, ${Math.floor(verdict.microUsdPerHour / verdict.usualMicroUsdPerHour)}× its usual rate` : '';
  return (
    `Spending on key "${name}" ran at ${formatMicrosExact(verdict.microUsdPerHour)}/hour over the last ${minutes} min${multiple}; ` +
    `requests are paused until the rate falls or an operator runs \`tollgate keys resume ${name}\`.`
  );
}

/** Judges one key now; pauses or releases it in the key store. `wasPaused`: this process saw it paused. */
export async function checkRunaway(deps: RunawayDeps, known: AuthKey, now: number, wasPaused: boolean): Promise<RunawayOutcome> {
  const rule = deps.settings;
  const key = deps.keyById(known.id) ?? known;
  if (key.revokedAt !== null) return { paused: false };
  const minutes = Math.round(rule.windowMs / 60_000);
  // Spend before an operator's resume is not judged again.
  const from = Math.max(now - rule.windowMs, key.resumedAt ?? 0);
  const owner: AlertOwner = { level: 'key', id: key.id, name: key.name };
  const windowMicros = deps.reads.recentKeySpend(key.id, from, now + 1);
  const hour = utcHour(from);
  const trailingMicros = deps.reads.hourSpend(owner, hour - rule.trailingMs, hour);
  const verdict = runawayVerdict(rule, { windowMicros, windowMs: Math.max(1, now - from), trailingMicros, trailingMs: rule.trailingMs });
  if (key.throttle === undefined) {
    if (wasPaused && key.resumedAt !== undefined) {
      // An operator lifted it (`tollgate keys resume`): the release alert says so.
      const claimId = `runaway-released:key:${key.id}:${key.resumedAt}`;
      const summary = `key "${key.name}" is no longer paused: an operator resumed it`;
      return { paused: false, alert: { claimId, event: runawayEvent(claimId, now, owner, 'released', summary, rule, verdict) } };
    }
    if (!verdict.over) return { paused: false };
    const view = await deps.keys.throttleKey(key.id, now, runawayMessage(key.name, rule, verdict));
    if (view.throttle === undefined) return { paused: false };
    const claimId = `runaway:key:${key.id}:${view.throttle.at}`;
    return { paused: true, alert: { claimId, event: runawayEvent(claimId, now, owner, 'throttled', view.throttle.reason, rule, verdict) } };
  }
  if (verdict.over) return { paused: true };
  const view = await deps.keys.resumeKey(key.id);
  const claimId = `runaway-released:key:${key.id}:${view.resumedAt ?? now}`;
  const summary = `key "${key.name}" is no longer paused: its spend over the last ${minutes} min fell to ${formatMicrosExact(verdict.microUsdPerHour)}/hour`;
  return { paused: false, alert: { claimId, event: runawayEvent(claimId, now, owner, 'released', summary, rule, verdict) } };
}

function runawayEvent(
  claimId: string,
  now: number,
  owner: AlertOwner,
  action: 'throttled' | 'released',
  summary: string,
  rule: RunawaySettings,
  verdict: RunawayVerdict,
): AlertEvent {
  return {
    id: eventIdOf(claimId),
    type: 'spend.velocity',
    createdAt: new Date(now).toISOString(),
    owner,
    summary,
    runaway: {
      action,
      windowMinutes: Math.round(rule.windowMs / 60_000),
      usdPerHour: formatMicrosFixed(verdict.microUsdPerHour),
      usualUsdPerHour: formatMicrosFixed(verdict.usualMicroUsdPerHour),
      trailingHours: Math.round(rule.trailingMs / HOUR_MS),
      factor: rule.factor ?? null,
      ceilingUsdPerHour: rule.microUsdPerHour === undefined ? null : formatMicrosFixed(rule.microUsdPerHour),
    },
  };
}
