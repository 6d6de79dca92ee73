/**
 * A worker's side of the IPC channel to its primary: numbered requests, one
 * reply each, bounded waits. A reply that comes after its wait ended is
 * dropped — the primary may still have applied the call, exactly as a Redis
 * call that timed out may still run (docs/leases.md, "Slow Redis"), and the
 * lease protocol already makes that under-admission, never over-admission.
 */
import { isIpcReply, type IpcOp, type IpcRequest, type IpcValues } from './ipc-protocol.js';

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

type RequestBody<O extends IpcOp> = Omit<Extract<IpcRequest, { op: O }>, 'tollgate' | 'id' | 'op'>;

export class IpcClient {
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  private disconnected = false;

  constructor(private readonly channel: IpcChannel) {
    channel.on('message', (message) => {
      if (!isIpcReply(message)) return;
      const waiting = this.pending.get(message.id);
      if (waiting === undefined) return; // timed out already
      this.pending.delete(message.id);
      clearTimeout(waiting.timer);
      if (message.ok) waiting.resolve(message.value);
      else waiting.reject(new Error(`primary: ${message.error}`));
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

  /** Sends one request; rejects on an error reply, a closed channel, or no reply within `timeoutMs`. */
  call<O extends IpcOp>(op: O, body: RequestBody<O>, timeoutMs: number): Promise<IpcValues[O]> {
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
      try {
        this.channel.send({ tollgate: 'request', id, op, ...body });
      } catch (error) {
        this.pending.delete(id);
        clearTimeout(timer);
        reject(error instanceof Error ? error : new Error(String(error)));
      }
    });
  }
}
