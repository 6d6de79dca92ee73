/** `tollgate migrate` and `tollgate estimate`. */
import type { Command } from 'commander';
import { readFileSync } from 'node:fs';
import { loadConfig } from '../config/index.js';
import { ENDPOINTS, type Endpoint } from '../endpoints.js';
import { applyMigrations, openDatabase } from '../storage/sqlite/open.js';
import { CliError, EXIT_USAGE, print, printJson, type GlobalOptions } from './context.js';
import { count, usd } from './format.js';

export function registerMiscCommands(program: Command): void {
  program
    .command('migrate')
    .description('create or upgrade the SQLite database, and PostgreSQL when TOLLGATE_DATABASE_URL is set (serve does this on start too)')
    .option('--json', 'print JSON')
    .action(async (options: { json?: boolean }, command: Command) => {
      const config = loadConfig();
      const path = command.optsWithGlobals<GlobalOptions>().db ?? config.dbPath;
      const database = openDatabase(path, { migrate: false });
      let applied: number;
      try {
        applied = applyMigrations(database.sqlite);
      } finally {
        database.close();
      }
      let pgApplied: number | undefined;
      if (config.databaseUrl !== undefined) {
        // Under an advisory lock: nodes migrating together apply each migration once (src/storage/postgres/open.ts).
        const { migratePg, openPg } = await import('../storage/postgres/open.js');
        const pool = openPg(config.databaseUrl);
        try {
          pgApplied = await migratePg(pool);
        } finally {
          await pool.end();
        }
      }
      if (options.json) printJson({ db: path, applied, ...(pgApplied === undefined ? {} : { postgres: { applied: pgApplied } }) });
      else {
        print(applied === 0 ? `${path} is up to date` : `${path}: applied ${applied} migration(s)`);
        if (pgApplied !== undefined) print(pgApplied === 0 ? 'PostgreSQL is up to date' : `PostgreSQL: applied ${pgApplied} migration(s)`);
      }
    });

  program
    .command('estimate')
    .description('what a request body would reserve, in tokens and USD (reads JSON from stdin or --file)')
    .option('--endpoint <endpoint>', `one of ${ENDPOINTS.join(', ')} (default: guessed from the body)`)
    .option('--file <path>', 'read the body from a file instead of stdin')
    .option('--json', 'print JSON')
    .action(async (options: { endpoint?: string; file?: string; json?: boolean }) => {
      const { estimateRequestSync, EstimateInputError } = await import('../estimate/index.js');
      const text = readFileSync(options.file ?? 0, 'utf8');
      let body: unknown;
      try {
        body = JSON.parse(text);
      } catch {
        throw new CliError('the request body is not valid JSON', EXIT_USAGE);
      }
      const endpoint = (options.endpoint ?? guessEndpoint(body)) as Endpoint;
      if (!ENDPOINTS.includes(endpoint)) throw new CliError(`--endpoint must be one of ${ENDPOINTS.join(', ')}`, EXIT_USAGE);
      const config = loadConfig();
      let estimate;
      try {
        estimate = estimateRequestSync(endpoint, body, {
          prices: config.prices,
          defaultMaxCompletionTokens: config.defaultMaxCompletionTokens,
          ...(config.unseenInputTokens === undefined ? {} : { unseenInputTokens: config.unseenInputTokens }),
        });
      } catch (error) {
        if (error instanceof EstimateInputError) throw new CliError(`${error.param ? `${error.param}: ` : ''}${error.message}`, EXIT_USAGE);
        throw error;
      }
      if (options.json) {
        printJson({ endpoint, ...estimate });
        return;
      }
      print(
        [
          `endpoint             ${endpoint}`,
          `model                ${estimate.model}${estimate.price.known ? '' : ' (not in the price table: fallback price)'}`,
          `encoding             ${estimate.encoding}`,
          `prompt tokens        ${count(estimate.promptTokens)}${estimate.imageTokens > 0 ? ` (${count(estimate.imageTokens)} for images)` : ''}`,
          ...(estimate.unseen.reservedTokens > 0
            ? [
                `not countable        ${count(estimate.unseen.reservedTokens)} of the prompt tokens, reserved for ${Object.entries(estimate.unseen.kinds)
                  .map(([kind, times]) => `${kind.replace('_', ' ')} ×${times}`)
                  .join(', ')}`,
              ]
            : []),
          `completion reserved  ${count(estimate.completionTokensReserved)}${estimate.n > 1 ? ` (${estimate.n} choices)` : ''}`,
          `reserved tokens      ${count(estimate.reservedTokens)}${estimate.unseen.boundTokens > 0 ? ` (rate limits; budgets hold ${count(estimate.reservedTokens + estimate.unseen.boundTokens)})` : ''}`,
          `reserved cost        ${usd(estimate.reservedMicroUsd)} (${estimate.reservedMicroUsd} micro-USD)${estimate.unseen.boundTokens > 0 ? ' (rate limits)' : ''}`,
        ].join('\n'),
      );
    });
}

function guessEndpoint(body: unknown): Endpoint {
  const fields = body !== null && typeof body === 'object' ? (body as Record<string, unknown>) : {};
  // A Claude model's messages are Anthropic's Messages API (chat bodies for Claude: --endpoint chat).
  if ('messages' in fields) return typeof fields.model === 'string' && fields.model.toLowerCase().startsWith('claude') ? 'messages' : 'chat';
  if ('prompt' in fields) return 'completions';
  if ('input' in fields && typeof fields.model === 'string' && fields.model.includes('embedding')) return 'embeddings';
  return 'responses';
}
