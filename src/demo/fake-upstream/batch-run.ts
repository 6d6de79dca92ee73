/**
 * How a fake batch runs, for both providers (openai-batches.ts,
 * anthropic-batches.ts): the scenario sent with the create request decides
 * its timing and its end, and one timer at a time walks its lines, the way
 * background Responses run on the fake's timers (stored-responses.ts).
 *
 * A batch of N lines takes `batchMs` (default 100): a tenth validating, then
 * its lines one by one over the next eight tenths, then a tenth finalizing.
 *   batchMs=MS          how long the whole batch takes
 *   batchEnd=completed|failed|expired|cancelled   how it ends (default completed)
 *   batchStopAfter=N    with batchEnd=expired|cancelled: lines processed before it ends so
 *                       (default half, rounded down); N ≥ the lines means it completes
 *   batchExpireAfter=N  short for batchEnd=expired,batchStopAfter=N
 *   batchHoldAfter=N    after N lines the batch waits, in progress, until it is cancelled
 *                       (a deterministic "cancel mid-way")
 *   batchFail=N         the first N lines are answered with a 400 error (not billed)
 */
import { num, type Scenario } from './scenario.js';

type BatchEnd = 'completed' | 'failed' | 'expired' | 'cancelled';

export interface BatchTiming {
  readonly validateMs: number;
  readonly stepMs: number;
  readonly finalizeMs: number;
  readonly end: BatchEnd;
  /** With end expired or cancelled: lines processed before it. */
  readonly stopAfter?: number;
  readonly holdAfter?: number;
  readonly failFirst: number;
}

/** The batch scenario keys (above) for a batch of `total` lines. */
export function batchTiming(scenario: Scenario, total: number): BatchTiming {
  const batchMs = Math.max(0, num(scenario, 'batchMs') ?? 100);
  const expireAfter = num(scenario, 'batchExpireAfter');
  const asked = scenario.batchEnd;
  const end: BatchEnd = expireAfter !== undefined ? 'expired' : asked === 'failed' || asked === 'expired' || asked === 'cancelled' ? asked : 'completed';
  const stopAfter = end === 'expired' || end === 'cancelled' ? (expireAfter ?? num(scenario, 'batchStopAfter') ?? Math.floor(total / 2)) : undefined;
  const holdAfter = num(scenario, 'batchHoldAfter');
  return {
    validateMs: batchMs / 10,
    stepMs: (batchMs * 0.8) / Math.max(1, total),
    finalizeMs: batchMs / 10,
    end,
    ...(stopAfter === undefined ? {} : { stopAfter }),
    ...(holdAfter === undefined ? {} : { holdAfter }),
    failFirst: num(scenario, 'batchFail') ?? 0,
  };
}

/** What a runner tells its batch. */
export interface LineHandlers {
  /** Process line `index` (answer it, bill it). */
  line(index: number): void;
  /** Every line was processed. */
  done(): void;
  /** The scenario ends the batch early (expired, or cancelled by itself) after `processed` lines. */
  stopped(end: 'expired' | 'cancelled'): void;
}

/** Walks a batch's lines on one timer; `stop` (cancel, close) clears it. */
export class LineRunner {
  private timer: NodeJS.Timeout | undefined;
  /** Lines processed so far. */
  processed = 0;

  constructor(
    private readonly total: number,
    private readonly timing: BatchTiming,
    private readonly handlers: LineHandlers,
  ) {}

  /** Starts processing after `delayMs`. */
  start(delayMs: number): void {
    this.after(delayMs, () => this.next());
  }

  /** Runs `action` after `delayMs`, replacing whatever was due. */
  after(delayMs: number, action: () => void): void {
    this.stop();
    this.timer = setTimeout(action, delayMs);
  }

  stop(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
  }

  private next(): void {
    this.timer = undefined;
    const { stopAfter, holdAfter, end } = this.timing;
    if (stopAfter !== undefined && this.processed >= stopAfter && this.processed < this.total) {
      this.handlers.stopped(end === 'cancelled' ? 'cancelled' : 'expired');
      return;
    }
    // Held: it waits, in progress, for a cancel.
    if (holdAfter !== undefined && this.processed >= holdAfter) return;
    this.handlers.line(this.processed);
    this.processed += 1;
    if (this.processed >= this.total) this.handlers.done();
    else this.after(this.timing.stepMs, () => this.next());
  }
}
