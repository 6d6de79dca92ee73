/**
 * Follows batches until they end, then settles each once. A batch's pending
 * ledger row holds its worst case (admit-batch.ts) until the batch is
 * terminal — OpenAI's `completed`, `failed`, `expired` or `cancelled`,
 * Anthropic's `processing_status: ended` — whether or not its client ever
 * looks again. Then its results are read line by line as they stream (OpenAI's
 * output file, Anthropic's results), each answered line's reported usage
 * priced at the batch price (the provider bills the lines it answered; errored,
 * canceled, expired and unprocessed lines bill nothing), and the row is settled
 * with the sum: marked `service_tier = batch` and the batch's id as its
 * upstream request id (docs/batches.md). Anthropic's usage is read by the
 * Messages dialect's reader, so cache reads and writes are priced as they are
 * for a synchronous message.
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
import { readAnthropicUsage } from '../dialects/anthropic-usage.js';
import { readUsage, type Usage } from '../dialects/usage.js';
import { defaultToolRates } from '../estimate/price-fallbacks.js';
import type { ModelPrice, ToolRates } from '../estimate/price-types.js';
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
  /** Where OpenAI batches are (the first OpenAI upstream). */
  readonly upstream: Upstream;
  /** Where Anthropic's Message Batches are; absent = none are followed (none can be created). */
  readonly anthropic?: Upstream | undefined;
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
  /** Told of each batch settled (its key's spend changed: the alert monitor judges it). */
  readonly onSettled?: ((keyId: string) => void) | undefined;
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

/** Sums a batch's billed lines. */
class BillSum {
  lines = 0;
  costMicros = 0;
  private readonly usage = { promptTokens: 0, cachedTokens: 0, completionTokens: 0, reasoningTokens: 0, cacheWrite5mTokens: 0, cacheWrite1hTokens: 0 };

  add(used: Usage, costMicros: number): void {
    this.lines += 1;
    this.costMicros += costMicros;
    this.usage.promptTokens += used.promptTokens;
    this.usage.cachedTokens += used.cachedTokens;
    this.usage.completionTokens += used.completionTokens;
    this.usage.reasoningTokens += used.reasoningTokens;
    this.usage.cacheWrite5mTokens += used.cacheWrite5mTokens ?? 0;
    this.usage.cacheWrite1hTokens += used.cacheWrite1hTokens ?? 0;
  }

  bill(): BatchBill {
    const { cacheWrite5mTokens, cacheWrite1hTokens, ...tokens } = this.usage;
    const usage: Usage = {
      ...tokens,
      ...(cacheWrite5mTokens > 0 ? { cacheWrite5mTokens } : {}),
      ...(cacheWrite1hTokens > 0 ? { cacheWrite1hTokens } : {}),
    };
    return { lines: this.lines, usage, costMicros: this.costMicros };
  }
}

export class BatchFollower {
  private readonly deps: FollowerDeps;
  /** Live reservations in Redis of batches this process admitted, settled with the bill. */
  private readonly reservations = new Map<string, BudgetReservation>();
  private readonly held = new Set<string>();
  /** Looks under way, by batch id (a scan's and a delete's never read one batch's results twice at once). */
  private readonly looking = new Map<string, Promise<void>>();
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

  /**
   * Looks at one batch of this node now and settles it if it has ended: before its client deletes
   * it upstream, which forgets its results. Throws when the upstream cannot be asked.
   */
  async followNow(job: BatchJobRecord): Promise<void> {
    if (job.settledAt !== null || job.node !== this.deps.node || this.closed) return;
    await this.follow(job);
  }

  /** Asks the upstream how the batch stands; settles it when it has ended. One look per batch at a time. */
  private follow(job: BatchJobRecord): Promise<void> {
    let looking = this.looking.get(job.id);
    if (looking === undefined) {
      looking = (job.provider === 'anthropic' ? this.followAnthropic(job) : this.followOpenAi(job)).finally(() => this.looking.delete(job.id));
      this.looking.set(job.id, looking);
    }
    return looking;
  }

  /** An OpenAI batch: settled from its output file once terminal. */
  private async followOpenAi(job: BatchJobRecord): Promise<void> {
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
    const sum = new BillSum();
    for await (const line of createInterface({ input: response.body, crlfDelay: Infinity })) {
      const used = lineUsage(line);
      if (used !== undefined) sum.add(used, costMicroUsd(used, price));
    }
    return sum.bill();
  }

