/**
 * The listening socket's backlog (TOLLGATE_LISTEN_BACKLOG): connections the
 * kernel completes and holds until the proxy accepts them. libuv accepts one
 * connection per event-loop turn, so a proxy whose loop is busy falls behind
 * a burst; with Node's default of 511 the kernel then drops handshakes, which
 * clients see as resets or seconds of SYN retries (README "Many open streams").
 *
 * A stopped process (SIGSTOP) is the busiest loop there is: it accepts
 * nothing, so `ss` shows exactly how many connections the kernel holds for it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { dirname } from 'node:path';
import { tempDatabasePath } from '../../support/db.js';
import { startFakeUpstream, type FakeUpstream } from '../../support/fake-upstream.js';
import { spawnServe, type TollgateProcess } from '../../support/process.js';
import { waitFor } from '../../support/wait.js';

let fake: FakeUpstream;
const { path: db } = tempDatabasePath();
const running: TollgateProcess[] = [];
const sockets: Socket[] = [];

beforeAll(async () => {
  fake = await startFakeUpstream({ apiKey: 'sk-backlog' });
});

afterAll(async () => {
  for (const socket of sockets) socket.destroy();
  for (const proc of running) {
    if (proc.child.exitCode !== null) continue;
    proc.child.kill('SIGCONT');
    proc.child.kill('SIGKILL');
  }
  await fake.close();
  rmSync(dirname(db), { recursive: true, force: true });
});

const env = (extra: Record<string, string> = {}) => ({ TOLLGATE_UPSTREAM_URL: fake.url, TOLLGATE_UPSTREAM_KEY: 'sk-backlog', TOLLGATE_DB: db, ...extra });

/** The listening socket on `port` as `ss` reports it: connections waiting to be accepted, and the backlog. */
function listenQueue(port: number): { waiting: number; backlog: number } {
  const line = execFileSync('ss', ['-ltnH', `sport = :${port}`], { encoding: 'utf8' }).trim();
  const [, recvQ, sendQ] = line.split(/\s+/);
  if (recvQ === undefined || sendQ === undefined) throw new Error(`ss shows no listener on port ${port}: "${line}"`);
  return { waiting: Number(recvQ), backlog: Number(sendQ) };
}

describe('the listen backlog', () => {
  it('holds a burst of 600 connections for a proxy that cannot accept them yet, and then answers every one', async () => {
    const somaxconn = Number(readFileSync('/proc/sys/net/core/somaxconn', 'utf8'));
    expect(somaxconn, 'net.core.somaxconn caps every backlog; this test needs it above 600').toBeGreaterThan(600);
    const proc = await spawnServe(env());
    running.push(proc);
    const port = Number(new URL(proc.url).port);
    expect(listenQueue(port).backlog).toBe(Math.min(4096, somaxconn));

    proc.child.kill('SIGSTOP');
    const answers: string[] = [];
    for (let i = 0; i < 600; i++) {
      const socket = connect(port, '127.0.0.1');
      sockets.push(socket);
      let text = '';
      socket.setEncoding('latin1');
      socket.on('data', (chunk: string) => (text += chunk));
      socket.on('end', () => answers.push(text.slice(0, 12)));
      socket.on('error', (error) => answers.push(`error ${error.message}`));
      socket.write('GET /healthz HTTP/1.1\r\nhost: tollgate\r\nconnection: close\r\n\r\n');
    }
    // Node's default backlog (511) would leave the last 89 handshakes dropped here.
    await waitFor(() => listenQueue(port).waiting === 600, '600 connections held by the kernel', 20_000);

    proc.child.kill('SIGCONT');
    await waitFor(() => answers.length === 600, 'an answer on every connection', 30_000);
    expect(answers.filter((answer) => answer !== 'HTTP/1.1 200')).toEqual([]);
    expect(listenQueue(port).waiting).toBe(0);
  }, 120_000);

  it('takes its size from TOLLGATE_LISTEN_BACKLOG', async () => {
    const proc = await spawnServe(env({ TOLLGATE_LISTEN_BACKLOG: '1000' }));
    running.push(proc);
    expect(listenQueue(Number(new URL(proc.url).port)).backlog).toBe(1000);
  }, 90_000);
});
