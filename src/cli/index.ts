#!/usr/bin/env node
/** Entry point of the `tollgate` binary. */
import { runCli } from './program.js';

const code = await runCli(process.argv.slice(2), {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
});
// Long-running commands (serve, demo) keep the process alive on their own.
if (code !== 0) process.exitCode = code;
