/**
 * The limiter contract every store passes (test/support/limiter-contract.ts),
 * over the worker's IPC store: the limiter runs here, its primary in another
 * process, across a real IPC channel.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll } from 'vitest';
import { IpcClient } from '../../../src/coordination/ipc-client.js';
import { createIpcLimiter } from '../../../src/coordination/ipc-store.js';
import { describeLimiterContract } from '../../support/limiter-contract.js';

let primary: ChildProcess;
let client: IpcClient;

beforeAll(async () => {
  primary = fork(fileURLToPath(new URL('./fixtures/primary.ts', import.meta.url)), { execArgv: ['--import', 'tsx'], stdio: 'inherit' });
  client = new IpcClient(primary);
  await new Promise<void>((resolve, reject) => {
    primary.on('message', (message) => {
      if ((message as { ready?: boolean }).ready === true) resolve();
    });
    primary.once('exit', (code) => reject(new Error(`the primary exited (${String(code)}) before it was ready`)));
  });
}, 60_000);

afterAll(async () => {
  const exited = new Promise((resolve) => primary.once('exit', resolve));
  primary.disconnect();
  await exited;
});

describeLimiterContract('ipc', { create: async () => createIpcLimiter(client, { failMode: 'closed', maxWaitMs: 2000, callTimeoutMs: 2000 }) });
