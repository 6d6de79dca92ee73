/** `tollgate keys …` and `tollgate tenants …`. */
import { Option, type Command } from 'commander';
import type { IssuedKey, KeyPatch, KeyView, TenantView } from '../domain/keys.js';
import { BUDGET_PERIODS, parseLimit, parseUsdToMicros, PolicyError, type Budget, type BudgetPeriod, type LimitSpec, type Policy } from '../domain/policy.js';
import { describeAttributedPolicy, endUserPolicyFrom, tagBudgetsFrom, type EndUserOptions } from '../domain/policy-options.js';
import { print, printJson, withOps } from './context.js';
import { describeBudget, describeLimits, printable, table, when } from './format.js';

const collect = (value: string, previous: string[] = []): string[] => [...previous, value];

interface LimitOptions {
  limit?: string[];
  rpm?: string;
  tpm?: string;
  maxInFlight?: string;
}

/** `--max-in-flight N` as a policy field (set at creation), or nothing. */
function maxInFlightFrom(options: LimitOptions): { maxInFlight?: number } {
  if (options.maxInFlight === undefined) return {};
  const n = Number(options.maxInFlight);
  if (!/^\d+$/.test(options.maxInFlight.trim()) || !Number.isSafeInteger(n) || n < 1) {
    throw new PolicyError(`--max-in-flight "${options.maxInFlight}" is not a whole number of requests above zero`);
  }
  return { maxInFlight: n };
}

/** Limits from --limit/--rpm/--tpm, or undefined when none was given. */
function limitsFrom(options: LimitOptions): LimitSpec[] | undefined {
  const texts = [...(options.limit ?? [])];
  if (options.rpm !== undefined) texts.push(`requests:${options.rpm}/min`);
  if (options.tpm !== undefined) texts.push(`tokens:${options.tpm}/min`);
  return texts.length === 0 ? undefined : texts.map(parseLimit);
}

function budgetFrom(usdText: string | undefined, periodText: string | undefined, current?: Budget): Budget | undefined {
  if (periodText !== undefined && !(BUDGET_PERIODS as readonly string[]).includes(periodText)) {
    throw new PolicyError(`--budget-period must be one of ${BUDGET_PERIODS.join(', ')} (got "${periodText}")`);
  }
  if (usdText === undefined) {
    if (periodText === undefined) return undefined;
    if (current === undefined) throw new PolicyError('--budget-period needs --budget-usd (the key has no budget yet)');
    return { microUsd: current.microUsd, period: periodText as BudgetPeriod };
  }
  const microUsd = parseUsdToMicros(usdText);
  if (microUsd <= 0) throw new PolicyError('--budget-usd must be greater than zero');
  return { microUsd, period: (periodText ?? current?.period ?? 'month') as BudgetPeriod };
}

/** Budgets from repeated `--extra-budget 100/month`, or undefined when none was given. */
function extraBudgetsFrom(texts: readonly string[] | undefined): Budget[] | undefined {
  if (texts === undefined) return undefined;
  return texts.map((text) => {
    const [usd = '', period = ''] = text.split('/');
    if (!(BUDGET_PERIODS as readonly string[]).includes(period)) {
      throw new PolicyError(`--extra-budget takes DOLLARS/PERIOD with PERIOD one of ${BUDGET_PERIODS.join(', ')} (got "${text}")`);
    }
    const microUsd = parseUsdToMicros(usd);
    if (microUsd <= 0) throw new PolicyError('--extra-budget must be greater than zero');
    return { microUsd, period: period as BudgetPeriod };
  });
}

/**
 * `--downgrade gpt-4o=gpt-4o-mini,o3=o4-mini [--downgrade-at 80]`: once a budget of the key (or
 * its tenant) has spent that share, requests for each FROM model go to its TO model.
 */
