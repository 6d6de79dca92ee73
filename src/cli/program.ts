/**
 * The `tollgate` command line: wiring of subcommands to commander and of
 * failures to exit codes (2 for bad usage or input, 1 for everything else).
 * `runCli` is what `index.ts` runs; tests call it in-process.
 */
import { Command, CommanderError } from 'commander';
import { readFileSync } from 'node:fs';
import { EXIT_USAGE, setOutput, toCliError, type Output } from './context.js';
import { registerAdminCommands } from './admins.js';
import { registerAlertCommands } from './alerts.js';
import { registerKeyCommands } from './keys.js';
import { registerTenantCommands } from './tenants.js';
import { registerLedgerCommands } from './ledger-export.js';
import { registerMiscCommands } from './misc.js';
import { registerReconcileCommand } from './reconcile.js';
import { registerDashboardTokenCommands } from './dashboard-token.js';
import { registerServeCommands } from './serve.js';
import { registerSpendCommand } from './spend.js';
import { redactUrlsIn } from '../redact-url.js';

/** The version in package.json, two folders up from both src/cli/ and dist/cli/ (npm ships package.json in every package). */
function packageVersion(): string {
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
  return pkg.version;
}

function buildProgram(output: Output): Command {
  const program = new Command('tollgate')
    .description('OpenAI-compatible proxy with per-key cost-aware rate limits, budgets and a spend ledger')
    .version(packageVersion(), '-V, --version', 'print the version and exit')
    .option('--db <path>', 'SQLite database (default: $TOLLGATE_DB or ./data/tollgate.db)')
    .option('--url <url>', 'manage a running proxy through its admin API instead of the local database')
    .option('--admin-token <token>', 'admin token for --url (default: $TOLLGATE_ADMIN_TOKEN)')
    .showHelpAfterError();
  registerServeCommands(program);
  registerKeyCommands(program);
  registerTenantCommands(program);
  registerSpendCommand(program);
  registerLedgerCommands(program);
  registerMiscCommands(program);
  registerAlertCommands(program);
  registerReconcileCommand(program);
  registerDashboardTokenCommands(program);
  registerAdminCommands(program);
  configureEverywhere(program, output);
  return program;
}

/** Commander's own messages (help, usage errors) go to the same output, and it never calls process.exit. */
function configureEverywhere(command: Command, output: Output): void {
  command.exitOverride();
  command.configureOutput({ writeOut: (text) => output.stdout(text), writeErr: (text) => output.stderr(text) });
  for (const sub of command.commands) configureEverywhere(sub, output);
}

/** Runs the CLI on `argv` (without the node and script entries); resolves with the exit code. */
export async function runCli(argv: readonly string[], output: Output): Promise<number> {
  const restore = setOutput(output);
  try {
    await buildProgram(output).parseAsync([...argv], { from: 'user' });
    return 0;
  } catch (error) {
    if (error instanceof CommanderError) return error.exitCode === 0 ? 0 : EXIT_USAGE;
    const failure = toCliError(error);
    output.stderr(`tollgate: ${redactUrlsIn(failure.message)}\n`);
    return failure.exitCode;
  } finally {
    restore();
  }
}
