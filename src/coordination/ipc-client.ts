/**
 * A worker's side of the IPC channel to its primary: calls made in one turn
 * of the event loop leave together as one batch (ipc-protocol.ts) and come
 * back in one message; budget adjustments ride along, summed per key, without
 * an answer. Each call's wait is bounded. A reply that comes after its wait
 * ended is dropped — the primary may still have applied the call, exactly as
 * a Redis call that timed out may still run (docs/leases.md, "Slow Redis"),
 * and the lease protocol already makes that under-admission, never
 * over-admission.
 */
import { isIpcReplies, type IpcBatch, type IpcCall, type IpcOp, type IpcValues } from './ipc-protocol.js';

/** The channel to the primary: `process` in a cluster worker or forked child (or a ChildProcess, seen from its parent). */
export interface IpcChannel {
  send(message: unknown): boolean;
  on(event: 'message', listener: (message: unknown) => void): unknown;
  on(event: 'disconnect', listener: () => void): unknown;
  readonly connected: boolean;
}

interface Pending {
  readonly resolve: (value: unknown) => void;
  readonly reject: (error: Error) => void;
  readonly timer: NodeJS.Timeout;
}

type CallBody<O extends IpcOp> = Omit<Extract<IpcCall, { op: O }>, 'id' | 'op'>;

/** This turn's outgoing batch, and who hears that it left. */
interface Outgoing {
  readonly calls: IpcCall[];
  readonly adjust: Map<string, number>;
  readonly sent: Array<{ readonly resolve: () => void; readonly reject: (error: Error) => void }>;
}

export class IpcClient {
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  private disconnected = false;
  private outgoing: Outgoing | undefined;
  private batches = 0;

  constructor(private readonly channel: IpcChannel) {
    channel.on('message', (message) => {
      if (!isIpcReplies(message)) return;
      for (const reply of message.replies) {
        const waiting = this.pending.get(reply.id);
        if (waiting === undefined) continue; // timed out already
        this.pending.delete(reply.id);
        clearTimeout(waiting.timer);
        if (reply.ok) waiting.resolve(reply.value);
        else waiting.reject(new Error(`primary: ${reply.error}`));
      }
    });
    channel.on('disconnect', () => {
      this.disconnected = true;
      for (const [id, waiting] of this.pending) {
        this.pending.delete(id);
        clearTimeout(waiting.timer);
        waiting.reject(new Error('the IPC channel to the primary closed'));
      }
    });
  }

  /** True once the primary can no longer answer. */
  isClosed(): boolean {
    return this.disconnected || !this.channel.connected;
  }

  /** Batches sent so far (tests count the round trips). */
  batchesSent(): number {
    return this.batches;
  }

  /**
   * Sends one call with this turn's batch; rejects on an error reply, a
   * closed channel, or no reply within `timeoutMs`. `now` sends the batch at
   * once, with what it holds so far: for a caller that already gathered its
   * turn (lease-calls.ts sends a tick's lease calls from a setImmediate of its
   * own), so its calls do not wait one more turn of a busy loop.
   */
  call<O extends IpcOp>(op: O, body: CallBody<O>, timeoutMs: number, now = false): Promise<IpcValues[O]> {
    if (this.isClosed()) return Promise.reject(new Error('the IPC channel to the primary is closed'));
    const id = this.nextId++;
    return new Promise<IpcValues[O]>((resolve, reject) => {
      const timer = setTimeout(() => {
        // After pending I/O: a reply already in the pipe is read first (see lease-script.ts, afterPendingIo).
        setImmediate(() => {
          if (!this.pending.delete(id)) return;
          reject(new Error(`no answer from the primary within ${timeoutMs} ms`));
        });
      }, timeoutMs);
      this.pending.set(id, { resolve: resolve as (value: unknown) => void, reject, timer });
      const outgoing = this.batch();
      outgoing.calls.push({ id, op, ...body } as IpcCall);
      if (now) this.send(outgoing);
    });
  }

  /**
   * Adds `delta` to a budget counter with this turn's batch, unanswered;
   * resolves once the batch is handed to the channel, rejects if it cannot be.
   */
  adjust(key: string, delta: number): Promise<void> {
    if (this.isClosed()) return Promise.reject(new Error('the IPC channel to the primary is closed'));
    const outgoing = this.batch();
    outgoing.adjust.set(key, (outgoing.adjust.get(key) ?? 0) + delta);
    return new Promise<void>((resolve, reject) => outgoing.sent.push({ resolve, reject }));
  }

  /** The batch this turn's calls join; it leaves once the turn's I/O callbacks have run. */
  private batch(): Outgoing {
    if (this.outgoing !== undefined) return this.outgoing;
    const outgoing: Outgoing = { calls: [], adjust: new Map(), sent: [] };
    this.outgoing = outgoing;
    setImmediate(() => this.send(outgoing));
    return outgoing;
  }

  /** Sends `outgoing` unless it has left already. */
  private send(outgoing: Outgoing): void {
    if (this.outgoing !== outgoing) return;
    this.outgoing = undefined;
    const adjust = [...outgoing.adjust].filter(([, delta]) => delta !== 0);
    if (outgoing.calls.length === 0 && adjust.length === 0) {
      for (const listener of outgoing.sent) listener.resolve();
      return;
    }
    const batch: IpcBatch = { tollgate: 'batch', adjust, calls: outgoing.calls };
    try {
      if (this.isClosed()) throw new Error('the IPC channel to the primary is closed');
      this.channel.send(batch);
      this.batches += 1;
      for (const listener of outgoing.sent) listener.resolve();
    } catch (error) {
      const fault = error instanceof Error ? error : new Error(String(error));
      for (const call of outgoing.calls) {
        const waiting = this.pending.get(call.id);
        if (waiting === undefined) continue;
        this.pending.delete(call.id);
        clearTimeout(waiting.timer);
        waiting.reject(fault);
      }
      for (const listener of outgoing.sent) listener.reject(fault);
    }
  }
}
