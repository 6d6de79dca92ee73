/** `tollgate serve` and `tollgate demo`. */
import cluster from 'node:cluster';
import type { Command } from 'commander';
import { launcherEnvironment, loadConfig, parseWorkers } from '../config/index.js';
import { openDatabase } from '../storage/sqlite/open.js';
import { SqliteKeyStore as KeyStore } from '../storage/sqlite/keys.js';
import { TollgateError } from '../domain/errors.js';
import { print, type GlobalOptions } from './context.js';
import { commandName } from './command-name.js';
import { randomBytes } from 'node:crypto';
import { parseLimit } from '../domain/policy.js';
import type { IpcChannel } from '../coordination/ipc-client.js';
import { applyServingHeapFlags } from '../heap-flags.js';

// The server and the fake upstream load only when a command needs them, so
// the key and spend commands start quickly.
const loadServer = () => import('../main.js');
const loadFakeUpstream = () => import('../demo/fake-upstream/index.js');

/**
 * Exits 0 on SIGTERM/SIGINT once what `stopWith` was given has drained.
 * Installed before the server starts: the "listening" line or the demo's
 * instructions tell a caller it may signal, and a signal that arrived
 * between that line and a later handler would kill the process with no
 * drain. A signal before `stopWith` waits for it.
 */
