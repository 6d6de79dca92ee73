/**
 * Settles background Responses. A `background: true` request is admitted like
 * any other, but its answer (`status: "queued"`, no usage) says nothing about
 * its cost, so its admission stays open — buckets, budgets and the pending
 * ledger row keep the reservation — until the job's final usage is known:
 *
 * - the poller asks the upstream (`GET /responses/{id}`) with backoff
 *   (`initialMs`, doubling up to `maxIntervalMs`) until the job is terminal,
 *   whether or not the client ever polls;
 * - a client's own retrieve or cancel that sees a terminal job settles it at
 *   once ({@link BackgroundPoller.observe});
 * - completed/incomplete jobs bill their usage, failed/cancelled ones what
 *   their usage says (0 without one);
 * - past `timeoutMs` from its creation, or when the upstream no longer knows
 *   the job (404), it is settled at its reservation — never under — and logged.
 *
 * Jobs survive restarts: each one's claim (src/storage/responses.ts) is renewed
 * while this process holds it and released at a clean shutdown; claims that
 * lapse (a released one, or a crashed process's) are taken over on start and
 * every half `maxIntervalMs`, and settled from the ledger row's estimate and
 * the job's upstream usage. A settled job keeps its claim until its ledger
 * row is settled on disk, so a crash in between leaves it to be taken over.
 */
import { costMicroUsd, resolvePrice, type PriceTable } from '../estimate/prices.js';
import type { Completion, FinalStatus, LedgerWriter } from '../storage/ledger.js';
import type { Logger } from '../logger.js';
import type { AdmittedRequest, Ending } from '../pipeline/context.js';
import type { RequestEvents } from '../pipeline/finished.js';
import { settleForwarded } from '../pipeline/settle.js';
import type { Upstream } from '../upstreams/pool.js';
import { readUsage, type Usage } from '../dialects/usage.js';
import type { UnclaimedJob } from '../storage/responses.js';
import type { ResponseStore } from '../storage/sqlite/responses.js';
import { answerFacts, isTerminal, parseResponseObject } from './wire.js';

export interface PollSettings {
  /** First wait after the job was handed over, ms. */
  readonly initialMs: number;
  /** Longest wait between two polls, ms. */
  readonly maxIntervalMs: number;
  /** Give up this long after the request was made and settle at the reservation, ms. */
  readonly timeoutMs: number;
}

export interface PollerDeps {
  readonly upstream: Upstream;
  readonly store: ResponseStore;
  readonly ledger: LedgerWriter;
  readonly events: RequestEvents;
  readonly prices: PriceTable;
  readonly now: () => number;
  readonly logger: Logger;
  readonly settings: PollSettings;
}

interface Job {
  readonly responseId: string;
  readonly requestId: string;
  readonly createdAt: number;
  /** The live request (admitted by this process), or the ledger row of a job taken over. */
  readonly source: { readonly kind: 'live'; readonly request: AdmittedRequest } | { readonly kind: 'recovered'; readonly row: UnclaimedJob };
  readonly upstreamRequestId: string | null;
  delayMs: number;
  timer: NodeJS.Timeout | undefined;
}

const NOTHING: Usage = { promptTokens: 0, cachedTokens: 0, completionTokens: 0, reasoningTokens: 0 };

export class BackgroundPoller {
  private readonly deps: PollerDeps;
  private readonly claimMs: number;
  private readonly rescanMs: number;
  private readonly jobs = new Map<string, Job>();
  /** Background jobs this process claims: polled, still relayed to their client, or settled but not yet on disk. */
  private readonly held = new Set<string>();
  /** Settled jobs whose ledger rows may not be committed yet: unflagged by the next rescans. */
  private readonly settling = new Set<string>();
  private rescanTimer: NodeJS.Timeout | undefined;
  private readonly aborts = new AbortController();
  private closed = false;

  constructor(deps: PollerDeps) {
    this.deps = deps;
    // Lapsed jobs are looked for twice per longest poll interval (15 s by default), and a claim
    // outlives four missed renewals (60 s): a crashed process's jobs are taken over within that.
    this.rescanMs = Math.max(10, Math.floor(deps.settings.maxIntervalMs / 2));
    this.claimMs = 4 * this.rescanMs;
  }

  /** Jobs polled right now (tests, metrics). */
  get polling(): number {
    return this.jobs.size;
  }

  /** Takes over lapsed jobs now and then every `rescanMs`. */
  start(): void {
    this.rescan();
    this.rescanTimer = setInterval(() => this.rescan(), this.rescanMs);
    this.rescanTimer.unref();
  }

