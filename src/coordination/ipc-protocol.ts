/**
 * The messages between the workers of `tollgate serve --workers N` and their
 * primary, over Node's IPC channel (cluster, or any forked child). A worker
 * sends what it asks for in one turn of its event loop as one batch; the
 * primary runs the batch's budget adjustments, then its calls in order, each
 * one atomically, and answers every call of the batch in one message. Each
 * message costs a serialization and a wake-up on both sides, which the
 * profile of bench/workers.ts shows is most of what the primary does (README,
 * "Every core"). Messages not marked `tollgate` belong to someone else
 * (prom-client's cluster metrics use the same channel) and are ignored.
 */
import type { LeaseReply } from '../limits/algorithm/lease-call.js';
import type { LeaseCallArgs } from './lease-script.js';

/** A call a worker waits for: the primary answers it once. */
export type IpcCall =
  /** A tick's lease calls (`lua/lease.lua`'s arguments), run in order. */
  | { readonly id: number; readonly op: 'lease'; readonly calls: readonly LeaseCallArgs[] }
  /** One run of `lua/budget.lua`: key, cap, amount, seed, ttl ms, least. */
  | { readonly id: number; readonly op: 'budget-reserve'; readonly args: readonly [string, number, number, number, number, number] }
  /** The Prometheus exposition of every worker, aggregated (main.ts). */
  | { readonly id: number; readonly op: 'metrics' };

export type IpcOp = IpcCall['op'];

/** What a worker sends its primary: one turn's worth. */
export interface IpcBatch {
  readonly tollgate: 'batch';
  /**
   * `INCRBY key delta` on budget counters, one per key (a turn's adjustments
   * summed), applied before the calls and never answered: a settlement moves
   * a counter by what a request actually cost, and nothing waits for it.
   */
  readonly adjust: readonly (readonly [key: string, delta: number])[];
  readonly calls: readonly IpcCall[];
}

/** The primary's answer to one call. */
export type IpcReply =
  { readonly id: number; readonly ok: true; readonly value: unknown } | { readonly id: number; readonly ok: false; readonly error: string };

/** The answers to one batch's calls, in the batch's order. */
export interface IpcReplies {
  readonly tollgate: 'replies';
  readonly replies: readonly IpcReply[];
}

/** What each op answers with. */
export interface IpcValues {
  readonly lease: LeaseReply[];
  readonly 'budget-reserve': [number, number, number];
  readonly metrics: string;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null;
}

/** A batch from a worker (anything else on the channel is not ours). */
export function isIpcBatch(message: unknown): message is IpcBatch {
  return isRecord(message) && message.tollgate === 'batch' && Array.isArray(message.calls) && Array.isArray(message.adjust);
}

/** The primary's answers to a batch. */
export function isIpcReplies(message: unknown): message is IpcReplies {
  return isRecord(message) && message.tollgate === 'replies' && Array.isArray(message.replies);
}
