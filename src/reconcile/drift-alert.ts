/**
 * The `reconcile.drift` alert (docs/alerts.md): the ledger's total drifted
 * from a provider's bill beyond the tolerance. Its id is derived from the
 * provider and the episode's start, so every run of one episode names the
 * same alert: the claim store sends it once, and a receiver that sees the id
 * twice (a retry) can drop it.
 */
import { eventIdOf, type AlertEvent } from '../alerts/events.js';
import { formatMicrosExact, formatMicrosFixed } from '../domain/money.js';
import type { ReconcileReport } from './compare.js';
import type { Drift, DriftEpisode } from './drift.js';

/** The claim id of a provider's drift episode. */
export function driftClaimId(provider: string, episodeSince: number): string {
  return `reconcile.drift:${provider}:${episodeSince}`;
}

/** The alert of an episode, as of the run that found it. */
export function driftEvent(input: { drift: Drift; episode: DriftEpisode; report: ReconcileReport; now: number }): AlertEvent {
  const { drift, report } = input;
  const since = input.episode.since ?? report.generatedAt;
  const percent = Math.round(drift.ratio * 10_000) / 100;
  const direction = drift.differenceMicros >= 0 ? 'more' : 'less';
  return {
    id: eventIdOf(driftClaimId(report.provider, since)),
    type: 'reconcile.drift',
    createdAt: new Date(input.now).toISOString(),
    owner: { level: 'global', id: null, name: 'global' },
    summary: `${report.provider} billed ${formatMicrosExact(Math.abs(drift.differenceMicros))} ${direction} than the ledger recorded for ${report.since} to ${report.until} (${percent}%, tolerance ${report.tolerancePercent}%): ${formatMicrosExact(drift.billMicros)} billed, ${formatMicrosExact(drift.ledgerMicros)} in the ledger`,
    reconcile: {
      provider: report.provider,
      since: report.since,
      until: report.until,
      ledgerUsd: formatMicrosFixed(drift.ledgerMicros),
      billUsd: formatMicrosFixed(drift.billMicros),
      differenceUsd: formatMicrosFixed(drift.differenceMicros),
      differencePercent: percent,
      tolerancePercent: report.tolerancePercent,
      driftSince: new Date(since).toISOString(),
    },
  };
}
