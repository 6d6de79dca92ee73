#!/usr/bin/env node
/**
 * The `tollgate` command line. Each subcommand lives in its own module; this
 * file only wires them to commander and maps failures to exit codes.
 */
import { Command, CommanderError } from 'commander';
import { registerServeCommands } from './serve.js';

/** Exit codes: 1 = runtime failure, 2 = bad usage or invalid input. */
export const EXIT_FAILURE = 1;
export const EXIT_USAGE = 2;

export function buildProgram(): Command {
  const program = new Command('tollgate')
    .description('OpenAI-compatible proxy with per-key cost-aware rate limits, budgets and a spend ledger')
    .showHelpAfterError()
    .exitOverride();
  registerServeCommands(program);
  return program;
}

async function main(argv: string[]): Promise<void> {
  try {
    await buildProgram().parseAsync(argv);
  } catch (error) {
    if (error instanceof CommanderError) {
      process.exitCode = error.exitCode === 0 ? 0 : EXIT_USAGE;
      return;
    }
    process.stderr.write(`tollgate: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = (error as { exitCode?: number }).exitCode ?? EXIT_FAILURE;
  }
}

await main(process.argv);
