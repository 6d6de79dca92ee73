/**
 * `tollgate alerts test|list`, and the budget forecasts `tollgate spend`
 * prints for one key or tenant. Alerts are configured in the config file
 * (README "Alerts"); these read the same configuration and database file.
 */
import type { Command } from 'commander';
import { forecastBudgets, type BudgetForecast } from '../alerts/budget-forecast.js';
import { sendToWebhook } from '../alerts/deliver.js';
import { sampleEvent } from '../alerts/events.js';
import { forecastRunOut } from '../alerts/forecast.js';
import { AlertOutbox } from '../alerts/outbox.js';
import { loadConfig } from '../config.js';
import { openDatabase } from '../storage/sqlite/open.js';
import { KeyStore } from '../keys/store.js';
import { formatMicrosExact } from '../domain/money.js';
import { parseSince } from '../reports/spend.js';
import { dayStartMs } from '../domain/calendar.js';
import { CliError, EXIT_USAGE, print, printJson, type GlobalOptions } from './context.js';
import { printable, table } from './format.js';

const EXIT_FAILURE = 1;

export function registerAlertCommands(program: Command): void {
  const alerts = program.command('alerts').description('budget and spend-velocity alerts (configured in the config file, see README "Alerts")');

  alerts
    .command('test')
    .description('send a signed sample alert to every webhook (or one) and report what each answered')
    .option('--webhook <name>', 'only this webhook')
    .option('--json', 'print JSON')
    .action(async (options: { webhook?: string; json?: boolean }) => {
      const settings = loadConfig().alerts;
      if (settings === undefined) throw new CliError('no alerts are configured: the config file (TOLLGATE_CONFIG) has no "alerts" section', EXIT_USAGE);
      const hooks = settings.webhooks.filter((hook) => options.webhook === undefined || hook.name === options.webhook);
      if (hooks.length === 0)
        throw new CliError(`no webhook named "${options.webhook}" (configured: ${settings.webhooks.map((h) => h.name).join(', ')})`, EXIT_USAGE);
      const now = Date.now();
      const event = sampleEvent(
        now,
        forecastRunOut({ spentMicros: 40_000_000, limitMicros: 50_000_000, windowSpendMicros: 5_000_000, windowMs: 86_400_000, now, periodEndsAt: undefined }),
      );
      const body = JSON.stringify(event);
      const results = [];
      for (const hook of hooks) {
        const result = await sendToWebhook(hook, body, { eventId: event.id, eventType: event.type, now: Date.now(), timeoutMs: settings.timeoutMs });
        results.push({ webhook: hook.name, delivered: result.ok, status: result.status, error: result.error });
      }
      if (options.json) printJson({ eventId: event.id, results });
      else for (const r of results) print(`${r.webhook}: ${r.delivered ? `delivered (HTTP ${r.status})` : `not delivered (${r.error})`}`);
      if (results.some((r) => !r.delivered)) throw new CliError('a webhook did not take the sample alert', EXIT_FAILURE);
    });

  alerts
    .command('list')
    .description("alerts this database file's proxies sent (or are still trying to send), newest first")
    .option('--since <when>', 'first day: 7d, today, month or YYYY-MM-DD', '7d')
    .option('--limit <n>', 'at most this many', '100')
    .option('--json', 'print JSON')
    .action((options: { since: string; limit: string; json?: boolean }, command: Command) => {
      const limit = Number(options.limit);
      if (!Number.isInteger(limit) || limit < 1) throw new CliError('--limit must be a whole number ≥ 1', EXIT_USAGE);
      const sinceMs = dayStartMs(parseSince(options.since));
      const global = command.optsWithGlobals<GlobalOptions>();
      if (global.url !== undefined) throw new CliError('alerts list reads the local database file; run it on the proxy host', EXIT_USAGE);
      const database = openDatabase(global.db ?? loadConfig().dbPath);
      try {
        const rows = new AlertOutbox(database.sqlite, Number.MAX_SAFE_INTEGER).list(sinceMs, limit).map((row) => {
          const body = JSON.parse(row.body) as { summary?: string; owner?: unknown };
          return {
            createdAt: new Date(row.createdAt).toISOString(),
            eventId: row.eventId,
            event: row.eventType,
            webhook: row.webhook,
            status: row.status,
            attempts: row.attempts,
            lastStatus: row.lastStatus,
            lastError: row.lastError,
            owner: body.owner,
            summary: body.summary ?? '',
          };
        });
        if (options.json) {
          printJson(rows);
          return;
        }
        if (rows.length === 0) {
          print('No alerts in this period.');
          return;
        }
        print(
          table(
            ['time (UTC)', 'event', 'webhook', 'status', 'tries', 'summary'],
            rows.map((r) => [r.createdAt.slice(0, 16).replace('T', ' '), r.event, r.webhook, r.status, String(r.attempts), printable(r.summary)]),
            ['left', 'left', 'left', 'left', 'right', 'left'],
          ),
        );
      } finally {
        database.close();
      }
    });
}

/**
 * The budgets of `--key` or `--tenant` with their burn-rate forecasts, from the local database
 * file; undefined when the spend came from elsewhere (--url, PostgreSQL) or neither was given.
 */
export function localBudgetForecasts(
  command: Command,
  ref: { key?: string | undefined; tenant?: string | undefined },
  now = Date.now(),
): BudgetForecast[] | undefined {
  const global = command.optsWithGlobals<GlobalOptions>();
  if (global.url !== undefined || (ref.key === undefined && ref.tenant === undefined)) return undefined;
  const config = loadConfig();
  if (global.db === undefined && config.databaseUrl !== undefined) return undefined;
  const database = openDatabase(global.db ?? config.dbPath);
  try {
    const store = new KeyStore(database);
    if (ref.key !== undefined) {
      const key = store.getKey(ref.key);
      const forecasts = forecastBudgets(database, { level: 'key', id: key.id, name: key.name, policy: key.policy }, now);
      if (ref.tenant !== undefined || key.tenantId === null) return forecasts;
      const tenant = store.getTenant(key.tenantId);
      return [...forecasts, ...forecastBudgets(database, { level: 'tenant', id: tenant.id, name: tenant.name, policy: tenant.policy }, now)];
    }
    const tenant = store.getTenant(ref.tenant!);
    return forecastBudgets(database, { level: 'tenant', id: tenant.id, name: tenant.name, policy: tenant.policy }, now);
  } finally {
    database.close();
  }
}

/** Lines for the spend report: "key alpha: $3.20 of $10.00 per month (32%); at the last 24 h's rate …". */
export function forecastLines(forecasts: readonly BudgetForecast[]): string {
  const per = { day: 'per day', week: 'per week', month: 'per month', total: 'in total' } as const;
  return forecasts
    .map((f) => {
      const percent = Math.floor((f.spentMicros * 1000) / f.budget.microUsd) / 10;
      return `${f.level} ${f.name}: ${formatMicrosExact(f.spentMicros)} of ${formatMicrosExact(f.budget.microUsd)} ${per[f.budget.period]} (${percent}%); ${f.text}`;
    })
    .join('\n');
}
