/**
 * `npm start` as a process manager runs it: SIGTERM (or SIGINT) to npm stops the proxy, which
 * drains and closes its port, and leaves no process behind. npm runs the script through a shell
 * and signals only that shell, so the script must make the proxy that shell (package.json).
 */
import { afterAll, describe, expect, it } from 'vitest';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { rmSync } from 'node:fs';
import { connect } from 'node:net';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { tempDatabasePath } from '../../support/db.js';
import { freePortsBelowEphemeral } from '../../support/refused.js';
import { waitFor } from '../../support/wait.js';

const REPO_ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const { path: db } = tempDatabasePath();
const leftovers: number[] = [];

afterAll(() => {
  for (const pid of leftovers) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  rmSync(dirname(db), { recursive: true, force: true });
});

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ port, host: '127.0.0.1' });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** Every descendant of `pid` (children, their children, …). */
function descendants(pid: number): number[] {
  const out = execFileSync('ps', ['-e', '-o', 'pid=,ppid='], { encoding: 'utf8' });
  const pairs = out
    .trim()
    .split('\n')
    .map((line) => line.trim().split(/\s+/).map(Number) as [number, number]);
  const found: number[] = [];
  const queue = [pid];
  while (queue.length > 0) {
    const parent = queue.shift()!;
    for (const [child, ppid] of pairs) {
      if (ppid === parent) {
        found.push(child);
        queue.push(child);
      }
    }
  }
  return found;
}

async function startNpm(port: number): Promise<{ npm: ChildProcess; exited: Promise<unknown>; processes: number[] }> {
  const npm = spawn('npm', ['start'], {
    cwd: REPO_ROOT,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '/tmp',
      TOLLGATE_DB: db,
      TOLLGATE_PORT: String(port),
      TOLLGATE_UPSTREAM_URL: 'http://127.0.0.1:9/v1',
      TOLLGATE_LOG_LEVEL: 'warn',
    },
    stdio: 'ignore',
  });
  const exited = new Promise((resolve) => npm.once('exit', resolve));
  leftovers.push(npm.pid!);
  await waitFor(
    async () => {
      try {
        return (await fetch(`http://127.0.0.1:${port}/healthz`)).ok;
      } catch {
        return false;
      }
    },
    'npm start to answer /healthz',
    60_000,
  );
  const processes = descendants(npm.pid!);
  leftovers.push(...processes);
  return { npm, exited, processes };
}

describe('npm start', () => {
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    it(`stops the proxy, closes its port and leaves no process when npm gets ${signal}`, async () => {
      const port = await freePortsBelowEphemeral(1);
      const { npm, exited, processes } = await startNpm(port);
      expect(processes.length).toBeGreaterThan(0);
      npm.kill(signal);
      await exited;
      await waitFor(async () => !(await accepts(port)), `port ${port} to close`, 20_000);
      await waitFor(() => processes.every((pid) => !isAlive(pid)), `processes ${processes.join(', ')} to exit`, 20_000);
    });
  }
});
