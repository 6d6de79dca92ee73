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