  /** Stops polling and releases this process's claims, so the next start takes the jobs over at once. */
  close(): void {
    this.closed = true;
    if (this.rescanTimer !== undefined) clearInterval(this.rescanTimer);
    for (const job of this.jobs.values()) clearTimeout(job.timer);
    this.aborts.abort();
    try {
      this.deps.store.releaseClaims(this.held);
    } catch (error) {
      this.deps.logger.warn({ message: (error as Error).message }, 'background responses: claims could not be released; they lapse by themselves');
    }
    this.jobs.clear();
    this.held.clear();
    this.settling.clear();
  }

  /** A background job was created for this process: it holds the claim from now on. Returns the claim's end. */
  hold(responseId: string): number {
    this.held.add(responseId);
    return this.deps.now() + this.claimMs;
  }

  /** The job settled as its answer ended (its usage came with it): nobody needs to poll it. */
  settledDirectly(responseId: string): void {
    if (this.held.has(responseId)) this.settling.add(responseId);
  }

  /** Polls a live request's job until it is terminal, then settles the request. */
  trackLive(request: AdmittedRequest, ending: Ending, responseId: string): void {
    this.track({
      responseId,
      requestId: request.requestId,
      createdAt: request.startedAt,
      source: { kind: 'live', request },
      upstreamRequestId: ending.upstreamRequestId ?? null,
      delayMs: this.deps.settings.initialMs,
      timer: undefined,
    });
  }

  /** A client's own retrieve or cancel saw the job: terminal → settle it now (once) and stop polling. */
  observe(responseId: string, body: Record<string, unknown>): void {
    const job = this.jobs.get(responseId);
    if (job === undefined || !isTerminal(body.status)) return;
    this.finish(job, body);
  }

  private track(job: Job): void {
    if (this.closed || this.jobs.has(job.responseId)) return;
    this.held.add(job.responseId);
    this.jobs.set(job.responseId, job);
    this.schedule(job);
  }

  private schedule(job: Job): void {
    if (this.closed) return;
    job.timer = setTimeout(() => void this.poll(job), job.delayMs);
    // The server keeps a serving process alive; a job must not keep a closing one.
    job.timer.unref();
    const { initialMs, maxIntervalMs } = this.deps.settings;
    job.delayMs = Math.min(Math.max(job.delayMs * 2, initialMs), maxIntervalMs);
  }

  private async poll(job: Job): Promise<void> {
    job.timer = undefined;
    let body: Record<string, unknown> | undefined;
    let gone = false;
    try {
      const response = await this.deps.upstream.send({
        method: 'GET',
        path: `/responses/${encodeURIComponent(job.responseId)}`,
        headers: { accept: 'application/json' },
        signal: this.aborts.signal,
      });
      const bytes = await response.whole();
      if (response.status === 404) gone = true;
      else if (response.status >= 200 && response.status < 300) body = parseResponseObject(bytes);
    } catch (error) {
      if (this.closed) return;
      this.deps.logger.debug({ responseId: job.responseId, message: (error as Error).message }, 'background response poll failed; retrying');
    }
    // Settled meanwhile (the client's own poll), or shutting down.
    if (this.closed || this.jobs.get(job.responseId) !== job) return;
    if (body !== undefined && isTerminal(body.status)) return this.finish(job, body);
    if (gone) return this.atReservation(job, 'background_response_gone', 'the upstream no longer knows this background response');
    if (this.deps.now() - job.createdAt >= this.deps.settings.timeoutMs) {
      return this.atReservation(job, 'background_poll_gave_up', 'background response still unfinished at the polling deadline');
    }
    this.schedule(job);
  }

  /** Settles a terminal job from the upstream's response object. */
  private finish(job: Job, body: Record<string, unknown>): void {
    const status = body.status as string;
    const usage = readUsage(body.usage);
    if (usage === undefined && (status === 'completed' || status === 'incomplete')) {
      return this.atReservation(job, 'background_usage_missing', 'a finished background response carried no usage');
    }
    const outcome: FinalStatus = status === 'failed' ? 'upstream_error' : status === 'cancelled' ? 'client_aborted' : 'ok';
    const errorCode =
      status === 'failed'
        ? (stringField(body.error, 'code') ?? 'response_failed')
        : status === 'cancelled'
          ? 'response_cancelled'
          : status === 'incomplete'
            ? `incomplete:${stringField(body.incomplete_details, 'reason') ?? 'unknown'}`
            : undefined;
    // What continuing it bills, and its items (the key's from now on).
    this.deps.store.noteAnswer(job.responseId, answerFacts(body));
    this.settle(job, outcome, usage ?? NOTHING, errorCode);
  }