function exitOnSignals(): { stopWith(stop: () => Promise<void>): void } {
  let stopping = false;
  let setStop: (stop: () => Promise<void>) => void = () => {};
  const stopReady = new Promise<() => Promise<void>>((resolve) => (setStop = resolve));
  const onSignal = (signal: NodeJS.Signals): void => {
    if (stopping) {
      process.stderr.write(`tollgate: second ${signal}, exiting now\n`);
      process.exit(1);
    }
    stopping = true;
    stopReady
      .then((stop) => stop())
      .then(
        () => process.exit(0),
        (error: unknown) => {
          process.stderr.write(`tollgate: shutdown failed: ${String(error)}\n`);
          process.exit(1);
        },
      );
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  return { stopWith: setStop };
}

export function registerServeCommands(program: Command): void {
  program
    .command('serve')
    .description('run the proxy (configured by TOLLGATE_* environment variables)')
    .option('--workers <n>', 'processes serving the port, or auto for one per core (default: TOLLGATE_WORKERS, else 1)')
    .action(async (options: { workers?: string }) => {
      // Before the server's modules load and any collection judges their allocation sites (src/heap-flags.ts).
      applyServingHeapFlags();
      const config = loadConfig();
      const main = await loadServer();
      if (cluster.isWorker) {
        await serveAsWorker(config, main);
        return;
      }
      const signals = exitOnSignals();
      const workers = options.workers === undefined ? config.workers : parseWorkers(options.workers);
      if (workers > 1) {
        const running = await main.startCluster(config, { workers });
        signals.stopWith(() => running.close());
        return;
      }
      const server = await main.startServer(config);
      signals.stopWith(() => server.close());
    });

  program
    .command('demo')
    .description('run a fake OpenAI upstream and the proxy in front of it, offline, and print how to call it')
    .option('--port <port>', 'port for the proxy', '8787')
    .action(async (options: { port: string }, command: Command) => {
      applyServingHeapFlags();
      const dbPath = command.optsWithGlobals<GlobalOptions>().db ?? './data/demo.db';
      const demoKey = issueDemoKey(dbPath);
      // A fresh admin token per run, so the dashboard can be tried too; it exists only in this terminal.
      const adminToken = randomBytes(18).toString('base64url');
      const signals = exitOnSignals();
      const [{ startServer }, { startFakeUpstream }] = await Promise.all([loadServer(), loadFakeUpstream()]);
      // The demo shares the proxy's process: bounded records keep its heap (and collections) from growing with every request.
      const fake = await startFakeUpstream({ apiKey: 'sk-demo-upstream', maxRecords: 1000 });
      const config = loadConfig({
        TOLLGATE_PORT: options.port,
        TOLLGATE_UPSTREAM_URL: fake.url,
        TOLLGATE_UPSTREAM_KEY: 'sk-demo-upstream',
        TOLLGATE_LOG_LEVEL: 'warn',
        TOLLGATE_DB: dbPath,
        TOLLGATE_ADMIN_TOKEN: adminToken,
      });
      const server = await startServer(config);
      signals.stopWith(async () => {
        await server.close();
        await fake.close();
      });
      print(demoInstructions(server.url, demoKey, dbPath, adminToken));
    });
}

/**
 * A worker of `serve --workers N` (forked by main.ts's startCluster with the
 * same command line): leases from the primary over IPC, drains on the
 * primary's word or a signal of its own, and stops when the primary is gone.
 */
async function serveAsWorker(config: ReturnType<typeof loadConfig>, main: Awaited<ReturnType<typeof loadServer>>): Promise<void> {
  const [{ IpcClient }, { createLogger }] = await Promise.all([import('../coordination/ipc-client.js'), import('../logger.js')]);
  const logger = createLogger(config.logLevel).child({ worker: cluster.worker?.id, pid: process.pid });
  const signals = exitOnSignals();
  const server = await main.startServer(config, { logger, ipc: new IpcClient(process as unknown as IpcChannel) });
  const drainAndExit = (): void => {
    server.close().then(
      () => process.exit(0),
      (error: unknown) => {
        process.stderr.write(`tollgate worker: shutdown failed: ${String(error)}\n`);
        process.exit(1);
      },
    );
  };
  process.on('message', (message: unknown) => {
    if (typeof message === 'object' && message !== null && (message as { tollgate?: unknown }).tollgate === main.DRAIN_MESSAGE.tollgate) drainAndExit();
  });
  // An orphan keeps no port and no leases worth holding.
  process.on('disconnect', drainAndExit);
  signals.stopWith(() => server.close());
}

/** A fresh secret for the demo key in the demo database (created on first run, rotated after). */
function issueDemoKey(dbPath: string): string {
  const database = openDatabase(dbPath);
  try {
    const store = new KeyStore(database);
    try {
      return store.rotateKey('demo').key;
    } catch (error) {
      if (!(error instanceof TollgateError) || error.code !== 'not_found') throw error;
      return store.createKey({
        name: 'demo',
        tenant: 'demo',
        policy: { limits: [parseLimit('requests:60/min'), parseLimit('tokens:200000/min')], budget: { microUsd: 1_000_000, period: 'day' } },
      }).key;
    }
  } finally {
    database.close();
  }
}

function demoInstructions(url: string, key: string, dbPath: string, adminToken: string): string {
  return `
Tollgate demo — running offline
  proxy:     ${url}/v1   (in front of a built-in fake OpenAI API)
  demo key:  ${key}
             (60 requests and 200k tokens per minute, $1 per day)
  ledger:    ${dbPath}
  dashboard: ${url}/dashboard   (admin token for this run: ${adminToken})

Try it with curl:

  curl ${url}/v1/chat/completions \\
    -H 'authorization: Bearer ${key}' \\
    -H 'content-type: application/json' \\
    -d '{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Say hello"}]}'

Or with the OpenAI SDK (Node):

  import OpenAI from 'openai';
  const client = new OpenAI({ baseURL: '${url}/v1', apiKey: '${key}' });
  const stream = await client.chat.completions.create({
    model: 'gpt-4o-mini', stream: true,
    messages: [{ role: 'user', content: 'Say hello' }],
  });
  for await (const chunk of stream) process.stdout.write(chunk.choices[0]?.delta?.content ?? '');

Then see what it cost:

  ${commandName(process.argv[1], launcherEnvironment(), process.cwd())} --db ${dbPath} spend --by model

Press Ctrl-C to stop.
`;
}
