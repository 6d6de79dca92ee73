/**
 * Runs `lua/lease.lua`: encodes calls, sends a tick's worth of them in one
 * pipeline with EVALSHA (falling back to EVAL, which also loads the script,
 * on NOSCRIPT), bounds the wait, and decodes the integer replies.
 *
 * Thin I/O on purpose: all decisions live in `algorithm/lease.ts` (node) and the script.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { Cluster, Redis } from 'ioredis';
import type { LeaseReply } from '../limits/algorithm/lease-call.js';
import { SPEND_BINS } from '../limits/algorithm/spend-log.js';

export type { LeaseReply } from '../limits/algorithm/lease-call.js';

/** The reviewed script source, shipped in the package's `lua/` folder. */
export const LEASE_SCRIPT: string = readFileSync(new URL('../../lua/lease.lua', import.meta.url), 'utf8');
/** SHA-1 of {@link LEASE_SCRIPT}, the EVALSHA handle. */
export const LEASE_SCRIPT_SHA: string = createHash('sha1').update(LEASE_SCRIPT).digest('hex');

/** The Redis client the lease store accepts: a single node or a Cluster. */
export type RedisClient = Redis | Cluster;

/** One report-and-get call; field order is ARGV order (see the script header). */
export interface LeaseCallArgs {
  /** KEYS[1]: `tg:{<hashTag>}:<limitName>`. */
  readonly key: string;
  /** The hash tag inside the key, used to group a Cluster pipeline by slot. */
  readonly hashTag: string;
  readonly nodeId: string;
  readonly seq: number;
  readonly reportId: number;
  readonly keep: number;
  readonly returned: number;
  readonly refunded: number;
  readonly refundedSince: number;
  readonly debt: number;
  readonly want: number;
  readonly min: number;
  readonly burst: number;
  readonly rateNum: number;
  readonly rateDen: number;
  readonly leaseTtlMs: number;
  readonly startEmpty: boolean;
  /** [spent-by ms, amount, …], at most 8 pairs (ARGV 16–31). */
  readonly spentBins: readonly number[];
}

export type LeaseOutcome = { readonly ok: true; readonly reply: LeaseReply } | { readonly ok: false; readonly error: Error };

/**
 * Where lease calls run: Redis ({@link redisLeaseTransport}), or the primary
 * process of `tollgate serve --workers N` (ipc-store.ts), which runs the same
 * script transcribed in lease-script-model.ts.
 */
export interface LeaseTransport {
  /** True once calls can never succeed again (connection ended). */
  isClosed(): boolean;
  /** Runs the calls; one outcome per call, never rejecting; each batch bounded by `timeoutMs`. */
  run(calls: readonly LeaseCallArgs[], timeoutMs: number): Promise<LeaseOutcome[]>;
}

/** Lease calls on Redis (a single node or a Cluster). */
export function redisLeaseTransport(redis: RedisClient): LeaseTransport {
  return {
    isClosed: () => redis.status === 'end',
    run: (calls, timeoutMs) => runLeaseCalls(redis, calls, timeoutMs),
  };
}

/** Builds the Redis key of a bucket. */
export function formatBucketKey(prefix: string, hashTag: string, limitName: string): string {
  return `${prefix}:{${hashTag}}:${limitName}`;
}

/** KEYS[1] and ARGV of a call, in script order. */
export function encodeLeaseArgs(call: LeaseCallArgs): (string | number)[] {
  return [
    call.key,
    call.nodeId,
    call.seq,
    call.reportId,
    call.keep,
    call.returned,
    call.refunded,
    call.refundedSince,
    call.debt,
    call.want,
    call.min,
    call.burst,
    call.rateNum,
    call.rateDen,
    call.leaseTtlMs,
    call.startEmpty ? 1 : 0,
    ...Array.from({ length: 2 * SPEND_BINS }, (_, i) => call.spentBins[i] ?? 0),
  ];
}

/** Decodes a reply; a malformed one is a fault (wrong script, proxy in between). */
export function decodeLeaseReply(value: unknown): LeaseReply {
  if (!Array.isArray(value) || value.length !== 10 || !value.every((v) => typeof v === 'number')) {
    throw new Error(`unexpected lease script reply: ${JSON.stringify(value)}`);
  }
  const v = value as number[];
  return {
    status: v[0]!,
    granted: v[1]!,
    kept: v[2]!,
    lease: v[3]!,
    tokens: v[4]!,
    carry: v[5]!,
    outstanding: v[6]!,
    active: v[7]!,
    nowMs: v[8]!,
    retryMs: v[9]!,
  };
}

