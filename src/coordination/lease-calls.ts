/**
 * The lease store's call queue: at most one call in flight per bucket, every
 * call due in a tick sent together (one pipeline; one per hash tag on a
 * Cluster), each batch bounded by a timeout, and a circuit breaker that stops
 * sending to a dead Redis. Callers wait on a promise that always resolves;
 * the outcome is on the slot (`lastCallOk`) and in the lease.
 */
import type { CircuitBreaker } from '../limits/algorithm/circuit-breaker.js';
import type { BucketLease } from '../limits/algorithm/lease.js';
import type { LeaseCallPlan } from '../limits/algorithm/lease-call.js';
import { afterPendingIo, type LeaseCallArgs, type LeaseTransport } from './lease-script.js';
import type { LimiterObserver } from '../limits/limiter.js';

interface Deferred {
  readonly promise: Promise<void>;
  readonly resolve: () => void;
}

function createDeferred(): Deferred {
  let resolve: () => void = () => undefined;
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

/** A lease plus its place in the call queue. */
export class LeaseSlot {
  /** Queued for the next flush. */
  scheduled = false;
  /** Completes when the next call for this slot completes. */
  next: Deferred | null = null;
  /** Completes when the call in flight completes. */
  current: Deferred | null = null;
  /** Outcome of the last completed call. */
  lastCallOk = true;
  /** Dropped from the store's map (idle); a ticket holding it resolves the bucket again. */
  removed = false;
  constructor(
    readonly lease: BucketLease,
    readonly key: string,
  ) {}
}

/** What the queue needs from its owner. */
export interface LeaseCallerOptions {
  /** Where `lua/lease.lua` runs: Redis, or the primary of `serve --workers` (ipc-store.ts). */
  readonly transport: LeaseTransport;
  readonly nodeId: string;
  readonly leaseTtlMs: number;
  readonly callTimeoutMs: number;
  readonly breaker: CircuitBreaker;
  readonly clock: () => number;
  readonly observer: LimiterObserver | undefined;
  /** Redis stopped answering (breaker opened, connection closed). */
  readonly onUnreachable: (reason: string) => void;
  /** A batch succeeded. */
  readonly onReachable: () => void;
}

export class LeaseCaller {
  private pending: LeaseSlot[] = [];
  private flushQueued = false;
  private readonly batches = new Set<Promise<void>>();
  /** Set while closing: no more automatic flushes. */
  stopped = false;

  constructor(private readonly options: LeaseCallerOptions) {}

  /** True when a request should not even wait: the client is closed or the breaker open. */
  isUnreachable(now: number): boolean {
    return this.options.transport.isClosed() || this.options.breaker.isOpen(now);
  }

  /** Ms until the breaker lets a probe through (0 when closed). */
  breakerRemainingMs(now: number): number {
    return this.options.breaker.remainingMs(now);
  }

  /** Asks for a call on this slot for a request of `cost`; resolves (never rejects) when one completes. */
  request(slot: LeaseSlot, cost: number): Promise<void> {
    if (slot.current !== null) return slot.current.promise;
    slot.lease.addUrgent(cost);
    this.schedule(slot);
    slot.next ??= createDeferred();
    return slot.next.promise;
  }

  /** Queues a call for this slot in the next tick's batch. */
  schedule(slot: LeaseSlot): void {
    this.enqueue(slot);
    if (!this.flushQueued && !this.stopped) {
      this.flushQueued = true;
      setImmediate(() => {
        this.flushQueued = false;
        void this.flush(this.options.clock());
      });
    }
  }

  /** Queues without arming the tick (the owner flushes itself, e.g. on close). */
  enqueue(slot: LeaseSlot): void {
    if (slot.scheduled) return;
    slot.scheduled = true;
    this.pending.push(slot);
  }

  /** Resolves true once every batch in flight has finished, false after `ms`. */
  async drain(ms: number): Promise<boolean> {
    return waitWithin([...this.batches], ms);
  }

  /** Sends every queued call in one batch. */
  flush(now: number): Promise<void> {
    const { transport, breaker } = this.options;
    const ready: LeaseSlot[] = [];
    const waiting: LeaseSlot[] = [];
    for (const slot of this.pending) (slot.lease.inflight ? waiting : ready).push(slot);
    this.pending = waiting;
    if (ready.length === 0) return Promise.resolve();
    const closed = transport.isClosed();
    if (closed || !breaker.allowCall(now)) {
      this.options.onUnreachable(closed ? 'lease store connection closed' : 'circuit breaker open');
      for (const slot of ready) {
        slot.scheduled = false;
        slot.lastCallOk = false;
        const next = slot.next;
        slot.next = null;
        next?.resolve();
      }
      return Promise.resolve();
    }
    const plans: LeaseCallPlan[] = [];
    const calls: LeaseCallArgs[] = [];
    for (const slot of ready) {
      slot.scheduled = false;
      slot.current = slot.next ?? createDeferred();
      slot.next = null;
      const plan = slot.lease.beginCall(now);
      plans.push(plan);
      calls.push(this.encodeCall(slot, plan));
    }
    const batch = this.runBatch(ready, plans, calls);
    this.batches.add(batch);
    void batch.finally(() => this.batches.delete(batch));
    return batch;
  }

  private async runBatch(slots: LeaseSlot[], plans: LeaseCallPlan[], calls: LeaseCallArgs[]): Promise<void> {
    const { clock, observer, breaker } = this.options;
    const started = clock();
    const outcomes = await this.options.transport.run(calls, this.options.callTimeoutMs);
    const done = clock();
    let succeeded = 0;
    let failed = 0;
    let firstError = '';
    for (let i = 0; i < slots.length; i++) {
      const slot = slots[i]!;
      const outcome = outcomes[i]!;
      if (outcome.ok && slot.lease.finishCall(outcome.reply, done)) {
        succeeded++;
        slot.lastCallOk = true;
        if (plans[i]!.want > 0) observer?.leaseTopUp?.(slot.lease.ref.id, outcome.reply.granted);
      } else {
        if (!outcome.ok) slot.lease.failCall();
        failed++;
        slot.lastCallOk = false;
        firstError ||= outcome.ok ? 'stale call' : outcome.error.message;
      }
      observer?.redisCall?.('lease', done - started, outcome.ok);
      const current = slot.current;
      slot.current = null;
      current?.resolve();
      if (slot.scheduled && !this.stopped) this.schedule(slot);
    }
    if (succeeded > 0) {
      breaker.recordSuccess();
      this.options.onReachable();
    } else if (failed > 0 && breaker.recordFailure(done)) {
      this.options.onUnreachable(`circuit breaker opened: ${firstError}`);
    }
  }

  private encodeCall(slot: LeaseSlot, plan: LeaseCallPlan): LeaseCallArgs {
    const { ref, shape } = slot.lease;
    return {
      key: slot.key,
      hashTag: ref.hashTag,
      nodeId: this.options.nodeId,
      ...plan,
      burst: shape.capacity,
      rateNum: shape.rateNum,
      rateDen: shape.rateDen,
      leaseTtlMs: this.options.leaseTtlMs,
      startEmpty: ref.startEmpty === true,
    };
  }
}

/** Resolves true when all promises settle within `ms`, false on timeout. */
export async function waitWithin(promises: readonly Promise<unknown>[], ms: number): Promise<boolean> {
  if (promises.length === 0) return true;
  if (ms <= 0) return false;
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((resolve) => {
    timer = setTimeout(() => afterPendingIo(() => resolve(false)), ms);
  });
  try {
    return await Promise.race([Promise.all(promises).then(() => true as const), timeout]);
  } finally {
    clearTimeout(timer);
  }
}
