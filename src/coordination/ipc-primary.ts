/**
 * The primary of `tollgate serve --workers N` holds what Redis holds for a
 * cluster of nodes: every bucket's hash (tokens, leases per worker) and every
 * budget counter. Workers lease from it over IPC with the escrow protocol of
 * docs/leases.md; it runs the very logic of `lua/lease.lua` and
 * `lua/budget.lua`, transcribed in lease-script-model.ts and
 * budget-script-model.ts (each proven equal to its script on real
 * Redis), one call at a time — as atomic as a script in Redis, since the
 * primary is one thread. A worker's turn of calls arrives as one batch and
 * is answered with one message (ipc-protocol.ts). So the guarantee,
 * `spend(Δ) ≤ burst + rate·Δ` across all workers, and budgets never
 * overspent, are those of the lease store on Redis.
 *
 * Its clock is monotonic whole milliseconds (as the script reads Redis
 * `TIME`); its state lives as long as the primary, like a Redis without
 * persistence that never restarts while the workers run.
 */
import { performance } from 'node:perf_hooks';
import { adjustBudgetModel, expireBudgetModel, runBudgetModel, type BudgetCounterMap } from './budget-script-model.js';
import type { LeaseReply } from '../limits/algorithm/lease-call.js';
import { isIpcBatch, type IpcBatch, type IpcCall, type IpcReplies, type IpcReply } from './ipc-protocol.js';
import type { LeaseCallArgs } from './lease-script.js';
import { runLeaseModel, type ModelHash } from './lease-script-model.js';

/** One worker's channel, seen from the primary (a cluster `Worker`, or `process` in a forked child). */
export interface WorkerChannel {
  send(message: unknown): boolean;
  on(event: 'message', listener: (message: unknown) => void): unknown;
}

interface BucketHash {
  readonly hash: ModelHash;
  /** The script's PEXPIRE: after this the key is gone (a full bucket with no leases). */
  expiresAt: number;
}

/** How often expired buckets and counters are dropped, ms. */
const SWEEP_MS = 10_000;

export interface LimitsPrimaryOptions {
  /** Whole milliseconds, never backwards; default monotonic (performance). */
  readonly now?: () => number;
  /** Answers the `metrics` op (main.ts aggregates every worker's registry). */
  readonly metrics?: () => Promise<string>;
}

export class LimitsPrimary {
  private readonly buckets = new Map<string, BucketHash>();
  private readonly budgets: BudgetCounterMap = new Map();
  private readonly now: () => number;
  private readonly metrics: (() => Promise<string>) | undefined;
  private readonly sweeper: NodeJS.Timeout;
  private received = 0;

  constructor(options: LimitsPrimaryOptions = {}) {
    const origin = performance.timeOrigin;
    this.now = options.now ?? (() => Math.floor(origin + performance.now()));
    this.metrics = options.metrics;
    this.sweeper = setInterval(() => this.sweep(), SWEEP_MS);
    this.sweeper.unref();
  }

  /** Answers `channel`'s batches from now on, each with one message (a `metrics` call, which takes a while, with one of its own). */
  serve(channel: WorkerChannel): void {
    const send = (replies: IpcReply[]): void => {
      if (replies.length === 0) return; // adjustments only: nothing waits
      try {
        channel.send({ tollgate: 'replies', replies } satisfies IpcReplies);
      } catch {
        // The worker is gone: its leases lapse at expiry (docs/leases.md, "A node that dies").
      }
    };
    channel.on('message', (message) => {
      if (!isIpcBatch(message)) return;
      send(this.answer(message, (later) => void later.then((reply) => send([reply]))));
    });
  }

  /** Batches received so far (tests count the round trips). */
  batchesReceived(): number {
    return this.received;
  }

  /** Runs lease calls in order, each one atomically, at the primary's time. */
  lease(calls: readonly LeaseCallArgs[]): LeaseReply[] {
    const replies: LeaseReply[] = [];
    for (const call of calls) {
      const now = this.now();
      let bucket = this.buckets.get(call.key);
      if (bucket !== undefined && bucket.expiresAt <= now) {
        this.buckets.delete(call.key);
        bucket = undefined;
      }
      if (bucket === undefined) {
        bucket = { hash: new Map(), expiresAt: 0 };
        this.buckets.set(call.key, bucket);
      }
      const reply = runLeaseModel(bucket.hash, call, now);
      if (reply.status === 1) {
        // lua/lease.lua: PEXPIRE 2 × (burst/rate + lease TTL); a stale call writes nothing.
        bucket.expiresAt = reply.nowMs + 2 * (Math.ceil((call.burst * call.rateDen) / call.rateNum) + call.leaseTtlMs);
      } else if (bucket.hash.size === 0) {
        this.buckets.delete(call.key);
      }
      replies.push(reply);
    }
    return replies;
  }

  /** lua/budget.lua, on the primary's counters. */
  reserveBudget(key: string, cap: number, amount: number, seed: number, ttlMs: number, least: number): [number, number, number] {
    return runBudgetModel(this.budgets, key, cap, amount, seed, ttlMs, least, this.now());
  }

  /** `INCRBY` on a budget counter. */
  adjustBudget(key: string, delta: number): number {
    return adjustBudgetModel(this.budgets, key, delta, this.now());
  }

  /** Buckets and budget counters held (tests, debugging). */
  size(): { buckets: number; budgets: number } {
    return { buckets: this.buckets.size, budgets: this.budgets.size };
  }

  close(): void {
    clearInterval(this.sweeper);
  }

  /**
   * A batch: its adjustments, then its calls in order, each one atomic (the
   * primary is one thread). Answers the calls it can at once; hands a
   * `metrics` call's answer to `later`.
   */
  private answer(batch: IpcBatch, later: (reply: Promise<IpcReply>) => void): IpcReply[] {
    this.received += 1;
    for (const [key, delta] of batch.adjust) {
      try {
        this.adjustBudget(key, delta);
      } catch {
        // A malformed adjustment from a buggy worker: nothing waits for it, and the primary stays up.
      }
    }
    const replies: IpcReply[] = [];
    for (const call of batch.calls) {
      if (call.op === 'metrics') {
        later(this.aggregate(call.id));
        continue;
      }
      try {
        replies.push({ id: call.id, ok: true, value: this.run(call) });
      } catch (error) {
        // A bug or a malformed call: the worker's call fails (its fail mode decides), the primary stays up.
        replies.push({ id: call.id, ok: false, error: error instanceof Error ? error.message : String(error) });
      }
    }
    return replies;
  }

  private run(call: Exclude<IpcCall, { op: 'metrics' }>): unknown {
    switch (call.op) {
      case 'lease':
        return this.lease(call.calls);
      case 'budget-reserve':
        return this.reserveBudget(...call.args);
      default:
        throw new Error(`unknown op ${String((call as { op: unknown }).op)}`);
    }
  }

  private async aggregate(id: number): Promise<IpcReply> {
    try {
      if (this.metrics === undefined) throw new Error('metrics are not aggregated here');
      return { id, ok: true, value: await this.metrics() };
    } catch (error) {
      return { id, ok: false, error: error instanceof Error ? error.message : String(error) };
    }
  }

  private sweep(): void {
    const now = this.now();
    for (const [key, bucket] of this.buckets) if (bucket.expiresAt <= now) this.buckets.delete(key);
    expireBudgetModel(this.budgets, now);
  }
}
