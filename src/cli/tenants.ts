/** `tollgate tenants …`: groups of keys with shared limits and budgets, created, listed, shown and updated. */
import type { Command } from 'commander';
import type { TenantView } from '../domain/keys.js';
import { print, printJson, withOps } from './context.js';
import { describeBudget, describeLimits, printable, table, when } from './format.js';
import { budgetFrom, extraBudgetsFrom, limitsFrom, maxInFlightFrom, withPolicyOptions, withSessionOptions, type LimitOptions } from './key-options.js';
import { describeAttributedPolicy, sessionPolicyFrom, type SessionOptions } from '../domain/policy-options.js';

function describeTenant(view: TenantView): string {
  return [
    ['id', view.id],
    ['name', view.name],
    ['keys', String(view.keys)],
    ['limits', describeLimits(view.policy)],
    ['budget', describeBudget(view.policy)],
    ...describeAttributedPolicy(view.policy),
    ['created', when(view.createdAt)],
  ]
    .map(([label, value]) => `  ${label!.padEnd(8)} ${printable(value!)}`)
    .join('\n');
}

export function registerTenantCommands(program: Command): void {
  const tenants = program.command('tenants').description('tenants: groups of keys with shared limits and budget');

  withSessionOptions(
    withPolicyOptions(
      tenants.command('create').description('create a tenant with limits and a budget shared by its keys').argument('<name>', 'tenant name'),
      'create',
    ),
    'create',
  )
    .option('--json', 'print JSON')
    .action(
      async (
        name: string,
        options: LimitOptions & SessionOptions & { budgetUsd?: string; budgetPeriod?: string; extraBudget?: string[]; json?: boolean },
        command: Command,
      ) => {
        const budget = budgetFrom(options.budgetUsd, options.budgetPeriod);
        const budgets = extraBudgetsFrom(options.extraBudget);
        const session = sessionPolicyFrom(options);
        const view = await withOps(command, (ops) =>
          ops.createTenant(name, {
            limits: limitsFrom(options) ?? [],
            ...(budget ? { budget } : {}),
            ...(budgets ? { budgets } : {}),
            ...maxInFlightFrom(options),
            ...(session ? { session } : {}),
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

  withSessionOptions(
    withPolicyOptions(
      tenants
        .command('update')
        .description('change a tenant; --limit/--rpm/--tpm replace all its limits')
        .argument('<tenant>', 'tenant id or name')
        .option('--name <name>', 'new name'),
      'update',
    ),
    'update',
  )
    .option('--json', 'print JSON')
    .action(
      async (
        ref: string,
        options: LimitOptions &
          SessionOptions & {
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
            session: sessionPolicyFrom(options, current.policy.session),
          });
        });
        if (options.json) printJson(view);
        else print(`Updated tenant "${view.name}"\n${describeTenant(view)}`);
      },
    );
}
