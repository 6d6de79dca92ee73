/**
 * Runs the real `tollgate` CLI as a child process (through tsx, as
 * `npm start` does) and reads its JSON log lines.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { createInterface } from 'node:readline';

const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url));
const CLI = fileURLToPath(new URL('../../src/cli/index.ts', import.meta.url));

export interface TollgateProcess {
  readonly child: ChildProcess;
  /** Parsed JSON log lines from stdout so far (non-JSON lines as `{ text }`). */
  readonly logs: Array<Record<string, unknown>>;
  /** stdout as written, line by line. */
  readonly stdout: string[];
  readonly stderr: string[];
  /** Resolves with the exit code (or the signal name). */
  readonly exited: Promise<number | string>;
}

/** Starts `tollgate <args>` with a clean environment plus `env` (and `nodeArgs` before the CLI's, e.g. V8 flags). */
export function spawnTollgate(args: string[], env: Record<string, string>, nodeArgs: readonly string[] = []): TollgateProcess {
  const child = spawn(process.execPath, [...nodeArgs, '--import', 'tsx', CLI, ...args], {
    cwd: REPO_ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const logs: Array<Record<string, unknown>> = [];
  const stdout: string[] = [];
  const stderr: string[] = [];
  createInterface({ input: child.stdout! }).on('line', (line) => {
    stdout.push(line);
    try {
      logs.push(JSON.parse(line) as Record<string, unknown>);
    } catch {
      logs.push({ text: line });
    }
  });
  createInterface({ input: child.stderr! }).on('line', (line) => stderr.push(line));
  const exited = new Promise<number | string>((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal ?? -1)));
  return { child, logs, stdout, stderr, exited };
}

/** Starts `tollgate serve` on a free port and resolves once it listens. */
export async function spawnServe(env: Record<string, string>, nodeArgs: readonly string[] = []): Promise<TollgateProcess & { url: string }> {
  const proc = spawnTollgate(['serve'], { TOLLGATE_PORT: '0', TOLLGATE_LOG_LEVEL: 'info', ...env }, nodeArgs);
  // Generous: on a loaded 2-core machine a tsx start alone has taken 5 s; a failure here is not the test's subject.
  const deadline = Date.now() + 60_000;
  for (;;) {
    const line = proc.logs.find((l) => l.msg === 'tollgate listening');
    if (line) return { ...proc, url: String(line.url) };
    const early = await Promise.race([proc.exited, new Promise((resolve) => setTimeout(() => resolve(undefined), 20))]);
    if (early !== undefined) throw new Error(`tollgate serve exited (${String(early)}) before listening:\n${proc.stderr.join('\n')}`);
    if (Date.now() > deadline) {
      // A process that never listened would load the machine for every later test.
      proc.child.kill('SIGKILL');
      throw new Error(`tollgate serve did not start:\n${proc.stderr.join('\n')}`);
    }
  }
}
