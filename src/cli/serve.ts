/** `tollgate serve` and `tollgate demo`. */
import type { Command } from 'commander';
import { loadConfig } from '../config.js';
import { startFakeUpstream } from '../demo/fake-upstream.js';
import { startServer, type RunningServer } from '../main.js';

/** Stops `server` on SIGTERM/SIGINT and exits 0 once it has drained. */
function exitOnSignals(stop: () => Promise<void>): void {
  let stopping = false;
  const onSignal = (signal: NodeJS.Signals): void => {
    if (stopping) {
      process.stderr.write(`tollgate: second ${signal}, exiting now\n`);
      process.exit(1);
    }
    stopping = true;
    stop().then(
      () => process.exit(0),
      (error: unknown) => {
        process.stderr.write(`tollgate: shutdown failed: ${String(error)}\n`);
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
}

export function registerServeCommands(program: Command): void {
  program
    .command('serve')
    .description('run the proxy (configured by TOLLGATE_* environment variables)')
    .action(async () => {
      const server = await startServer(loadConfig());
      exitOnSignals(() => server.close());
    });

  program
    .command('demo')
    .description('run a fake OpenAI upstream and the proxy in front of it, offline, and print how to call it')
    .option('--port <port>', 'port for the proxy', '8787')
    .action(async (options: { port: string }) => {
      const fake = await startFakeUpstream({ apiKey: 'sk-demo-upstream' });
      const config = loadConfig({
        TOLLGATE_PORT: options.port,
        TOLLGATE_UPSTREAM_URL: fake.url,
        TOLLGATE_UPSTREAM_KEY: 'sk-demo-upstream',
        TOLLGATE_LOG_LEVEL: 'warn',
      });
      const server: RunningServer = await startServer(config);
      process.stdout.write(demoInstructions(server.url));
      exitOnSignals(async () => {
        await server.close();
        await fake.close();
      });
    });
}

function demoInstructions(url: string): string {
  return `
Tollgate demo — running offline
  proxy:     ${url}/v1   (in front of a built-in fake OpenAI API)
  key check: off in this build (tenant keys arrive with the keys issue)

Try it with curl:

  curl ${url}/v1/chat/completions \\
    -H 'content-type: application/json' \\
    -d '{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Say hello"}]}'

Or with the OpenAI SDK (Node):

  import OpenAI from 'openai';
  const client = new OpenAI({ baseURL: '${url}/v1', apiKey: 'anything' });
  const stream = await client.chat.completions.create({
    model: 'gpt-4o-mini', stream: true,
    messages: [{ role: 'user', content: 'Say hello' }],
  });
  for await (const chunk of stream) process.stdout.write(chunk.choices[0]?.delta?.content ?? '');

Press Ctrl-C to stop.
`;
}
