/**
 * Sockets before authentication: thousands of connections that send half
 * their headers and hold, against a real `tollgate serve`. The proxy keeps at
 * most its caps of them (per address, and in all — where a new connection
 * takes the place of the oldest one still without headers), closes the rest
 * by the headers deadline, and meanwhile answers /healthz and an
 * authenticated request.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rmSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { dirname } from 'node:path';
import { openDatabase } from '../../../src/storage/sqlite/open.js';
import { SqliteKeyStore as KeyStore } from '../../../src/storage/sqlite/keys.js';
import { tempDatabasePath } from '../../support/db.js';
import { startFakeUpstream, type FakeUpstream } from '../../support/fake-upstream.js';
import { spawnServe, type TollgateProcess } from '../../support/process.js';
import { waitFor } from '../../support/wait.js';

// Long enough that a loaded machine serves the two requests below before the flood is released.
const HEADERS_TIMEOUT_MS = 12_000;
/** Closed this soon after connecting: by a cap, not by the deadline. */
const AT_ONCE_MS = HEADERS_TIMEOUT_MS - 1000;
const MAX_CONNECTIONS = 1200;
const PER_ADDRESS = 500;

let fake: FakeUpstream;
let proxy: TollgateProcess & { url: string };
let port: number;
let key: string;
const { path: db } = tempDatabasePath();
const sockets: Socket[] = [];

beforeAll(async () => {
  fake = await startFakeUpstream({ apiKey: 'sk-slow-headers' });
  const database = openDatabase(db);
  key = new KeyStore(database).createKey({ name: 'tenant', policy: { limits: [] } }).key;
  database.close();
  proxy = await spawnServe({
    TOLLGATE_UPSTREAM_URL: fake.url,
    TOLLGATE_UPSTREAM_KEY: 'sk-slow-headers',
    TOLLGATE_DB: db,
    TOLLGATE_MAX_CONNECTIONS: String(MAX_CONNECTIONS),
    TOLLGATE_MAX_CONNECTIONS_PER_ADDRESS: String(PER_ADDRESS),
    TOLLGATE_HEADERS_TIMEOUT: `${HEADERS_TIMEOUT_MS}ms`,
    TOLLGATE_TRUSTED_PROXIES: '127.0.0.20',
  });
  port = Number(new URL(proxy.url).port);
}, 90_000);

afterAll(async () => {
  for (const socket of sockets) socket.destroy();
  proxy.child.kill('SIGKILL');
  await fake.close();
  rmSync(dirname(db), { recursive: true, force: true });
});

interface Flood {
  /** Connections the server has not closed yet. */
  open(): number;
  /** Connections the server closed within `ms` of their connect. */
  closedWithin(ms: number): number;
  readonly count: number;
}

/** Opens `count` connections from `address` that send half a request's headers (or, `silent`, nothing) and hold. */
async function flood(address: string, count: number, silent = false): Promise<Flood> {
  const closedAfter: number[] = [];
  let open = 0;
  for (let i = 0; i < count; i += 100) {
    await Promise.all(
      Array.from({ length: Math.min(100, count - i) }, () => {
        const socket = connect({ port, host: '127.0.0.1', localAddress: address });
        sockets.push(socket);
        const started = Date.now();
        let closed = false;
        const onClosed = (): void => {
          if (closed) return;
          closed = true;
          open -= 1;
          closedAfter.push(Date.now() - started);
        };
        // Read (and drop) whatever comes: a socket never read never sees the server's FIN.
        socket.resume();
        socket.on('error', onClosed);
        socket.on('close', onClosed);
        socket.on('end', onClosed);
        open += 1;
        return new Promise<void>((resolve) => {
          socket.once('connect', () => {
            if (!silent) socket.write('GET /healthz HTTP/1.1\r\nHost: tollgate\r\nX-Slow: ');
            resolve();
          });
          socket.once('error', () => resolve());
        });
      }),
    );
  }
  return { open: () => open, closedWithin: (ms) => closedAfter.filter((after) => after <= ms).length, count };
}

/** /healthz and a key's chat request, answered. */
async function served(): Promise<{ healthz: number; chat: number }> {
  const healthz = await fetch(`${proxy.url}/healthz`);
  await healthz.text();
  const chat = await fetch(`${proxy.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'still there?' }], max_tokens: 20 }),
  });
  await chat.text();
  return { healthz: healthz.status, chat: chat.status };
}

describe('a slow-headers flood', () => {
  it('from one address: holds its cap of them, serves everyone else, and closes them by the deadline', async () => {
    const attack = await flood('127.0.0.2', 2000);
    // Node's own headersTimeout never closes a connection that sends nothing at all.
    const silent = await flood('127.0.0.3', 50, true);
    // Past its address's cap, a connection is closed at once.
    await waitFor(() => attack.open() <= PER_ADDRESS, `at most ${PER_ADDRESS} connections of one address open`, 10_000);
    expect(attack.closedWithin(AT_ONCE_MS)).toBeGreaterThanOrEqual(2000 - PER_ADDRESS);

    // Answered while the flood still holds its connections: without the guard these would wait
    // for descriptors the flood releases only at its headers deadline. (No elapsed-time bound:
    // a shared machine decides those.)
    expect(await served()).toMatchObject({ healthz: 200, chat: 200 });
    expect(attack.open() + silent.open()).toBeGreaterThan(0);

    await waitFor(() => attack.open() + silent.open() === 0, 'every flood connection closed by the headers deadline', HEADERS_TIMEOUT_MS + 8000);
  }, 60_000);

  it('from many addresses: stays within its cap by closing the oldest connections without headers, and keeps serving', async () => {
    const attacks = await Promise.all(Array.from({ length: 8 }, (_, i) => flood(`127.0.0.${10 + i}`, 300)));
    const open = (): number => attacks.reduce((sum, attack) => sum + attack.open(), 0);
    await waitFor(() => open() <= MAX_CONNECTIONS, `at most ${MAX_CONNECTIONS} flood connections open`, 10_000);

    expect(await served()).toMatchObject({ healthz: 200, chat: 200 });
    expect(open()).toBeGreaterThan(0);

    await waitFor(() => open() === 0, 'every flood connection closed by the headers deadline', HEADERS_TIMEOUT_MS + 8000);
    // The ones past the cap made room before any deadline: the oldest gave way to the newest.
    const atOnce = attacks.reduce((sum, attack) => sum + attack.closedWithin(AT_ONCE_MS), 0);
    expect(atOnce).toBeGreaterThanOrEqual(8 * 300 - MAX_CONNECTIONS);
    // The operator hears of it (a warning at most every 10 s).
    await waitFor(
      () => proxy.logs.some((line) => line.level === 'warn' && String(line.msg).startsWith('connections turned away')),
      'a warning about the flood in the log',
      15_000,
    );
  }, 60_000);

  it('exempts a trusted proxy from the per-address cap, not from the deadline', async () => {
    const balancer = await flood('127.0.0.20', PER_ADDRESS + 200);
    await waitFor(() => balancer.open() === 0, 'the balancer’s idle connections closed by the headers deadline', HEADERS_TIMEOUT_MS + 8000);
    // None was closed at once: the balancer carries many clients.
    expect(balancer.closedWithin(AT_ONCE_MS)).toBe(0);
  }, 60_000);
});
