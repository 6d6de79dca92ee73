/**
 * Sockets before authentication: every open connection holds a
 * file descriptor, and a client that opens thousands and sends half their
 * headers costs nothing to keep waiting — until the process runs out of
 * descriptors and every request, `/healthz` included, fails. So:
 *
 * - **a deadline for headers**: a connection that has not finished its first
 *   request's headers within `headersTimeoutMs` is closed. Node's own
 *   `headersTimeout` only covers a request that has begun; a connection that
 *   sends nothing at all would otherwise stay open for good.
 * - **a cap per client address** (the socket's; addresses in
 *   TOLLGATE_TRUSTED_PROXIES — load balancers carrying many clients — are
 *   exempt): one more connection from that address is closed at once.
 * - **a cap on all connections**, below the process's descriptor limit. At
 *   the cap, a new connection takes the place of the oldest one that has not
 *   finished its headers (else of the oldest idle keep-alive one); only when
 *   every connection is busy with a request is the new one closed. A flood of
 *   slow headers from many addresses thus makes room for real clients
 *   instead of locking them out.
 *
 * The guard's logic holds no I/O of its own beyond closing sockets it is
 * handed; `attach` wires it to a Node server.
 */
import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import { normalizeAddress } from './client-address.js';

export interface ConnectionLimits {
  /** Open connections in all. */
  readonly maxConnections: number;
  /** Open connections from one socket address (trusted proxies are exempt). */
  readonly maxPerAddress: number;
  /** Time a connection has to finish its first request's headers (ms). */
  readonly headersTimeoutMs: number;
  /** Addresses exempt from the per-address cap (normalised: src/http/client-address.ts). */
  readonly trusted: ReadonlySet<string>;
}

/** Counters for logs and metrics. */
export interface ConnectionStats {
  readonly open: number;
  /** Closed at once: their address had its cap. */
  readonly refusedPerAddress: number;
  /** Closed at once: the process had its cap and no connection could make room. */
  readonly refusedTotal: number;
  /** Closed to make room for a new connection at the cap. */
  readonly evicted: number;
  /** Closed because their headers did not arrive in time. */
  readonly headersTimedOut: number;
}

type State = 'new' | 'active' | 'idle';

interface Entry {
  readonly socket: Socket;
  readonly address: string;
  readonly openedAt: number;
  state: State;
}

function normalize(address: string | undefined): string {
  return address === undefined ? 'unknown' : normalizeAddress(address);
}

export class ConnectionGuard {
  private readonly entries = new Map<Socket, Entry>();
  /** Connections by state, each in arrival order (oldest first). */
  private readonly waitingForHeaders = new Map<Socket, Entry>();
  private readonly idle = new Map<Socket, Entry>();
  private readonly perAddress = new Map<string, number>();
  private readonly counters = { refusedPerAddress: 0, refusedTotal: 0, evicted: 0, headersTimedOut: 0 };
  private sweeper: NodeJS.Timeout | undefined;

  constructor(
    private readonly limits: ConnectionLimits,
    private readonly now: () => number = () => performance.now(),
  ) {}

  get stats(): ConnectionStats {
    return { open: this.entries.size, ...this.counters };
  }

  /** Connections from an address now. */
  openFrom(address: string): number {
    return this.perAddress.get(normalize(address)) ?? 0;
  }

  /** Guards a server's connections; the sweep for late headers runs until the server closes. */
  attach(server: Server): void {
    server.on('connection', (socket: Socket) => this.admit(socket));
    server.on('request', (request: { socket: Socket }, response: { once(event: 'close', listener: () => void): unknown }) => {
      this.active(request.socket);
      response.once('close', () => this.finished(request.socket));
    });
    const interval = Math.max(50, Math.min(1000, Math.floor(this.limits.headersTimeoutMs / 4)));
    this.sweeper = setInterval(() => this.sweep(), interval);
    this.sweeper.unref();
    server.once('close', () => clearInterval(this.sweeper));
  }

  /** A new connection: tracked, or closed at once when over a cap. */
  admit(socket: Socket): void {
    const address = normalize(socket.remoteAddress);
    if (!this.limits.trusted.has(address) && (this.perAddress.get(address) ?? 0) >= this.limits.maxPerAddress) {
      this.counters.refusedPerAddress += 1;
      socket.destroy();
      return;
    }
    if (this.entries.size >= this.limits.maxConnections && !this.evictOne()) {
      this.counters.refusedTotal += 1;
      socket.destroy();
      return;
    }
    const entry: Entry = { socket, address, openedAt: this.now(), state: 'new' };
    this.entries.set(socket, entry);
    this.waitingForHeaders.set(socket, entry);
    this.perAddress.set(address, (this.perAddress.get(address) ?? 0) + 1);
    socket.once('close', () => this.forget(socket));
  }

  /** A request's headers arrived on the connection. */
  active(socket: Socket): void {
    const entry = this.entries.get(socket);
    if (entry === undefined) return;
    entry.state = 'active';
    this.waitingForHeaders.delete(socket);
    this.idle.delete(socket);
  }

  /** The connection's response is done: it idles until its next request (keep-alive). */
  finished(socket: Socket): void {
    const entry = this.entries.get(socket);
    if (entry === undefined || entry.state !== 'active' || socket.destroyed) return;
    entry.state = 'idle';
    this.idle.set(socket, entry);
  }

  /** Closes connections whose headers are late. */
  sweep(): void {
    const deadline = this.now() - this.limits.headersTimeoutMs;
    for (const entry of this.waitingForHeaders.values()) {
      if (entry.openedAt > deadline) break; // arrival order: the rest are younger
      this.counters.headersTimedOut += 1;
      this.close(entry);
    }
  }

  /** Makes room at the cap: the oldest connection still waiting for headers, else the oldest idle one. */
  private evictOne(): boolean {
    const victim = first(this.waitingForHeaders) ?? first(this.idle);
    if (victim === undefined) return false;
    this.counters.evicted += 1;
    this.close(victim);
    return true;
  }

  private close(entry: Entry): void {
    // Untracked now: 'close' comes later, and the room is needed now.
    this.forget(entry.socket);
    entry.socket.destroy();
  }

  private forget(socket: Socket): void {
    const entry = this.entries.get(socket);
    if (entry === undefined) return;
    this.entries.delete(socket);
    this.waitingForHeaders.delete(socket);
    this.idle.delete(socket);
    const left = (this.perAddress.get(entry.address) ?? 0) - 1;
    if (left <= 0) this.perAddress.delete(entry.address);
    else this.perAddress.set(entry.address, left);
  }
}

function first(map: Map<Socket, Entry>): Entry | undefined {
  for (const entry of map.values()) return entry;
  return undefined;
}