/**
 * Sends `calls` and resolves with one outcome per call, never rejecting.
 * A single Redis gets one pipeline; a Cluster gets one pipeline per hash tag
 * (a pipeline must stay within one slot). Each pipeline is bounded by
 * `timeoutMs`; on timeout its calls fail (their reports are resent later under
 * the same report id, so nothing is applied twice).
 */
export async function runLeaseCalls(redis: RedisClient, calls: readonly LeaseCallArgs[], timeoutMs: number): Promise<LeaseOutcome[]> {
  const outcomes: LeaseOutcome[] = new Array<LeaseOutcome>(calls.length);
  const groups = new Map<string, number[]>();
  if (redis.isCluster) {
    calls.forEach((call, i) => {
      const group = groups.get(call.hashTag);
      if (group) group.push(i);
      else groups.set(call.hashTag, [i]);
    });
  } else {
    groups.set(
      '',
      calls.map((_, i) => i),
    );
  }
  await Promise.all(
    [...groups.values()].map(async (indexes) => {
      const results = await withTimeout(
        runPipeline(
          redis,
          indexes.map((i) => calls[i]!),
        ),
        timeoutMs,
      );
      indexes.forEach((callIndex, j) => {
        outcomes[callIndex] = results instanceof Error ? { ok: false, error: results } : results[j]!;
      });
    }),
  );
  return outcomes;
}

async function runPipeline(redis: RedisClient, calls: readonly LeaseCallArgs[]): Promise<LeaseOutcome[]> {
  const first = await execScripts(redis, calls, 'evalsha');
  const missing: number[] = [];
  first.forEach((outcome, i) => {
    if (!outcome.ok && outcome.error.message.includes('NOSCRIPT')) missing.push(i);
  });
  if (missing.length === 0) return first;
  // Redis restarted or its script cache was flushed: EVAL sends the source and reloads it.
  const retried = await execScripts(
    redis,
    missing.map((i) => calls[i]!),
    'eval',
  );
  missing.forEach((callIndex, j) => {
    first[callIndex] = retried[j]!;
  });
  return first;
}

async function execScripts(redis: RedisClient, calls: readonly LeaseCallArgs[], how: 'evalsha' | 'eval'): Promise<LeaseOutcome[]> {
  const pipeline = redis.pipeline();
  for (const call of calls) {
    if (how === 'evalsha') pipeline.evalsha(LEASE_SCRIPT_SHA, 1, ...encodeLeaseArgs(call));
    else pipeline.eval(LEASE_SCRIPT, 1, ...encodeLeaseArgs(call));
  }
  let replies: [Error | null, unknown][] | null;
  try {
    replies = await pipeline.exec();
  } catch (error) {
    const fault = asError(error);
    return calls.map(() => ({ ok: false, error: fault }));
  }
  return calls.map((_, i): LeaseOutcome => {
    const entry = replies?.[i];
    if (!entry) return { ok: false, error: new Error('pipeline returned no reply') };
    const [error, value] = entry;
    if (error) return { ok: false, error };
    try {
      return { ok: true, reply: decodeLeaseReply(value) };
    } catch (decodeError) {
      return { ok: false, error: asError(decodeError) };
    }
  });
}

async function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T | Error> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<Error>((resolve) => {
    timer = setTimeout(() => afterPendingIo(() => resolve(new Error(`lease call timed out after ${ms} ms`))), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Runs `fn` after the event loop has read pending I/O. When the loop was
 * blocked (synchronous work elsewhere in the process), an expired timer runs
 * before a reply already waiting in the socket is read; without this, a
 * healthy Redis would be taken for a slow one.
 */
export function afterPendingIo(fn: () => void): void {
  setImmediate(fn);
}

function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}

/**
 * Loads the script into Redis' cache ahead of the first call (every master of
 * a Cluster). Best effort: failures are ignored, EVALSHA falls back anyway.
 */
export async function preloadLeaseScript(redis: RedisClient): Promise<void> {
  try {
    const targets = redis.isCluster ? (redis as Cluster).nodes('master') : [redis as Redis];
    await Promise.all(targets.map((node) => node.script('LOAD', LEASE_SCRIPT).catch(() => undefined)));
  } catch {
    // The client is not connected yet (Cluster nodes unknown): the first call loads it.
  }
}
