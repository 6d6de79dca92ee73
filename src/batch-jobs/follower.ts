/**
 * Follows OpenAI batches until they end, then settles each once. A batch's
 * pending ledger row holds its worst case (admit-batch.ts) until the batch is
 * terminal — `completed`, `failed`, `expired` or `cancelled` — whether or not
 * its client ever looks again. Then its output file's lines are read as they
 * stream, each line's reported usage priced at the batch price (the provider
 * bills the lines it answered; errored and unprocessed lines bill nothing),
 * and the row is settled with the sum: marked `service_tier = batch` and the
 * batch's id as its upstream request id (docs/batches.md).
 *
 * Jobs survive restarts and are followed by one process: each is claimed in
 * the batch store (src/storage/batches.ts) for `claimMs`, renewed while held
 * and released at a clean shutdown; a lapsed claim (a crashed process's) is
 * taken over by the next scan. Only processes of the node whose ledger holds
 * the row follow it. Settling is exactly once: the ledger settles only a
 * pending row, and the job is marked settled once that row is on disk.
 */
import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import { batchPriceOf } from '../batches/batch-estimate.js';
import type { BudgetReservation } from '../budgets/shared-budgets.js';
import { readUsage, type Usage } from '../dialects/usage.js';
import { costMicroUsd, resolvePrice, type PriceTable } from '../estimate/prices.js';
import type { Logger } from '../logger.js';
import type { BatchJobRecord, BatchStore } from '../storage/batches.js';
import type { Completion, LedgerWriter } from '../storage/ledger.js';
import type { Upstream } from '../upstreams/pool.js';

interface FollowSettings {
  /** How often unsettled batches are looked at, ms. */
  readonly pollMs: number;
  /** How long a claim lasts unless renewed, ms. */
  readonly claimMs: number;
}

export interface FollowerDeps {
  readonly upstream: Upstream;
  readonly store: BatchStore;
  readonly ledger: LedgerWriter;
  readonly prices: PriceTable;
  readonly now: () => number;
  readonly logger: Logger;
  readonly settings: FollowSettings;
  /** This node (its ledger holds the rows of the batches it admitted). */
  readonly node: string;
  /** This process, as a claim holder. */
  readonly holder: string;
}

const TERMINAL = new Set(['completed', 'failed', 'expired', 'cancelled']);
/** Batches looked at per scan, at most. */
const PER_SCAN = 50;

/** What a batch billed: its lines' usage, summed, and the cost at the batch price. */
export interface BatchBill {
  readonly lines: number;
  readonly usage: Usage;
  readonly costMicros: number;
}

const NOTHING: Usage = { promptTokens: 0, cachedTokens: 0, completionTokens: 0, reasoningTokens: 0 };

export class BatchFollower {
  private readonly deps: FollowerDeps;
  /** Live reservations in Redis of batches this process admitted, settled with the bill. */
  private readonly reservations = new Map<string, BudgetReservation>();
  private readonly held = new Set<string>();
  private timer: NodeJS.Timeout | undefined;
  private scanning: Promise<void> | undefined;
  private closed = false;

  constructor(deps: FollowerDeps) {
    this.deps = deps;
  }

  /** Looks at unsettled batches now and every `pollMs`. */
  start(): void {
    if (this.timer !== undefined || this.closed) return;
    this.timer = setInterval(() => void this.scan(), this.deps.settings.pollMs);
    this.timer.unref();
    void this.scan();
  }

  /** Remembers a batch this process just admitted (its Redis reservation, if any). */
  track(batchId: string, reservation: BudgetReservation | undefined): void {
    if (reservation !== undefined) this.reservations.set(batchId, reservation);
  }

  /** One look at every batch this process may follow; resolves when done (tests call it). */
  scan(): Promise<void> {
    this.scanning ??= this.scanOnce().finally(() => {
      this.scanning = undefined;
    });
    return this.scanning;
  }