function downgradeFrom(text: string | undefined, at: string | undefined, current?: Policy['downgrade']): Policy['downgrade'] | undefined {
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

function describeDowngrade(policy: Policy): string {
  const downgrade = policy.downgrade;
  if (downgrade === undefined) return '-';
  const pairs = Object.entries(downgrade.models).map(([from, to]) => `${from} -> ${to}`);
  return `at ${downgrade.atPercent}% of a budget: ${pairs.join(', ')}`;
}

function modelsFrom(text: string | undefined): string[] | undefined {
  if (text === undefined) return undefined;
  const models = text
    .split(',')
    .map((m) => m.trim())
    .filter((m) => m !== '');
  if (models.length === 0) throw new PolicyError('--models needs at least one model name');
  return models;
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

function metadataFrom(pairs: string[] | undefined): Record<string, string> | undefined {
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
function withPolicyOptions(command: Command, mode: 'create' | 'update'): Command {
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

/** Keys only: what each end user of the key gets on its own, and budgets per tag (src/endusers). */
function withEndUserOptions(command: Command, mode: 'create' | 'update'): Command {
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

function describeKey(view: KeyView): string {
  const rows: Array<[string, string]> = [
    ['id', view.id],
    ['name', view.name],
    ['tenant', view.tenant ?? '-'],
    ['prefix', view.prefix],
    ['status', view.status],
    ['created', when(view.createdAt)],
    ['expires', when(view.expiresAt)],
    ...(view.rotatedAt !== null ? ([['rotated', when(view.rotatedAt)]] as Array<[string, string]>) : []),
    ...(view.revokedAt !== null ? ([['revoked', when(view.revokedAt)]] as Array<[string, string]>) : []),
    ['limits', describeLimits(view.policy)],
    ['budget', describeBudget(view.policy)],
    ['models', view.policy.models?.join(', ') ?? 'all'],
    ...(view.policy.downgrade !== undefined ? ([['downgrade', describeDowngrade(view.policy)]] as Array<[string, string]>) : []),
    ...(view.policy.maxInFlight !== undefined ? ([['in flight', `at most ${view.policy.maxInFlight}`]] as Array<[string, string]>) : []),
    ...describeAttributedPolicy(view.policy),
    ...(Object.keys(view.metadata).length > 0
      ? ([
          [
            'metadata',
            Object.entries(view.metadata)
              .map(([k, v]) => `${k}=${v}`)
              .join(', '),
          ],
        ] as Array<[string, string]>)
      : []),
  ];
  return rows.map(([label, value]) => `  ${label.padEnd(8)} ${printable(value)}`).join('\n');
}

function printIssued(issued: IssuedKey, json: boolean, verb: 'Created' | 'Rotated'): void {
  if (json) {
    printJson({ key: issued.key, ...issued.view });
    return;
  }
  print(
    `${verb} key "${issued.view.name}" (${issued.view.id})\n\n  key      ${issued.key}\n${describeKey(issued.view)}\n\nStore the key now: it is shown only this once.`,
  );
}

function keyRows(keys: KeyView[]): string {
  return table(
    ['name', 'id', 'prefix', 'tenant', 'status', 'limits', 'budget', 'created'],
    keys.map((k) => [k.name, k.id, k.prefix, k.tenant ?? '-', k.status, describeLimits(k.policy), describeBudget(k.policy), when(k.createdAt)]),
  );
}

function describeTenant(view: TenantView): string {
  return [
    ['id', view.id],
    ['name', view.name],
    ['keys', String(view.keys)],
    ['limits', describeLimits(view.policy)],
    ['budget', describeBudget(view.policy)],
    ['created', when(view.createdAt)],
  ]
    .map(([label, value]) => `  ${label!.padEnd(8)} ${printable(value!)}`)
    .join('\n');
}

export function registerKeyCommands(program: Command): void {
  const keys = program.command('keys').description('issue and manage tenant keys');

  withEndUserOptions(
    withPolicyOptions(
      keys
        .command('create')
        .description('issue a new key (printed once)')
        .requiredOption('--name <name>', 'unique name for the key')
        .option('--tenant <tenant>', 'tenant the key belongs to (created if new)'),
      'create',
    ),
    'create',
  )
    .option('--models <list>', 'comma-separated models the key may use (prefix* allowed)')
    .option('--downgrade <pairs>', 'FROM=TO models (comma-separated): once a budget passes --downgrade-at, FROM goes to TO')
    .option('--downgrade-at <percent>', 'share of a budget spent that starts the downgrade (default 80)')
    .option('--expires <when>', 'expiry: 30d, 12h, 90m or a date')
    .option('--meta <label=value>', 'metadata label (repeatable)', collect)
    .option('--json', 'print JSON (includes the key once)')
    .action(
      async (
        options: LimitOptions &
          EndUserOptions & {
            name: string;
            tenant?: string;
            budgetUsd?: string;
            budgetPeriod?: string;
            extraBudget?: string[];
            models?: string;
            downgrade?: string;
            downgradeAt?: string;
            expires?: string;
            meta?: string[];
            json?: boolean;
          },
        command: Command,
      ) => {
        const downgrade = downgradeFrom(options.downgrade, options.downgradeAt);
        const budget = budgetFrom(options.budgetUsd, options.budgetPeriod);
        const budgets = extraBudgetsFrom(options.extraBudget);
        const models = modelsFrom(options.models);
        const endUser = endUserPolicyFrom(options);
        const tagBudgets = tagBudgetsFrom(options);
        const policy: Policy = {
          limits: limitsFrom(options) ?? [],
          ...(budget ? { budget } : {}),
          ...(budgets ? { budgets } : {}),
          ...(models ? { models } : {}),
          ...(downgrade ? { downgrade } : {}),
          ...maxInFlightFrom(options),
          ...(endUser ? { endUser } : {}),
          ...(tagBudgets ? { tagBudgets } : {}),
        };
        const issued = await withOps(command, (ops) =>
          ops.createKey({
            name: options.name,
            tenant: options.tenant,
            policy,
            expiresAt: options.expires === undefined ? null : parseExpiry(options.expires),
            metadata: metadataFrom(options.meta),
          }),
        );
        printIssued(issued, options.json === true, 'Created');
      },
    );

  keys
    .command('list')
    .description('list keys (live ones unless --all)')
    .option('--tenant <tenant>', 'only this tenant')
    .option('--all', 'include revoked keys')
    .option('--json', 'print JSON')
    .action(async (options: { tenant?: string; all?: boolean; json?: boolean }, command: Command) => {
      const list = await withOps(command, (ops) => ops.listKeys({ tenant: options.tenant, includeRevoked: options.all === true }));
      if (options.json) printJson(list);
      else print(list.length === 0 ? 'no keys' : keyRows(list));
    });

  keys
    .command('show')
    .description('show one key (by id, name or prefix)')
    .argument('<key>', 'key id, name or visible prefix')
    .option('--json', 'print JSON')
    .action(async (ref: string, options: { json?: boolean }, command: Command) => {
      const view = await withOps(command, (ops) => ops.getKey(ref));
      if (options.json) printJson(view);
      else print(describeKey(view));
    });

  withEndUserOptions(
    withPolicyOptions(
      keys
        .command('update')
        .description('change a key; --limit/--rpm/--tpm replace all its limits')
        .argument('<key>', 'key id, name or visible prefix')
        .option('--name <name>', 'new name')
        .option('--tenant <tenant>', 'move to this tenant (created if new)')
        .option('--no-tenant', 'take the key out of its tenant'),
      'update',
    ),
    'update',
  )
    .option('--models <list>', 'comma-separated models the key may use')
    .option('--all-models', 'allow every model')
    .option('--downgrade <pairs>', 'FROM=TO models (comma-separated) to downgrade to past --downgrade-at')
    .option('--downgrade-at <percent>', 'share of a budget spent that starts the downgrade')
    .option('--no-downgrade', 'remove the downgrade')
    .option('--expires <when>', 'new expiry: 30d, 12h, 90m or a date')
    .option('--no-expiry', 'never expire')
    .option('--meta <label=value>', 'set a metadata label (repeatable)', collect)
    .option('--unset-meta <label>', 'remove a metadata label (repeatable)', collect)
    .option('--json', 'print JSON')
    .action(
      async (
        ref: string,
        options: LimitOptions &
          EndUserOptions & {
            name?: string;
            tenant?: string | false;
            clearLimits?: boolean;
            budgetUsd?: string;
            budgetPeriod?: string;
            extraBudget?: string[];
            budget?: boolean;
            models?: string;
            allModels?: boolean;
            downgrade?: string | false;
            downgradeAt?: string;
            expires?: string;
            expiry?: boolean;
            meta?: string[];
            unsetMeta?: string[];
            json?: boolean;
          },
        command: Command,
      ) => {
        const view = await withOps(command, async (ops) => {
          const current = await ops.getKey(ref);
          const limits = options.clearLimits ? [] : limitsFrom(options);
          if (options.budget === false && (options.budgetUsd !== undefined || options.budgetPeriod !== undefined || options.extraBudget !== undefined)) {
            throw new PolicyError('--no-budget cannot be combined with --budget-usd/--budget-period/--extra-budget');
          }
          const budget = options.budget === false ? null : budgetFrom(options.budgetUsd, options.budgetPeriod, current.policy.budget);
          const budgets = options.budget === false ? null : extraBudgetsFrom(options.extraBudget);
          if (options.allModels && options.models !== undefined) throw new PolicyError('--all-models cannot be combined with --models');
          if (options.downgrade === false && options.downgradeAt !== undefined) throw new PolicyError('--no-downgrade cannot be combined with --downgrade-at');
          const downgrade = options.downgrade === false ? null : downgradeFrom(options.downgrade, options.downgradeAt, current.policy.downgrade);
          const metadata: Record<string, string | null> = { ...metadataFrom(options.meta) };
          for (const label of options.unsetMeta ?? []) metadata[label] = null;
          const patch: KeyPatch = {
            name: options.name,
            tenant: options.tenant === false ? null : options.tenant,
            limits,
            budget,
            budgets,
            ...maxInFlightFrom(options),
            endUser: endUserPolicyFrom(options, current.policy.endUser),
            tagBudgets: tagBudgetsFrom(options),
            models: options.allModels ? null : modelsFrom(options.models),
            downgrade,
            expiresAt: options.expiry === false ? null : options.expires === undefined ? undefined : parseExpiry(options.expires),
            metadata: Object.keys(metadata).length === 0 ? undefined : metadata,
          };
          return ops.updateKey(ref, patch);
        });
        if (options.json) printJson(view);
        else print(`Updated key "${view.name}"\n${describeKey(view)}`);
      },
    );

  keys
    .command('revoke')
    .description('revoke a key (its requests are refused within a second)')
    .argument('<key>', 'key id, name or visible prefix')
    .option('--json', 'print JSON')
    .action(async (ref: string, options: { json?: boolean }, command: Command) => {
      const view = await withOps(command, (ops) => ops.revokeKey(ref));
      if (options.json) printJson(view);
      else print(`Revoked key "${view.name}" (${view.id})`);
    });

  keys
    .command('rotate')
    .description('give a key a new secret (printed once); the old one stops working')
    .argument('<key>', 'key id, name or visible prefix')
    .option('--json', 'print JSON (includes the new key once)')
    .action(async (ref: string, options: { json?: boolean }, command: Command) => {
      const issued = await withOps(command, (ops) => ops.rotateKey(ref));
      printIssued(issued, options.json === true, 'Rotated');
    });

  const tenants = program.command('tenants').description('tenants: groups of keys with shared limits and budget');

  withPolicyOptions(
    tenants.command('create').description('create a tenant with limits and a budget shared by its keys').argument('<name>', 'tenant name'),
    'create',
  )
    .option('--json', 'print JSON')
    .action(
      async (name: string, options: LimitOptions & { budgetUsd?: string; budgetPeriod?: string; extraBudget?: string[]; json?: boolean }, command: Command) => {
        const budget = budgetFrom(options.budgetUsd, options.budgetPeriod);
        const budgets = extraBudgetsFrom(options.extraBudget);
        const view = await withOps(command, (ops) =>
          ops.createTenant(name, {
            limits: limitsFrom(options) ?? [],
            ...(budget ? { budget } : {}),
            ...(budgets ? { budgets } : {}),
            ...maxInFlightFrom(options),
          }),
        );
        if (options.json) printJson(view);
        else print(`Created tenant "${view.name}"\n${describeTenant(view)}`);
      },
    );

  tenants
    .command('list')
    .description('list tenants')
    .option('--json', 'print JSON')
    .action(async (options: { json?: boolean }, command: Command) => {
      const list = await withOps(command, (ops) => ops.listTenants());
      if (options.json) printJson(list);
      else
        print(
          list.length === 0
            ? 'no tenants'
            : table(
                ['name', 'id', 'keys', 'limits', 'budget'],
                list.map((t) => [t.name, t.id, String(t.keys), describeLimits(t.policy), describeBudget(t.policy)]),
                ['left', 'left', 'right'],
              ),
        );
    });

  tenants
    .command('show')
    .description('show one tenant')
    .argument('<tenant>', 'tenant id or name')
    .option('--json', 'print JSON')
    .action(async (ref: string, options: { json?: boolean }, command: Command) => {
      const view = await withOps(command, (ops) => ops.getTenant(ref));
      if (options.json) printJson(view);
      else print(describeTenant(view));
    });

  withPolicyOptions(
    tenants
      .command('update')
      .description('change a tenant; --limit/--rpm/--tpm replace all its limits')
      .argument('<tenant>', 'tenant id or name')
      .option('--name <name>', 'new name'),
    'update',
  )
    .option('--json', 'print JSON')
    .action(
      async (
        ref: string,
        options: LimitOptions & {
          name?: string;
          clearLimits?: boolean;
          budgetUsd?: string;
          budgetPeriod?: string;
          extraBudget?: string[];
          budget?: boolean;
          json?: boolean;
        },
        command: Command,
      ) => {
        const view = await withOps(command, async (ops) => {
          const current = await ops.getTenant(ref);
          return ops.updateTenant(ref, {
            name: options.name,
            limits: options.clearLimits ? [] : limitsFrom(options),
            budget: options.budget === false ? null : budgetFrom(options.budgetUsd, options.budgetPeriod, current.policy.budget),
            budgets: options.budget === false ? null : extraBudgetsFrom(options.extraBudget),
            ...maxInFlightFrom(options),
          });
        });
        if (options.json) printJson(view);
        else print(`Updated tenant "${view.name}"\n${describeTenant(view)}`);
      },
    );
}
