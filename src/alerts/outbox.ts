/**
 * The alert outbox: every delivery is a row of the SQLite file's
 * `alert_outbox` before it is sent, so a slow or dead webhook costs disk
 * (bounded by `maxPending`), never memory, and retries survive a restart.
 * A process delivering a row holds a short claim on it, so processes sharing
 * the file never send the same delivery at once.
 */
import type Database from 'better-sqlite3';

export interface OutboxRow {
  readonly id: string;
  readonly eventId: string;
  readonly eventType: string;
  readonly webhook: string;
  readonly body: string;
  readonly createdAt: number;
  readonly status: 'pending' | 'delivered' | 'failed';
  readonly attempts: number;
  readonly nextAttemptAt: number;
  readonly lastError: string | null;
  readonly lastStatus: number | null;
  readonly deliveredAt: number | null;
}

export interface NewDelivery {
  readonly eventId: string;
  readonly eventType: string;
  readonly webhook: string;
  readonly body: string;
  readonly createdAt: number;
}

const COLUMNS = `id, event_id AS eventId, event_type AS eventType, webhook, body, created_at AS createdAt, status, attempts,
  next_attempt_at AS nextAttemptAt, last_error AS lastError, last_status AS lastStatus, delivered_at AS deliveredAt`;

/** Delivered and failed rows are kept this long for `tollgate alerts list`. */
const KEEP_MS = 30 * 86_400_000;

export class AlertOutbox {
  private readonly statements;

  constructor(
    private readonly sqlite: Database.Database,
    private readonly maxPending: number,
  ) {
    const s = sqlite;
    this.statements = {
      pending: s.prepare("SELECT count(*) AS n FROM alert_outbox WHERE status = 'pending'"),
      insert: s.prepare(
        `INSERT INTO alert_outbox (id, event_id, event_type, webhook, body, created_at, next_attempt_at)
         VALUES (@id, @eventId, @eventType, @webhook, @body, @createdAt, @nextAttemptAt) ON CONFLICT (id) DO NOTHING`,
      ),
      due: s.prepare(`SELECT id FROM alert_outbox WHERE status = 'pending' AND next_attempt_at <= ? AND claimed_until <= ? ORDER BY next_attempt_at LIMIT ?`),
      take: s.prepare(`UPDATE alert_outbox SET claimed_until = @until WHERE id = @id AND status = 'pending' AND claimed_until <= @now RETURNING ${COLUMNS}`),
      delivered: s.prepare(
        "UPDATE alert_outbox SET status = 'delivered', attempts = @attempts, delivered_at = @now, last_status = @status, last_error = NULL, claimed_until = 0 WHERE id = @id",
      ),
      retry: s.prepare(
        'UPDATE alert_outbox SET attempts = @attempts, next_attempt_at = @nextAt, last_status = @status, last_error = @error, claimed_until = 0 WHERE id = @id',
      ),
      failed: s.prepare(
        "UPDATE alert_outbox SET status = 'failed', attempts = @attempts, last_status = @status, last_error = @error, claimed_until = 0 WHERE id = @id",
      ),
      list: s.prepare(`SELECT ${COLUMNS} FROM alert_outbox WHERE created_at >= ? ORDER BY created_at DESC, id LIMIT ?`),
      prune: s.prepare("DELETE FROM alert_outbox WHERE status <> 'pending' AND created_at < ?"),
    };
  }

  /**
   * Adds deliveries (one per webhook of an event) in one transaction; none when the outbox
   * already holds `maxPending` undelivered rows. Returns how many were added. They are due at `dueAt` (wall clock).
   */
  enqueue(deliveries: readonly NewDelivery[], dueAt: number): number {
    const add = this.sqlite.transaction(() => {
      const { n } = this.statements.pending.get() as { n: number };
      if (n + deliveries.length > this.maxPending) return 0;
      let added = 0;
      for (const d of deliveries) added += this.statements.insert.run({ ...d, id: `${d.eventId}:${d.webhook}`, nextAttemptAt: dueAt }).changes;
      return added;
    });
    return add.immediate();
  }

  /** Claims up to `limit` due deliveries for `leaseMs`. */
  takeDue(now: number, limit: number, leaseMs: number): OutboxRow[] {
    if (limit <= 0) return [];
    const ids = this.statements.due.all(now, now, limit) as { id: string }[];
    const taken: OutboxRow[] = [];
    for (const { id } of ids) {
      const row = this.statements.take.get({ id, now, until: now + leaseMs }) as OutboxRow | undefined;
      if (row !== undefined) taken.push(row);
    }
    return taken;
  }

  markDelivered(id: string, attempts: number, status: number, now: number): void {
    this.statements.delivered.run({ id, attempts, status, now });
  }

  markRetry(id: string, attempts: number, nextAt: number, status: number | null, error: string): void {
    this.statements.retry.run({ id, attempts, nextAt, status, error });
  }

  markFailed(id: string, attempts: number, status: number | null, error: string): void {
    this.statements.failed.run({ id, attempts, status, error });
  }

  /** The newest deliveries created since `sinceMs`. */
  list(sinceMs: number, limit: number): OutboxRow[] {
    return this.statements.list.all(sinceMs, limit) as OutboxRow[];
  }

  /** Drops delivered and failed rows older than 30 days. */
  prune(now: number): void {
    this.statements.prune.run(now - KEEP_MS);
  }
}