  /** Stops following and gives this process's claims back, for the next start or another process. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
    await this.scanning?.catch(() => undefined);
    try {
      await this.deps.store.release([...this.held], this.deps.holder);
    } catch (error) {
      this.deps.logger.warn({ err: error }, 'batch claims could not be released; they lapse by themselves');
    }
  }

  private async scanOnce(): Promise<void> {
    if (this.closed) return;
    const { store, settings, node, holder } = this.deps;
    const now = this.deps.now();
    let jobs: BatchJobRecord[];
    try {
      jobs = await store.claimUnsettled(node, holder, now, now + settings.claimMs, PER_SCAN);
    } catch (error) {
      this.deps.logger.warn({ err: error }, 'unsettled batches could not be claimed; will look again');
      return;
    }
    for (const job of jobs) {
      if (this.closed) return;
      this.held.add(job.id);
      try {
        await this.follow(job);
      } catch (error) {
        this.deps.logger.warn({ err: error, batchId: job.id, requestId: job.requestId }, 'batch could not be looked at; will look again');
      }
    }
  }

  /** Asks the upstream how the batch stands; settles it when it has ended. */
  private async follow(job: BatchJobRecord): Promise<void> {
    const response = await this.deps.upstream.send({
      method: 'GET',
      path: `/batches/${encodeURIComponent(job.id)}`,
      headers: {},
      signal: AbortSignal.timeout(30_000),
    });
    const text = await readAll(response.body, 1024 * 1024);
    if (response.status === 404) {
      // The provider no longer knows it: settled at its reservation, never under what it may have billed.
      await this.settle(job, { lines: 0, usage: NOTHING, costMicros: job.reservedMicros }, 'upstream_error', 'batch_not_found');
      return;
    }
    if (response.status < 200 || response.status >= 300) throw new Error(`the upstream answered ${response.status}`);
    const batch = JSON.parse(text) as { status?: unknown; output_file_id?: unknown };
    const status = typeof batch.status === 'string' ? batch.status : 'unknown';
    if (status !== job.status) await this.deps.store.noteStatus(job.id, status);
    if (!TERMINAL.has(status)) return;
    const bill = typeof batch.output_file_id === 'string' ? await this.billOf(job, batch.output_file_id) : { lines: 0, usage: NOTHING, costMicros: 0 };
    await this.settle(job, bill, status === 'completed' ? 'ok' : 'upstream_error', status === 'completed' ? undefined : `batch_${status}`);
  }

  /** Reads the output file line by line: each answered line's usage at the batch price. */
  private async billOf(job: BatchJobRecord, fileId: string): Promise<BatchBill> {
    const response = await this.deps.upstream.send({
      method: 'GET',
      path: `/files/${encodeURIComponent(fileId)}/content`,
      headers: {},
      signal: AbortSignal.timeout(10 * 60_000),
    });
    if (response.status < 200 || response.status >= 300) {
      response.body.resume();
      throw new Error(`the output file could not be read (${response.status})`);
    }
    const price = batchPriceOf(resolvePrice(job.model, this.deps.prices));
    let lines = 0;
    let costMicros = 0;
    const usage = { ...NOTHING };
    for await (const line of createInterface({ input: response.body, crlfDelay: Infinity })) {
      const used = lineUsage(line);
      if (used === undefined) continue;
      lines += 1;
      costMicros += costMicroUsd(used, price);
      usage.promptTokens += used.promptTokens;
      usage.cachedTokens += used.cachedTokens;
      usage.completionTokens += used.completionTokens;
      usage.reasoningTokens += used.reasoningTokens;
    }
    return { lines, usage, costMicros };
  }

  /** Settles the row once, then marks the job settled (a crash in between settles nothing twice: the row is no longer pending). */
  private async settle(job: BatchJobRecord, bill: BatchBill, status: Completion['status'], errorCode: string | undefined): Promise<void> {
    const completedAt = this.deps.now();
    this.deps.ledger.complete({
      requestId: job.requestId,
      completedAt,
      status,
      httpStatus: 200,
      promptTokens: bill.usage.promptTokens,
      cachedTokens: bill.usage.cachedTokens,
      completionTokens: bill.usage.completionTokens,
      reasoningTokens: bill.usage.reasoningTokens,
      serviceTier: 'batch',
      costMicros: bill.costMicros,
      usageSource: 'reported',
      latencyMs: completedAt - job.createdAt,
      ttftMs: null,
      upstreamRequestId: job.id,
      errorCode: errorCode ?? null,
    });
    if (!this.deps.ledger.flush()) throw new Error('the ledger could not commit the settlement yet');
    this.reservations.get(job.id)?.settle(bill.costMicros);
    this.reservations.delete(job.id);
    await this.deps.store.markSettled(job.id, completedAt);
    this.held.delete(job.id);
    this.deps.logger.info({ batchId: job.id, requestId: job.requestId, lines: bill.lines, costMicros: bill.costMicros }, 'batch settled');
  }
}

/** One output line's usage: answered lines only (an error or a non-2xx status bills nothing). */
export function lineUsage(line: string): Usage | undefined {
  if (line.trim() === '') return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(line);
  } catch {
    return undefined;
  }
  const response = (parsed as { response?: { status_code?: unknown; body?: { usage?: unknown } } | null }).response;
  if (response === null || response === undefined || typeof response.status_code !== 'number') return undefined;
  if (response.status_code < 200 || response.status_code >= 300) return undefined;
  return readUsage(response.body?.usage);
}

async function readAll(body: Readable, limit: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body as AsyncIterable<Buffer>) {
    size += chunk.byteLength;
    if (size > limit) {
      body.destroy();
      throw new Error('the upstream answer is too large');
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}
