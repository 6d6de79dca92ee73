/** Runs the CLI in-process (the same code as the binary) and captures what it prints. */
import { runCli } from '../../src/cli/program.js';

export interface CliResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
  /** stdout parsed as JSON (for --json runs). */
  json<T = unknown>(): T;
}

export async function cli(...argv: string[]): Promise<CliResult> {
  let stdout = '';
  let stderr = '';
  const code = await runCli(argv, { stdout: (text) => (stdout += text), stderr: (text) => (stderr += text) });
  return {
    code,
    stdout,
    stderr,
    json<T>() {
      return JSON.parse(stdout) as T;
    },
  };
}

/** The CLI in-process with a replica's environment: TOLLGATE_DATABASE_URL and no --db (the file TOLLGATE_DB names is never opened). */
export async function cliOnPostgres(databaseUrl: string, ...argv: string[]): Promise<CliResult> {
  const saved = { ...process.env };
  Object.assign(process.env, { TOLLGATE_DATABASE_URL: databaseUrl, TOLLGATE_DB: '/nonexistent/never-opened.db', TOLLGATE_CONFIG: '' });
  try {
    return await cli(...argv);
  } finally {
    for (const name of Object.keys(process.env)) if (!(name in saved)) delete process.env[name];
    Object.assign(process.env, saved);
  }
}
