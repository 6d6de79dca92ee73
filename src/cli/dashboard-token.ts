/**
 * `tollgate dashboard-token create|list|revoke`: read-only dashboard tokens
 * of one tenant (src/storage/tenant-tokens.ts), through the admin operations
 * (src/admin/ops.ts) like every other change, so each issue and revocation is
 * in the audit trail: on PostgreSQL with TOLLGATE_DATABASE_URL (replicas:
 * every node reads them there), else on the local SQLite file (`--db` opens
 * one on purpose), or on a running proxy with --url (its
 * /admin/api/dashboard-tokens).
 */
import type { Command } from 'commander';
import type { DashboardTokenView } from '../storage/tenant-tokens.js';
import { print, printJson, withOps } from './context.js';
import { table, when } from './format.js';
import { parseExpiry } from './key-options.js';

function rows(views: readonly DashboardTokenView[]): string {
  return table(
    ['id', 'prefix', 'tenant', 'status', 'label', 'created', 'expires'],
    views.map((v) => [v.id, v.prefix, v.tenant, v.status, v.label, when(v.createdAt), when(v.expiresAt)]),
  );
}

export function registerDashboardTokenCommands(program: Command): void {
  const tokens = program.command('dashboard-token').description('read-only dashboard tokens of one tenant (its keys, spend and budgets, nothing else)');
  tokens
    .command('create')
    .description('issue a token (printed once) for a tenant to log into the dashboard with')
    .requiredOption('--tenant <tenant>', 'the tenant (id or name)')
    .option('--label <text>', 'who it is for (shown in lists)')
    .option('--expires <when>', 'expiry: 30d, 12h, 90m or a date')
    .option('--json', 'print JSON')
    .action(async (options: { tenant: string; label?: string; expires?: string; json?: boolean }, command: Command) => {
      const expiresAt = options.expires === undefined ? null : parseExpiry(options.expires);
      const issued = await withOps(command, (ops) => ops.createTenantToken({ tenant: options.tenant, label: options.label, expiresAt }));
      if (options.json) {
        printJson({ token: issued.token, ...issued.view });
        return;
      }
      print(`Dashboard token for tenant ${issued.view.tenant} (${issued.view.id}), shown once:\n\n  ${issued.token}\n`);
      print(
        `It logs into /dashboard read-only, scoped to ${issued.view.tenant}${issued.view.expiresAt === null ? '' : `, until ${when(issued.view.expiresAt)}`}.`,
      );
    });
  tokens
    .command('list')
    .description('dashboard tokens (never their secrets)')
    .option('--tenant <tenant>', 'of one tenant')
    .option('--json', 'print JSON')
    .action(async (options: { tenant?: string; json?: boolean }, command: Command) => {
      const views = await withOps(command, (ops) => ops.listTenantTokens({ tenant: options.tenant }));
      if (options.json) printJson(views);
      else print(views.length === 0 ? 'No dashboard tokens.' : rows(views));
    });
  tokens
    .command('revoke <token>')
    .description('revoke a token (its id or prefix); its sessions end at their next request')
    .option('--json', 'print JSON')
    .action(async (ref: string, options: { json?: boolean }, command: Command) => {
      const view = await withOps(command, (ops) => ops.revokeTenantToken(ref));
      if (options.json) printJson(view);
      else print(`Revoked dashboard token ${view.id} (${view.prefix}) of tenant ${view.tenant}.`);
    });
}
