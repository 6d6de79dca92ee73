/**
 * Delivering alerts: one signed POST per outbox row, off the request path.
 * A few deliveries at a time (`concurrency`), each with a timeout; a failure
 * (no answer, or a status other than 2xx) is retried with exponential
 * backoff up to `attempts` tries, then the row is marked failed. Nothing
 * waits in memory: what is not being sent right now is a row on disk.
 */
import { request } from 'undici';
import type { Logger } from '../logger.js';
import type { AlertOutbox, OutboxRow } from './outbox.js';
import type { AlertSettings, WebhookSettings } from './settings.js';
import { SIGNATURE_HEADER, signPayload } from './signature.js';

export interface SendResult {
  readonly ok: boolean;
  /** The receiver's status, null when it never answered. */
  readonly status: number | null;
  readonly error: string | null;
}

/** POSTs `body` to the webhook, signed at `now`. Never throws. */
export async function sendToWebhook(
  webhook: WebhookSettings,
  body: string,
  meta: { eventId: string; eventType: string; now: number; timeoutMs: number },
): Promise<SendResult> {
  try {
    const response = await request(webhook.url, {
      method: 'POST',
      body,
      headers: {
        'content-type': 'application/json',
        'user-agent': 'tollgate-alerts',
        [SIGNATURE_HEADER]: signPayload(webhook.secret, body, meta.now),
        'x-tollgate-event': meta.eventType,
        'x-tollgate-event-id': meta.eventId,
      },
      headersTimeout: meta.timeoutMs,
      bodyTimeout: meta.timeoutMs,
      signal: AbortSignal.timeout(meta.timeoutMs),
    });
    // The receiver's answer is not read, only drained (bounded), so the connection can be reused.
    await response.body.dump({ limit: 64 * 1024 }).catch(() => undefined);
    const ok = response.statusCode >= 200 && response.statusCode < 300;
    return { ok, status: response.statusCode, error: ok ? null : `HTTP ${response.statusCode}` };
  } catch (error) {
    // The message names the failure (timeout, refused), never the URL's query or the secret.
    const code = (error as { code?: string }).code;
    return { ok: false, status: null, error: code ?? (error as Error).name ?? 'error' };
  }
}

/** Wait before try `attempt + 1` after `attempt` failed tries: initial × 2^(attempt−1), at most `maxDelayMs`. */
function backoffMs(attempt: number, retry: AlertSettings['retry']): number {
  const exponent = Math.min(30, Math.max(0, attempt - 1));
  return Math.min(retry.maxDelayMs, retry.initialDelayMs * 2 ** exponent);
}

export interface DelivererOptions {
  readonly outbox: AlertOutbox;
  readonly settings: AlertSettings;
  readonly logger: Logger;
  /** Wall clock for retry times (real time: a test's hand-moved clock would stall retries). */
  readonly clock?: () => number;
  readonly concurrency?: number;
  readonly pollMs?: number;
  /** Called after each try (metrics, tests). */
  readonly onAttempt?: (row: OutboxRow, result: SendResult) => void;
}

export class AlertDeliverer {
  private readonly webhooks: Map<string, WebhookSettings>;
  private readonly clock: () => number;
  private readonly concurrency: number;
  private readonly pollMs: number;
  private timer: NodeJS.Timeout | undefined;
  private readonly inFlight = new Set<Promise<void>>();
  private closed = true;

  constructor(private readonly options: DelivererOptions) {
    this.webhooks = new Map(options.settings.webhooks.map((hook) => [hook.name, hook]));
    this.clock = options.clock ?? Date.now;
    this.concurrency = options.concurrency ?? 4;
    this.pollMs = options.pollMs ?? 250;
  }

  start(): void {
    this.closed = false;
    this.schedule(0);
  }

  /** Looks for due deliveries now (after an enqueue). */
  kick(): void {
    if (!this.closed) this.schedule(0);
  }

  /** Stops taking rows and waits (at most `waitMs`) for the deliveries under way; the rest stay in the outbox. */
  async close(waitMs = 2000): Promise<void> {
    this.closed = true;
    clearTimeout(this.timer);
    if (this.inFlight.size === 0) return;
    let timeout: NodeJS.Timeout | undefined;
    await Promise.race([Promise.allSettled([...this.inFlight]), new Promise((resolve) => (timeout = setTimeout(resolve, waitMs)))]);
    clearTimeout(timeout);
  }

  private schedule(delayMs: number): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.pump(), delayMs);
    this.timer.unref();
  }

  private pump(): void {
    if (this.closed) return;
    try {
      const now = this.clock();
      const rows = this.options.outbox.takeDue(now, this.concurrency - this.inFlight.size, this.options.settings.timeoutMs + 5000);
      for (const row of rows) {
        const attempt = this.attempt(row).finally(() => {
          this.inFlight.delete(attempt);
          this.kick();
        });
        this.inFlight.add(attempt);
      }
    } catch (error) {
      // A busy database (another process's commit) or a closed one: try again on the next poll.
      this.options.logger.warn({ message: (error as Error).message }, 'alert outbox could not be read; retrying');
    }
    this.schedule(this.pollMs);
  }

  private async attempt(row: OutboxRow): Promise<void> {
    const { outbox, settings, logger } = this.options;
    const webhook = this.webhooks.get(row.webhook);
    const attempts = row.attempts + 1;
    if (webhook === undefined) {
      outbox.markFailed(row.id, attempts, null, 'webhook no longer configured');
      return;
    }
    const result = await sendToWebhook(webhook, row.body, { eventId: row.eventId, eventType: row.eventType, now: this.clock(), timeoutMs: settings.timeoutMs });
    this.options.onAttempt?.(row, result);
    const now = this.clock();
    try {
      if (result.ok) {
        outbox.markDelivered(row.id, attempts, result.status ?? 0, now);
        logger.info({ eventId: row.eventId, event: row.eventType, webhook: row.webhook, attempts }, 'alert delivered');
      } else if (attempts >= settings.retry.attempts) {
        outbox.markFailed(row.id, attempts, result.status, result.error ?? 'failed');
        logger.error(
          { eventId: row.eventId, event: row.eventType, webhook: row.webhook, attempts, status: result.status, error: result.error },
          'alert delivery failed; giving up',
        );
      } else {
        const retryIn = backoffMs(attempts, settings.retry);
        outbox.markRetry(row.id, attempts, now + retryIn, result.status, result.error ?? 'failed');
        logger.warn(
          { eventId: row.eventId, webhook: row.webhook, attempts, status: result.status, error: result.error, retryInMs: retryIn },
          'alert delivery failed; will retry',
        );
      }
    } catch (error) {
      // The row keeps its claim until it lapses, then is tried again.
      logger.warn({ message: (error as Error).message }, 'alert outbox could not be updated');
    }
  }
}
