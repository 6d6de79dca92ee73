#!/usr/bin/env node
/** Entry point of the `tollgate` binary. */
import { processOutput } from './context.js';
import { runCli } from './program.js';

const code = await runCli(process.argv.slice(2), processOutput);
// Long-running commands (serve, demo) keep the process alive on their own.
if (code !== 0) process.exitCode = code;
