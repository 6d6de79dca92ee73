/**
 * `tollgate admins create|list|revoke` and `tollgate audit` (docs/admins.md):
 * named admins with roles, and the trail of every change. On the database
 * itself the CLI acts as `cli:<OS user>`; with --url, as the token's admin.
 */
import type { Command } from 'commander';
import { ADMIN_ROLES, isAdminRole } from '../domain/admins.js';
import { AUDIT_ACTIONS, type AuditAction, type AuditEntry } from '../domain/audit.js';
import { auditExport, type AuditFormat } from '../reports/audit-export.js';
import { MAX_AUDIT_PAGE } from '../storage/audit.js';
import type { AdminView } from '../storage/admins.js';
import { CliError, EXIT_USAGE, print, printChunk, printJson, withOps } from './context.js';
import { table, when } from './format.js';

function adminRows(views: readonly AdminView[]): string {
  return table(
    ['id', 'name', 'role', 'prefix', 'status', 'created', 'by', 'revoked'],
    views.map((v) => [v.id, v.name, v.role, v.prefix, v.status, when(v.createdAt), v.createdBy, when(v.revokedAt)]),
  );
}

/** What changed, in a few words for a table: the fields whose values differ. */
function changedFields(entry: AuditEntry): string {
  if (entry.before === null) return 'created';
  const after = entry.after ?? {};
  const names = new Set([...Object.keys(entry.before), ...Object.keys(after)]);
  const changed = [...names].filter((name) => JSON.stringify(entry.before?.[name]) !== JSON.stringify(after[name]));
  return changed.length === 0 ? '-' : changed.join(', ');
}

export function registerAdminCommands(program: Command): void {
  const admins = program.command('admins').description('named admins: tokens with a role (viewer, operator, admin) for the admin API and the dashboard');
  admins
    .command('create')
    .description('create an admin; its token is printed once')
    .requiredOption('--name <name>', 'the admin (how the audit trail names it)')
    .requiredOption('--role <role>', `one of ${ADMIN_ROLES.join(', ')}`)
    .option('--json', 'print JSON')
    .action(async (options: { name: string; role: string; json?: boolean }, command: Command) => {
      if (!isAdminRole(options.role)) throw new CliError(`--role must be one of ${ADMIN_ROLES.join(', ')}`, EXIT_USAGE);
      const role = options.role;
      const issued = await withOps(command, (ops) => ops.createAdmin({ name: options.name, role }));
      if (options.json) {
        printJson({ token: issued.token, ...issued.view });
        return;
      }
      print(`Admin "${issued.view.name}" (${issued.view.role}, ${issued.view.id}). Its token, shown once:\n\n  ${issued.token}\n`);
      print('It opens the admin API (Authorization: Bearer …) and the dashboard, with that role.');
    });
  admins
    .command('list')
    .description('admins (never their tokens)')
    .option('--json', 'print JSON')
    .action(async (options: { json?: boolean }, command: Command) => {
      const views = await withOps(command, (ops) => ops.listAdmins());
      if (options.json) printJson(views);
      else print(views.length === 0 ? 'No named admins (TOLLGATE_ADMIN_TOKEN is the only way in).' : adminRows(views));
    });
  admins
    .command('revoke <admin>')
    .description('revoke an admin (its name or id): its token and dashboard sessions stop at their next request')
    .option('--json', 'print JSON')
    .action(async (ref: string, options: { json?: boolean }, command: Command) => {
      const view = await withOps(command, (ops) => ops.revokeAdmin(ref));
      if (options.json) printJson(view);
      else print(`Revoked admin "${view.name}" (${view.id}).`);
    });

  program
    .command('audit')
    .description('the audit trail: every change to keys, tenants, admins and tenant tokens, newest first')
    .option('--key <key>', "one key's changes (id, name or prefix)")
    .option('--tenant <tenant>', "one tenant's own changes (id or name)")
    .option('--since <when>', 'from: 7d, today, month, YYYY-MM-DD or an ISO instant (default: the first change)')
    .option('--until <when>', 'up to: a day (included) or an ISO instant (excluded)')
    .option('--actor <name>', 'changes by one actor: an admin name, bootstrap, or cli:<user>')
    .option('--action <action>', `one kind of change (${AUDIT_ACTIONS.join(', ')})`)
    .option('--limit <n>', 'at most this many rows (table only; default 100)')
    .option('--format <format>', 'table, csv or ndjson (csv and ndjson: every matching row)', 'table')
    .action(
      async (
        options: { key?: string; tenant?: string; since?: string; until?: string; actor?: string; action?: string; limit?: string; format: string },
        command: Command,
      ) => {
        if (!['table', 'csv', 'ndjson'].includes(options.format)) throw new CliError('--format must be table, csv or ndjson', EXIT_USAGE);
        if (options.action !== undefined && !(AUDIT_ACTIONS as readonly string[]).includes(options.action))
          throw new CliError(`--action must be one of ${AUDIT_ACTIONS.join(', ')}`, EXIT_USAGE);
        const limit = options.limit === undefined ? undefined : Number(options.limit);
        if (limit !== undefined && !(Number.isInteger(limit) && limit >= 1 && limit <= MAX_AUDIT_PAGE))
          throw new CliError(`--limit must be a whole number from 1 to ${MAX_AUDIT_PAGE}`, EXIT_USAGE);
        const request = {
          key: options.key,
          tenant: options.tenant,
          since: options.since,
          until: options.until,
          actor: options.actor,
          action: options.action as AuditAction | undefined,
        };
        await withOps(command, async (ops) => {
          if (options.format === 'table') {
            const page = await ops.audit({ ...request, limit });
            if (page.data.length === 0) {
              print('No changes recorded.');
              return;
            }
            print(
              table(
                ['at', 'actor', 'action', 'target', 'changed'],
                page.data.map((e) => [when(e.at), e.actor.name, e.action, `${e.target.kind} ${e.target.name} (${e.target.id})`, changedFields(e)]),
              ),
            );
            if (page.hasMore) print(`More rows: narrow with --since/--key/--actor, raise --limit, or use --format csv.`);
            return;
          }
          for await (const chunk of auditExport((cursor) => ops.audit({ ...request, limit: MAX_AUDIT_PAGE, cursor }), options.format as AuditFormat)) {
            if (!(await printChunk(chunk))) break;
          }
        });
      },
    );
}
