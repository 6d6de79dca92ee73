/**
 * The coding agents themselves, as real processes: Claude Code (`claude -p`) and Codex
 * (`codex exec`), from their npm packages (devDependencies), each pointed at a Tollgate the way
 * docs/agents.md tells a user to, with a throwaway home so nothing of this machine's own setup
 * is read or written. Each says why it cannot run here instead of failing a test.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

const require = createRequire(import.meta.url);

export interface AgentRun {
  readonly code: number | string;
  readonly stdout: string;
  readonly stderr: string;
}

/** A CLI found on this machine, or why it was not. */
export type AgentCli =
  { readonly ok: true; readonly command: string; readonly prefix: readonly string[]; readonly version: string } | { readonly ok: false; readonly why: string };

/** Generous: a cold start of either native binary on a loaded 2-core machine; a hang is killed, never waited out. */
const RUN_TIMEOUT_MS = 120_000;

/** Runs one CLI process to its end with exactly `env` (nothing inherited but PATH), stdin closed. */
export function runAgent(cli: AgentCli, args: readonly string[], env: Record<string, string>, cwd: string): Promise<AgentRun> {
  if (!cli.ok) throw new Error(cli.why);
  return new Promise((resolve, reject) => {
    const child = spawn(cli.command, [...cli.prefix, ...args], {
      cwd,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (text: string) => (stdout += text));
    child.stderr.setEncoding('utf8').on('data', (text: string) => (stderr += text));
    const timer = setTimeout(() => child.kill('SIGKILL'), RUN_TIMEOUT_MS);
    child.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code: code ?? signal ?? -1, stdout, stderr });
    });
  });
}

/** `--version` answers: the binary runs on this machine (libc, CPU, Node version). */
function probe(command: string, prefix: readonly string[], name: string): AgentCli {
  const result = spawnSync(command, [...prefix, '--version'], {
    encoding: 'utf8',
    timeout: 60_000,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: tmpdir() },
  });
  if (result.error !== undefined) return { ok: false, why: `${name} does not start here: ${result.error.message}` };
  if (result.status !== 0)
    return { ok: false, why: `${name} --version exited ${String(result.status ?? result.signal)}: ${result.stderr.trim().slice(0, 300)}` };
  return { ok: true, command, prefix, version: result.stdout.trim() };
}

function platformKey(): string {
  return `${process.platform}-${process.arch}`;
}

/**
 * Claude Code's native binary, from its per-platform package. Not the wrapper's `bin`: that is
 * a placeholder until the wrapper's postinstall has copied the binary over it, and an install
 * that runs no scripts leaves it a placeholder.
 */
export function findClaudeCode(): AgentCli {
  let wrapper: string;
  try {
    wrapper = require.resolve('@anthropic-ai/claude-code/package.json');
  } catch {
    return { ok: false, why: '@anthropic-ai/claude-code is not installed' };
  }
  // The platform package is the wrapper's optional dependency: resolved from the wrapper, wherever npm put it.
  const name = `@anthropic-ai/claude-code-${platformKey()}`;
  let dir: string;
  try {
    dir = dirname(createRequire(wrapper).resolve(`${name}/package.json`));
  } catch {
    return {
      ok: false,
      why: `Claude Code has no binary for ${platformKey()} installed (${name}, an optional dependency of @anthropic-ai/claude-code, is missing)`,
    };
  }
  const binary = join(dir, process.platform === 'win32' ? 'claude.exe' : 'claude');
  if (!existsSync(binary)) return { ok: false, why: `${binary} is missing` };
  return probe(binary, [], 'Claude Code');
}

/** Codex through its package's launcher, which picks the platform's native binary. */
export function findCodex(): AgentCli {
  let launcher: string;
  try {
    launcher = join(dirname(require.resolve('@openai/codex/package.json')), 'bin', 'codex.js');
  } catch {
    return { ok: false, why: '@openai/codex is not installed' };
  }
  return probe(process.execPath, [launcher], 'Codex');
}

/** A throwaway home for one test file: config, sessions and logs of the agents go here. */
export interface AgentHome {
  readonly dir: string;
  /** An empty working directory (no git repository, nothing an agent could read). */
  readonly work: string;
  remove(): void;
}

export function agentHome(): AgentHome {
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-agents-'));
  const work = join(dir, 'work');
  mkdirSync(work);
  return { dir, work, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** Claude Code's environment against Tollgate: docs/agents.md. */
export function claudeEnv(home: AgentHome, baseURL: string, key: string): Record<string, string> {
  return {
    HOME: home.dir,
    CLAUDE_CONFIG_DIR: join(home.dir, '.claude'),
    ANTHROPIC_BASE_URL: baseURL,
    ANTHROPIC_API_KEY: key,
    // Offline: no update checks, telemetry or error reports to anyone but Tollgate.
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    DISABLE_TELEMETRY: '1',
    DISABLE_AUTOUPDATER: '1',
    DISABLE_ERROR_REPORTING: '1',
  };
}

/**
 * Codex's environment against Tollgate: a custom provider in `$CODEX_HOME/config.toml`
 * (docs/agents.md), the key in the variable its `env_key` names. No retries: a refusal is shown
 * at once rather than after Codex's own backoff.
 */
export function codexEnv(home: AgentHome, baseURL: string, key: string, model: string): Record<string, string> {
  const codexHome = join(home.dir, '.codex');
  mkdirSync(codexHome, { recursive: true });
  writeFileSync(
    join(codexHome, 'config.toml'),
    [
      `model = "${model}"`,
      'model_provider = "tollgate"',
      '',
      '[model_providers.tollgate]',
      'name = "Tollgate"',
      `base_url = "${baseURL}"`,
      'env_key = "TOLLGATE_API_KEY"',
      'wire_api = "responses"',
      'request_max_retries = 0',
      'stream_max_retries = 0',
      '',
    ].join('\n'),
  );
  return { HOME: home.dir, CODEX_HOME: codexHome, TOLLGATE_API_KEY: key };
}

/** The session id Codex prints in its header on stderr (`session id: …`). */
export function codexSessionOf(run: AgentRun): string | undefined {
  return /^session id: (\S+)$/m.exec(run.stderr)?.[1];
}
