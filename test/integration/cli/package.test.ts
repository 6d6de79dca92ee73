/**
 * The package as a user gets it: `npm pack` (which builds dist/ on its own),
 * `npm install -g` of the tarball into a temporary prefix, then the installed
 * `tollgate` bin runs --version, --help, serve and demo from outside the
 * checkout. The install runs no install scripts: compiling better-sqlite3
 * again takes two to six minutes of a core on our 2-core machines, enough to
 * push the suite's timing-sensitive tests over their limits. The installed
 * package is given the module this checkout's `npm ci` compiled from source
 * (the same version of the same source, for the same Node), and the test
 * checks that it was compiled here, not downloaded, and that the package
 * carries the setting that makes a user's install compile it too.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFile, spawn } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createInterface } from 'node:readline';
import { promisify } from 'node:util';
import { freePortsBelowEphemeral } from '../../support/refused.js';
import { waitFor } from '../../support/wait.js';

const run = promisify(execFile);
const REPO_ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'tollgate-package-'));
const prefix = join(dir, 'prefix');
const bin = join(prefix, 'bin', 'tollgate');
const installed = join(prefix, 'lib', 'node_modules', 'tollgate');
let tarballFiles: string[] = [];
let installLog = '';

/**
 * The user's environment without what an `npm test` that started us added
 * (npm_* variables) and without the shell's TOLLGATE_* settings. The rest
 * stays: npm needs the machine's proxy and CA settings (NODE_EXTRA_CA_CERTS,
 * HTTPS_PROXY, …) to reach the registry; without them an install with a
 * cold cache retried its TLS failures for minutes. Vitest's own variables
 * (VITEST_ADDED, VITEST_*) go too.
 */
const VITEST_ADDED = new Set(['TEST', 'NODE_ENV', 'PROD', 'DEV', 'BASE_URL', 'MODE', 'SSR', 'FORCE_TTY']);

function userEnv(extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (value === undefined || /^npm_/i.test(name) || name.startsWith('TOLLGATE_') || VITEST_ADDED.has(name) || name.startsWith('VITEST')) continue;
    env[name] = value;
  }
  return { ...env, HOME: process.env.HOME ?? tmpdir(), ...extra };
}

beforeAll(async () => {
  // Pack a copy, so the prepack build writes its dist/ there and not into the working tree.
  const project = join(dir, 'project');
  mkdirSync(project);
  for (const entry of ['package.json', 'tsconfig.json', 'README.md', 'LICENSE', '.prebuild-installrc', 'src', 'lua', 'drizzle']) {
    cpSync(join(REPO_ROOT, entry), join(project, entry), { recursive: true });
  }
  symlinkSync(join(REPO_ROOT, 'node_modules'), join(project, 'node_modules'));
  await run('npm', ['pack', '--pack-destination', dir], { cwd: project, env: userEnv() });
  const tarball = join(
    dir,
    readdirSync(dir).find((name) => name.endsWith('.tgz'))!,
  );
  tarballFiles = (await run('tar', ['tzf', tarball])).stdout.split('\n').filter(Boolean);
  // --prefer-offline: dependencies come from npm's cache when it has them (`npm ci` filled it).
  const install = await run('npm', ['install', '-g', '--prefix', prefix, '--prefer-offline', '--ignore-scripts', '--no-audit', '--no-fund', tarball], {
    cwd: dir,
    env: userEnv(),
    maxBuffer: 64 * 1024 * 1024,
    // A registry that does not answer fails here, with npm's output, not as a hook timeout.
    timeout: 240_000,
  });
  installLog = install.stdout + install.stderr;
  cpSync(join(REPO_ROOT, 'node_modules', 'better-sqlite3', 'build'), join(installed, 'node_modules', 'better-sqlite3', 'build'), { recursive: true });
}, 300_000);

afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Runs the installed bin from a folder outside the checkout; its stdout lines as they come. */
function start(args: string[], env: Record<string, string>) {
  const child = spawn(bin, args, { cwd: dir, env: userEnv(env), stdio: ['ignore', 'pipe', 'pipe'] });
  const stdout: string[] = [];
  const stderr: string[] = [];
  createInterface({ input: child.stdout }).on('line', (line) => stdout.push(line));
  createInterface({ input: child.stderr }).on('line', (line) => stderr.push(line));
  const exited = new Promise<number | string>((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal ?? -1)));
  return { child, stdout, stderr, exited };
}

describe('the npm package', () => {
  it('ships the build, the Lua scripts, the migrations and the license, without source, tests or source maps', () => {
    expect(tarballFiles).toContain('package/dist/cli/index.js');
    expect(tarballFiles).toContain('package/lua/lease.lua');
    expect(tarballFiles).toContain('package/drizzle/meta/_journal.json');
    expect(tarballFiles).toContain('package/drizzle/pg/meta/_journal.json');
    expect(tarballFiles).toContain('package/LICENSE');
    expect(tarballFiles).toContain('package/.prebuild-installrc');
    expect(tarballFiles.filter((file) => file.endsWith('.map') || file.endsWith('.ts') || /^package\/(src|test)\//.test(file))).toEqual([]);
  });

  it('runs a better-sqlite3 compiled from source, installs without npm warning about build-from-source, and tells a user’s install to compile', () => {
    // node-gyp leaves its configuration in build/; a downloaded prebuilt binary comes without it.
    expect(existsSync(join(REPO_ROOT, 'node_modules', 'better-sqlite3', 'build', 'config.gypi'))).toBe(true);
    expect(existsSync(join(installed, 'node_modules', 'better-sqlite3', 'build', 'Release', 'better_sqlite3.node'))).toBe(true);
    expect(readFileSync(join(installed, '.prebuild-installrc'), 'utf8')).toMatch(/^buildFromSource=true$/m);
    expect(installLog).not.toMatch(/build-from-source/);
  });

  it('answers --version and --help', async () => {
    const { version } = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string };
    expect((await run(bin, ['--version'], { cwd: dir, env: userEnv() })).stdout.trim()).toBe(version);
    expect((await run(bin, ['--help'], { cwd: dir, env: userEnv() })).stdout).toMatch(/^Usage: tollgate /);
  });

  it('serves: migrates a new database, answers /healthz and stops on SIGTERM', async () => {
    const port = await freePortsBelowEphemeral(1);
    const proc = start(['serve'], { TOLLGATE_PORT: String(port), TOLLGATE_DB: join(dir, 'serve.db'), TOLLGATE_LOG_LEVEL: 'info' });
    try {
      await waitFor(() => proc.stdout.some((line) => line.includes('tollgate listening')), 'the installed proxy to listen', 30_000);
      expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200);
    } finally {
      proc.child.kill('SIGTERM');
    }
    expect(await proc.exited).toBe(0);
  });

  it('runs the demo and names the installed command in its hints', async () => {
    const port = await freePortsBelowEphemeral(1);
    const db = join(dir, 'demo.db');
    const proc = start(['--db', db, 'demo', '--port', String(port)], {});
    try {
      await waitFor(() => proc.stdout.some((line) => line.includes('Press Ctrl-C to stop.')), 'the installed demo to print its instructions', 30_000);
      const printed = proc.stdout.join('\n');
      expect(printed).toContain(`  tollgate --db ${db} spend --by model`);
      expect(printed).not.toContain('npm run');
    } finally {
      proc.child.kill('SIGINT');
    }
    expect(await proc.exited).toBe(0);
  });
});