  /**
   * An Anthropic Message Batch: settled from its results once `ended` — `ok` when a request
   * succeeded, else `upstream_error` with `batch_canceled`, `batch_expired` or `batch_errored`.
   */
  private async followAnthropic(job: BatchJobRecord): Promise<void> {
    const anthropic = this.deps.anthropic;
    if (anthropic === undefined) throw new Error('no Anthropic upstream is configured to follow this Message Batch');
    const path = `/messages/batches/${encodeURIComponent(job.id)}`;
    const response = await anthropic.send({ method: 'GET', path, headers: {}, signal: AbortSignal.timeout(30_000) });
    const text = await readAll(response.body, 1024 * 1024);
    if (response.status === 404) {
      // The provider no longer knows it: settled at its reservation, never under what it may have billed.
      await this.settle(job, { lines: 0, usage: NOTHING, costMicros: job.reservedMicros }, 'upstream_error', 'batch_not_found');
      return;
    }
    if (response.status < 200 || response.status >= 300) throw new Error(`the upstream answered ${response.status}`);
    const batch = JSON.parse(text) as { processing_status?: unknown };
    const status = typeof batch.processing_status === 'string' ? batch.processing_status : 'unknown';
    if (status !== job.status) await this.deps.store.noteStatus(job.id, status);
    if (status !== 'ended') return;
    const { bill, ends } = await this.anthropicBillOf(job, anthropic, `${path}/results`);
    if (ends.has(UNREAD)) {
      // A request billed what Tollgate cannot read: the batch is settled at its reservation, never under.
      this.deps.logger.warn({ batchId: job.id, requestId: job.requestId }, 'a succeeded batch request reported no usage; settled at the reservation');
      return this.settle(job, { ...bill, costMicros: Math.max(bill.costMicros, job.reservedMicros) }, 'ok', undefined);
    }
    if (bill.lines > 0) return this.settle(job, bill, 'ok', undefined);
    const end = ends.has('canceled') ? 'canceled' : ends.has('expired') ? 'expired' : 'errored';
    await this.settle(job, bill, 'upstream_error', `batch_${end}`);
  }

  /** Reads a Message Batch's results line by line: each succeeded request's usage at the batch price, and how the others ended. */
  private async anthropicBillOf(job: BatchJobRecord, anthropic: Upstream, path: string): Promise<{ bill: BatchBill; ends: Set<string> }> {
    const response = await anthropic.send({ method: 'GET', path, headers: {}, signal: AbortSignal.timeout(10 * 60_000) });
    if (response.status < 200 || response.status >= 300) {
      response.body.resume();
      throw new Error(`the batch's results could not be read (${response.status})`);
    }
    const price = batchPriceOf(resolvePrice(job.model, this.deps.prices));
    const toolRates = defaultToolRates(this.deps.prices.tools);
    const sum = new BillSum();
    const ends = new Set<string>();
    for await (const line of createInterface({ input: response.body, crlfDelay: Infinity })) {
      const result = anthropicResult(line, price, toolRates);
      if (result === undefined) continue;
      if (result.usage === undefined) ends.add(result.type);
      else sum.add(result.usage, result.costMicros);
    }
    return { bill: sum.bill(), ends };
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
      ...(bill.usage.cacheWrite5mTokens === undefined ? {} : { cacheWrite5mTokens: bill.usage.cacheWrite5mTokens }),
      ...(bill.usage.cacheWrite1hTokens === undefined ? {} : { cacheWrite1hTokens: bill.usage.cacheWrite1hTokens }),
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
    this.deps.onSettled?.(job.keyId);
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

/** How a succeeded request without readable usage ends (it bills what Tollgate cannot price). */
const UNREAD = 'succeeded_without_usage';

/**
 * One line of a Message Batch's results: a `succeeded` request's usage (the Messages dialect's
 * reader: cache reads and writes apart) and its cost at `price`; other results (`errored`,
 * `canceled`, `expired`) bill nothing and only say how the request ended.
 */
export function anthropicResult(
  line: string,
  price: ModelPrice,
  toolRates: ToolRates,
): { readonly type: string; readonly usage?: Usage; readonly costMicros: number } | undefined {
  if (line.trim() === '') return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(line);
  } catch {
    return undefined;
  }
  const result = (parsed as { result?: { type?: unknown; message?: { usage?: unknown } | null } | null } | null)?.result;
  if (result === null || result === undefined || typeof result.type !== 'string') return undefined;
  if (result.type !== 'succeeded') return { type: result.type, costMicros: 0 };
  const usage = readAnthropicUsage(result.message?.usage);
  if (usage === undefined) return { type: UNREAD, costMicros: 0 };
  return { type: 'succeeded', usage, costMicros: costMicroUsd(usage, price, toolRates) };
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
