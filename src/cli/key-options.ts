/**
 * The options of `tollgate keys` and `tollgate tenants`: declared on their commands
 * ({@link withPolicyOptions}, {@link withEndUserOptions}) and parsed into the parts of a policy,
 * an expiry and metadata. Every bad value is a PolicyError naming its option (exit code 2).
 */
import { Option, type Command } from 'commander';
import { BUDGET_PERIODS, parseUsdToMicros, PolicyError, type Policy } from '../domain/policy.js';

export const collect = (value: string, previous: string[] = []): string[] => [...previous, value];

// The pure parsers of the limit and budget options live in the domain, where the dashboard's form uses them too.
export { budgetFrom, extraBudgetsFrom, limitsFrom, maxInFlightFrom, modelsFrom, type LimitOptions } from '../domain/policy-options.js';

/**
 * `--downgrade gpt-4o=gpt-4o-mini,o3=o4-mini [--downgrade-at 80]`: once a budget of the key (or
 * its tenant) has spent that share, requests for each FROM model go to its TO model.
 */
export function downgradeFrom(text: string | undefined, at: string | undefined, current?: Policy['downgrade']): Policy['downgrade'] | undefined {
  if (text === undefined && at === undefined) return undefined;
  const atPercent = at === undefined ? (current?.atPercent ?? 80) : Number(at.replace(/%$/, ''));
  if (!(atPercent > 0 && atPercent <= 100)) throw new PolicyError('--downgrade-at takes a percentage above 0 and at most 100, e.g. 80');
  if (text === undefined) {
    if (current === undefined) throw new PolicyError('--downgrade-at needs --downgrade FROM=TO (the key has none)');
    return { ...current, atPercent };
  }
  const models: Record<string, string> = {};
  for (const pair of text
    .split(',')
    .map((p) => p.trim())
    .filter((p) => p !== '')) {
    const [from = '', to = '', extra] = pair.split('=').map((part) => part.trim());
    if (from === '' || to === '' || extra !== undefined) throw new PolicyError(`--downgrade takes FROM=TO pairs, e.g. gpt-4o=gpt-4o-mini (got "${pair}")`);
    models[from] = to;
  }
  if (Object.keys(models).length === 0) throw new PolicyError('--downgrade needs at least one FROM=TO pair');
  return { atPercent, models };
}

/** The runaway options a key's create or update takes. */
export interface RunawayOptions {
  runawayFactor?: string;
  runawayUsdPerHour?: string;
  /** `--no-runaway`: never paused. */
  runaway?: boolean;
  /** `--runaway-default` (update): back to the config's rule. */
  runawayDefault?: boolean;
}

/** Keys only: the runaway stop's own rule for the key (docs/alerts.md "Runaway stop"). */
export function withRunawayOptions(command: Command, mode: 'create' | 'update'): Command {
  command
    .option('--runaway-factor <n>', "pause the key when its spend rate runs over N × its usual rate (instead of the config's factor)")
    .option('--runaway-usd-per-hour <dollars>', 'pause the key when its spend rate runs over this many USD per hour')
    .option('--no-runaway', 'never pause this key (the runaway stop leaves it alone)');
  if (mode === 'update') command.option('--runaway-default', "back to the config's runaway rule");
  return command;
}

/**
 * The key's runaway rule from the options: undefined when none is given (no change), null for
 * `--runaway-default`; a factor or ceiling changes only what it names, over the current rule.
 */
export function runawayFrom(options: RunawayOptions, current?: Policy['runaway']): Policy['runaway'] | null | undefined {
  const { runawayFactor, runawayUsdPerHour } = options;
  const off = options.runaway === false;
  if (options.runawayDefault === true) {
    if (off || runawayFactor !== undefined || runawayUsdPerHour !== undefined)
      throw new PolicyError('--runaway-default cannot be combined with other --runaway options');
    return null;
  }
  if (off) {
    if (runawayFactor !== undefined || runawayUsdPerHour !== undefined)
      throw new PolicyError('--no-runaway cannot be combined with --runaway-factor or --runaway-usd-per-hour');
    return { off: true };
  }
  if (runawayFactor === undefined && runawayUsdPerHour === undefined) return undefined;
  const factor = runawayFactor === undefined ? current?.factor : Number(runawayFactor);
  if (factor !== undefined && !(factor >= 1 && factor <= 1000)) throw new PolicyError('--runaway-factor takes a number from 1 to 1000, e.g. 20');
  const microUsdPerHour = runawayUsdPerHour === undefined ? current?.microUsdPerHour : parseUsdToMicros(runawayUsdPerHour);
  return { ...(factor === undefined ? {} : { factor }), ...(microUsdPerHour === undefined ? {} : { microUsdPerHour }) };
}

