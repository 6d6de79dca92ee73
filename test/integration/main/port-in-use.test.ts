/**
 * `tollgate serve` on a port that is taken: it exits non-zero with one line naming the port and
 * the setting to change, rather than logging EADDRINUSE and running on with nothing to serve.
 * The same for the metrics port and for `serve --workers N`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer, type Server } from 'node:net';
import { rmSync } from 'node:fs';
import { dirname } from 'node:path';
import { tempDatabasePath } from '../../support/db.js';
import { spawnTollgate } from '../../support/process.js';

const { path: db } = tempDatabasePath();
let taken: Server;
let takenPort: number;

beforeAll(async () => {
  taken = createServer();
  await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
  takenPort = (taken.address() as { port: number }).port;
});

afterAll(async () => {
  await new Promise<void>((resolve) => taken.close(() => resolve()));
  rmSync(dirname(db), { recursive: true, force: true });
});

/** Runs `tollgate <args>`; fails the test if it has not exited within the time a start takes. */
async function runToExit(args: string[], env: Record<string, string>) {
  const proc = spawnTollgate(args, { TOLLGATE_DB: db, TOLLGATE_UPSTREAM_URL: 'http://127.0.0.1:9/v1', ...env });
  const timer = setTimeout(() => proc.child.kill('SIGKILL'), 45_000);
  const code = await proc.exited;
  clearTimeout(timer);
  return { code, stderr: proc.stderr.join('\n') };
}

describe('tollgate serve on a port in use', () => {
  it('exits 1 and says which port, and which setting to change', async () => {
    const { code, stderr } = await runToExit(['serve'], { TOLLGATE_PORT: String(takenPort) });
    expect(code).toBe(1);
    expect(stderr).toContain(`port ${takenPort} is in use (another Tollgate?) — set TOLLGATE_PORT`);
    expect(stderr).not.toContain('    at ');
  });

  it('names TOLLGATE_METRICS_PORT when the metrics port is the one taken', async () => {
    const { code, stderr } = await runToExit(['serve'], { TOLLGATE_PORT: '0', TOLLGATE_METRICS_PORT: String(takenPort) });
    expect(code).toBe(1);
    expect(stderr).toContain(`port ${takenPort} is in use (another Tollgate?) — set TOLLGATE_METRICS_PORT`);
  });

  it('exits 1 with the same line under --workers, before forking any worker', async () => {
    const { code, stderr } = await runToExit(['serve', '--workers', '2'], { TOLLGATE_PORT: String(takenPort) });
    expect(code).toBe(1);
    expect(stderr).toContain(`port ${takenPort} is in use (another Tollgate?) — set TOLLGATE_PORT`);
    expect(stderr).not.toContain('worker');
  });
});
