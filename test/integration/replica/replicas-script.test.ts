/**
 * `npm run replicas` (scripts/replicas.ts) refuses in one readable line, exit code 1 and no
 * stack trace, when what it needs is missing: PostgreSQL, Redis, or a free port for a node.
 */
import { describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { freePortsBelowEphemeral, REFUSED_PORT } from '../../support/refused.js';

const REPO_ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const SCRIPT = fileURLToPath(new URL('../../../scripts/replicas.ts', import.meta.url));

/** Runs the script to its end; its output and exit code. */
function runReplicas(env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', SCRIPT], {
      cwd: REPO_ROOT,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 45_000);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

describe('npm run replicas', () => {
  it('says PostgreSQL is not reachable, with the password hidden, and exits 1', async () => {
    const closed = REFUSED_PORT;
    const { code, stdout, stderr } = await runReplicas({
      TOLLGATE_DATABASE_URL: `postgres://postgres:hunter2@127.0.0.1:${closed}/tollgate_replicas`,
      // The script checks its three nodes' ports before PostgreSQL: ports no test beside it can take.
      REPLICAS_PORT: String(await freePortsBelowEphemeral(3)),
    });
    expect(code).toBe(1);
    expect(stderr.trim()).toBe(
      `replicas: PostgreSQL is not reachable at postgres://***@127.0.0.1:${closed}/tollgate_replicas (connect ECONNREFUSED 127.0.0.1:${closed}) — start it or set TOLLGATE_DATABASE_URL`,
    );
    expect(stdout).not.toContain('nodes:');
  });

  it('says a node’s port is in use before starting anything, and exits 1', async () => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const port = (taken.address() as { port: number }).port;
    try {
      const { code, stderr } = await runReplicas({
        REPLICAS_PORT: String(port),
        TOLLGATE_DATABASE_URL: `postgres://postgres@127.0.0.1:${REFUSED_PORT}/x`,
      });
      expect(code).toBe(1);
      expect(stderr).toContain(`replicas: port ${port} (node 1) is in use (another Tollgate?) — stop it or set REPLICAS_PORT`);
      expect(stderr).not.toContain('    at ');
    } finally {
      await new Promise<void>((resolve) => taken.close(() => resolve()));
    }
  });
});
