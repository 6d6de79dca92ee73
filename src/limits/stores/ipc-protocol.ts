/**
 * The messages between the workers of `tollgate serve --workers N` and their
 * primary, over Node's IPC channel (cluster, or any forked child). Each
 * request carries an id; the primary answers every request once. Messages not
 * marked `tollgate` belong to someone else (prom-client's cluster metrics use
 * the same channel) and are ignored.
 */
import type { LeaseReply } from '../algorithm/lease-call.js';
import type { LeaseCallArgs } from './lease-script.js';

/** What a worker asks of its primary. */
export type IpcRequest =
  /** A tick's lease calls (`lua/lease.lua`'s arguments), run in order. */
  | { readonly tollgate: 'request'; readonly id: number; readonly op: 'lease'; readonly calls: readonly LeaseCallArgs[] }
  /** One run of `lua/budget.lua`: key, cap, amount, seed, ttl ms, least. */
  | {
      readonly tollgate: 'request';
      readonly id: number;
      readonly op: 'budget-reserve';
      readonly args: readonly [string, number, number, number, number, number];
    }
  /** `INCRBY key delta` on a budget counter. */
  | { readonly tollgate: 'request'; readonly id: number; readonly op: 'budget-adjust'; readonly key: string; readonly delta: number }
  /** The Prometheus exposition of every worker, aggregated (main.ts). */
  | { readonly tollgate: 'request'; readonly id: number; readonly op: 'metrics' };

export type IpcOp = IpcRequest['op'];

/** The primary's answer to one request. */
export type IpcReply =
  | { readonly tollgate: 'reply'; readonly id: number; readonly ok: true; readonly value: unknown }
  | { readonly tollgate: 'reply'; readonly id: number; readonly ok: false; readonly error: string };

/** What each op answers with. */
export interface IpcValues {
  readonly lease: LeaseReply[];
  readonly 'budget-reserve': [number, number, number];
  readonly 'budget-adjust': number;
  readonly metrics: string;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null;
}

/** A request from a worker (anything else on the channel is not ours). */
export function isIpcRequest(message: unknown): message is IpcRequest {
  return isRecord(message) && message.tollgate === 'request' && typeof message.id === 'number' && typeof message.op === 'string';
}

/** A reply from the primary. */
export function isIpcReply(message: unknown): message is IpcReply {
  return isRecord(message) && message.tollgate === 'reply' && typeof message.id === 'number' && typeof message.ok === 'boolean';
}
