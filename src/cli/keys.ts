/**
 * `tollgate keys …`: issue, list, show, update, revoke, resume, suspend, unsuspend and rotate keys, and how a key is printed.
 * The options they share with tenants are in key-options.ts.
 */
import type { Command } from 'commander';
import type { IssuedKey, KeyPatch, KeyView, PauseOwner } from '../domain/keys.js';
import { activePauses } from '../domain/owner-pauses.js';
import { PolicyError, type Policy } from '../domain/policy.js';
import {
  describeAttributedPolicy,
  endUserPolicyFrom,
  sessionPolicyFrom,
  tagBudgetsFrom,
  type EndUserOptions,
  type SessionOptions,
} from '../domain/policy-options.js';
import { CliError, EXIT_USAGE, print, printJson, withOps } from './context.js';
import { describeBudget, describeLimits, printable, table, when } from './format.js';
import {
  budgetFrom,
  collect,
  downgradeFrom,
  extraBudgetsFrom,
  limitsFrom,
  maxInFlightFrom,
  metadataFrom,
  modelsFrom,
  parseExpiry,
  runawayFrom,
  withEndUserOptions,
  withRunawayOptions,
  withSessionOptions,
  withPolicyOptions,
  type LimitOptions,
  type RunawayOptions,
} from './key-options.js';
import { formatMicrosExact } from '../domain/money.js';

function describeDowngrade(policy: Policy): string {
  const downgrade = policy.downgrade;
  if (downgrade === undefined) return '-';
  const pairs = Object.entries(downgrade.models).map(([from, to]) => `${from} -> ${to}`);
  return `at ${downgrade.atPercent}% of a budget: ${pairs.join(', ')}`;
}

/** A key's own runaway rule, as `keys show` prints it. */
function describeRunaway(rule: NonNullable<Policy['runaway']>): string {
  if (rule.off === true) return 'off for this key';
  const parts = [
    ...(rule.factor === undefined ? [] : [`over ${rule.factor}× its usual rate`]),
    ...(rule.microUsdPerHour === undefined ? [] : [`over ${formatMicrosExact(rule.microUsdPerHour)}/hour`]),
  ];
  return `paused when its spend runs ${parts.join(' or ')}`;
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
    ...(view.suspended !== undefined ? ([['suspended', `${when(view.suspended.at)} by ${view.suspended.by}`]] as Array<[string, string]>) : []),
    ...(view.throttle !== undefined ? ([['paused', `${when(view.throttle.at)}: ${view.throttle.reason}`]] as Array<[string, string]>) : []),
    ...activePauses(view.pauses).map((pause): [string, string] => [
      `paused ${pause.level === 'session' ? 'session' : 'end user'}`,
      `${when(pause.at)}: ${pause.reason}`,
    ]),
    ['limits', describeLimits(view.policy)],
    ['budget', describeBudget(view.policy)],
    ['models', view.policy.models?.join(', ') ?? 'all'],
    ...(view.policy.downgrade !== undefined ? ([['downgrade', describeDowngrade(view.policy)]] as Array<[string, string]>) : []),
    ...(view.policy.runaway !== undefined ? ([['runaway stop', describeRunaway(view.policy.runaway)]] as Array<[string, string]>) : []),
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
export function registerKeyCommands(program: Command): void {
  const keys = program.command('keys').description('issue and manage tenant keys');

  withRunawayOptions(
    withSessionOptions(
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
      ),
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
          EndUserOptions &
          SessionOptions &
          RunawayOptions & {
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
        const session = sessionPolicyFrom(options);
        const tagBudgets = tagBudgetsFrom(options);
        const runaway = runawayFrom(options) ?? undefined;
        const policy: Policy = {
          limits: limitsFrom(options) ?? [],
          ...(budget ? { budget } : {}),
          ...(budgets ? { budgets } : {}),
          ...(models ? { models } : {}),
          ...(downgrade ? { downgrade } : {}),
          ...maxInFlightFrom(options),
          ...(endUser ? { endUser } : {}),
          ...(session ? { session } : {}),
          ...(tagBudgets ? { tagBudgets } : {}),
          ...(runaway ? { runaway } : {}),
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

  withRunawayOptions(
    withSessionOptions(
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
      ),
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
          EndUserOptions &
          SessionOptions &
          RunawayOptions & {
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
            session: sessionPolicyFrom(options, current.policy.session),
            tagBudgets: tagBudgetsFrom(options),
            models: options.allModels ? null : modelsFrom(options.models),
            downgrade,
            runaway: runawayFrom(options, current.policy.runaway),
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
    .command('resume')
    .description('lift a runaway-stop pause (of the key and all it paused on it, or of one session or end user): requests pass again within a second')
    .argument('<key>', 'key id, name or visible prefix')
    .option('--session <id>', 'resume only this agent session of the key')
    .option('--end-user <id>', 'resume only this end user of the key')
    .option('--json', 'print JSON')
    .action(async (ref: string, options: { json?: boolean; session?: string; endUser?: string }, command: Command) => {
      if (options.session !== undefined && options.endUser !== undefined) throw new CliError('give --session or --end-user, not both', EXIT_USAGE);
      const owner: PauseOwner | undefined =
        options.session !== undefined
          ? { level: 'session', name: options.session }
          : options.endUser !== undefined
            ? { level: 'end_user', name: options.endUser }
            : undefined;
      const view = await withOps(command, (ops) => ops.resumeKey(ref, owner));
      if (options.json) printJson(view);
      else if (owner === undefined) print(`Resumed key "${view.name}" (${view.id})`);
      else print(`Resumed ${owner.level === 'session' ? 'session' : 'end user'} "${owner.name}" of key "${view.name}" (${view.id})`);
    });

  keys
    .command('suspend')
    .description('suspend a key until you unsuspend it (its requests get 403 key_suspended within a second; the runaway stop never lifts it)')
    .argument('<key>', 'key id, name or visible prefix')
    .option('--json', 'print JSON')
    .action(async (ref: string, options: { json?: boolean }, command: Command) => {
      const view = await withOps(command, (ops) => ops.suspendKey(ref));
      if (options.json) printJson(view);
      else print(`Suspended key "${view.name}" (${view.id}); status ${view.status}`);
    });

  keys
    .command('unsuspend')
    .description("lift a key's suspension: its requests pass again within a second")
    .argument('<key>', 'key id, name or visible prefix')
    .option('--json', 'print JSON')
    .action(async (ref: string, options: { json?: boolean }, command: Command) => {
      const view = await withOps(command, (ops) => ops.unsuspendKey(ref));
      if (options.json) printJson(view);
      else print(`Unsuspended key "${view.name}" (${view.id}); status ${view.status}`);
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
}