/** `30d`, `12h`, `90m`, or a date/time (`2026-12-31`, ISO 8601) → epoch ms. */
export function parseExpiry(text: string, now = Date.now()): number {
  const relative = /^(\d+)\s*(m|h|d)$/.exec(text.trim());
  if (relative) {
    const amount = Number(relative[1]);
    if (amount <= 0) throw new PolicyError('--expires must be in the future');
    return now + amount * { m: 60_000, h: 3_600_000, d: 86_400_000 }[relative[2] as 'm' | 'h' | 'd'];
  }
  const at = Date.parse(/^\d{4}-\d{2}-\d{2}$/.test(text.trim()) ? `${text.trim()}T00:00:00Z` : text);
  if (Number.isNaN(at)) throw new PolicyError(`--expires "${text}" is not a duration (30d, 12h, 90m) or a date (2026-12-31)`);
  if (at <= now) throw new PolicyError(`--expires ${text} is in the past`);
  return at;
}

export function metadataFrom(pairs: string[] | undefined): Record<string, string> | undefined {
  if (pairs === undefined) return undefined;
  const out: Record<string, string> = {};
  for (const pair of pairs) {
    const at = pair.indexOf('=');
    if (at <= 0) throw new PolicyError(`--meta "${pair}" is not label=value`);
    out[pair.slice(0, at)] = pair.slice(at + 1);
  }
  return out;
}

/** The limit and budget options keys and tenants share; `update` adds the ones that clear them. */
export function withPolicyOptions(command: Command, mode: 'create' | 'update'): Command {
  command
    .option(
      '--limit <spec>',
      mode === 'create'
        ? 'UNIT:AMOUNT/PERIOD[,burst=B][,name=N][,start=empty]; UNIT requests|tokens|usd, PERIOD s|min|h|day (repeatable)'
        : 'replacement limit (repeatable)',
      collect,
    )
    .option('--rpm <n>', 'shorthand for --limit requests:N/min')
    .option('--tpm <n>', 'shorthand for --limit tokens:N/min');
  command.option('--max-in-flight <n>', 'requests in flight at once (keys default to TOLLGATE_MAX_IN_FLIGHT)');
  if (mode === 'update') command.option('--clear-limits', 'remove all limits');
  command
    .option('--budget-usd <dollars>', mode === 'create' ? 'spend cap in USD' : 'new spend cap in USD')
    .addOption(new Option('--budget-period <period>', 'budget period (in TOLLGATE_TIMEZONE)').choices([...BUDGET_PERIODS]))
    .option(
      '--extra-budget <dollars/period>',
      mode === 'create' ? 'another budget in another period, e.g. 100/month (repeatable)' : 'replacement extra budgets (repeatable)',
      collect,
    );
  if (mode === 'update') command.option('--no-budget', 'remove every budget');
  return command;
}

/** Keys and tenants: what each agent session gets on its own (src/endusers/session-checks.ts). */
export function withSessionOptions(command: Command, mode: 'create' | 'update'): Command {
  command
    .option('--session-limit <spec>', 'a limit every agent session gets for itself, as --limit (repeatable; replaces them on update)', collect)
    .option('--session-budget-usd <dollars>', "every agent session's own spend cap in USD")
    .addOption(
      new Option('--session-budget-period <period>', "the sessions' budget period (default total: the session's whole run)").choices([...BUDGET_PERIODS]),
    );
  if (mode === 'update') command.option('--no-session-policy', 'remove the per-session limits and budgets');
  return command;
}

/** Keys only: what each end user of the key gets on its own, and budgets per tag (src/endusers). */
export function withEndUserOptions(command: Command, mode: 'create' | 'update'): Command {
  command
    .option('--user-limit <spec>', 'a limit every end user gets for itself, as --limit (repeatable; replaces them on update)', collect)
    .option('--user-rpm <n>', 'shorthand for --user-limit requests:N/min')
    .option('--user-tpm <n>', 'shorthand for --user-limit tokens:N/min')
    .option('--user-budget-usd <dollars>', "every end user's own spend cap in USD")
    .addOption(new Option('--user-budget-period <period>', "the end users' budget period (default month)").choices([...BUDGET_PERIODS]))
    .option('--tag-budget <tag=dollars/period>', 'a budget on the requests with a tag, e.g. search=5/day (repeatable; replaces them on update)', collect);
  if (mode === 'update') {
    command.option('--no-user-policy', 'remove the per-end-user limits and budgets').option('--no-tag-budgets', 'remove every tag budget');
  }
  return command;
}