  private atReservation(job: Job, errorCode: string, message: string): void {
    this.deps.logger.warn({ requestId: job.requestId, responseId: job.responseId, errorCode }, `${message}; settled at its reservation`);
    this.settle(job, 'upstream_timeout', undefined, errorCode);
  }

  /** Settles once: the ledger row, and for a live request its buckets and budgets. `usage` undefined = at the reservation. */
  private settle(job: Job, outcome: FinalStatus, usage: Usage | undefined, errorCode: string | undefined): void {
    clearTimeout(job.timer);
    this.jobs.delete(job.responseId);
    // Still claimed until its row is settled on disk (see rescan).
    this.settling.add(job.responseId);
    const { ledger, events, now } = this.deps;
    try {
      if (job.source.kind === 'live') {
        const { request } = job.source;
        const { estimate } = request;
        const reserved: Usage = {
          promptTokens: estimate.promptTokens,
          cachedTokens: 0,
          completionTokens: estimate.completionTokensReserved,
          reasoningTokens: 0,
        };
        // Without `responses` in its deps settleForwarded settles instead of deferring again.
        settleForwarded(
          request,
          {
            outcome,
            status: 200,
            accepted: true,
            usage: usage ?? reserved,
            streamedText: '',
            firstTokenAt: undefined,
            upstreamRequestId: job.upstreamRequestId ?? undefined,
            errorCode,
            responseId: job.responseId,
          },
          { ledger, events, now },
        );
      } else {
        ledger.complete(this.recoveredCompletion(job.source.row, outcome, usage, errorCode));
      }
    } catch (error) {
      this.deps.logger.error({ err: error, requestId: job.requestId, responseId: job.responseId }, 'background response could not be settled');
    }
  }

  /** The completion of a job taken over from the ledger: its usage priced now, or its reservation. */
  private recoveredCompletion(row: UnclaimedJob, outcome: FinalStatus, usage: Usage | undefined, errorCode: string | undefined): Completion {
    const completedAt = this.deps.now();
    const billed = usage ?? { promptTokens: row.estPromptTokens, cachedTokens: 0, completionTokens: row.estCompletionTokens, reasoningTokens: 0 };
    return {
      requestId: row.requestId,
      completedAt,
      status: outcome,
      httpStatus: 200,
      promptTokens: billed.promptTokens,
      cachedTokens: billed.cachedTokens,
      completionTokens: billed.completionTokens,
      reasoningTokens: billed.reasoningTokens,
      costMicros: usage === undefined ? row.estCostMicros : costMicroUsd(usage, resolvePrice(row.model, this.deps.prices)),
      usageSource: 'reported',
      latencyMs: completedAt - row.createdAt,
      ttftMs: null,
      upstreamRequestId: row.upstreamRequestId,
      errorCode: errorCode ?? null,
    };
  }

  /** Renews this process's claims and takes over jobs whose claims lapsed. */
  private rescan(): void {
    if (this.closed) return;
    const now = this.deps.now();
    const { store } = this.deps;
    try {
      for (const id of this.settling) {
        if (!store.markSettled(id)) continue;
        this.settling.delete(id);
        this.held.delete(id);
      }
      store.renewClaims(this.held, now + this.claimMs);
      for (const row of store.claimUnclaimed(now, now + this.claimMs)) {
        if (!row.pending) {
          // Settled by a process that stopped before it could say so.
          store.markSettled(row.responseId);
          continue;
        }
        this.deps.logger.info({ requestId: row.requestId, responseId: row.responseId }, 'taking over an unsettled background response');
        this.track({
          responseId: row.responseId,
          requestId: row.requestId,
          createdAt: row.createdAt,
          source: { kind: 'recovered', row },
          upstreamRequestId: row.upstreamRequestId,
          // Ask at once: the job may have finished while nobody polled it.
          delayMs: 0,
          timer: undefined,
        });
      }
    } catch (error) {
      this.deps.logger.warn({ message: (error as Error).message }, 'background responses: claims could not be renewed or taken over; retrying');
    }
  }
}

function stringField(value: unknown, name: string): string | undefined {
  const field = value !== null && typeof value === 'object' ? (value as Record<string, unknown>)[name] : undefined;
  return typeof field === 'string' ? field : undefined;
}
