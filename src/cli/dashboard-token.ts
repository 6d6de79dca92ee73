/**
 * `tollgate dashboard-token create|list|revoke`: read-only dashboard tokens
 * of one tenant (src/storage/tenant-tokens.ts). On PostgreSQL with
 * TOLLGATE_DATABASE_URL (replicas: every node reads them there), else on the
 * local SQLite file (`--db` opens one on purpose), or on a running proxy with
 * --url (its /admin/api/dashboard-tokens).
 */
import type { Command } from 'commander';
import { loadConfig } from '../config/index.js';
import { TollgateError, type ErrorCode } from '../domain/errors.js';
import type { DashboardTokenStore, DashboardTokenView } from '../storage/tenant-tokens.js';
import { openDashboardTokens } from '../storage/index.js';
import { openCliBackend, print, printJson, type GlobalOptions } from './context.js';
import { table, when } from './format.js';
import { parseExpiry } from './key-options.js';

interface TokenOps {
  create(input: { tenant: string; label?: string | undefined; expiresAt: number | null }): Promise<{ token: string; view: DashboardTokenView }>;
  list(tenant: string | undefined): Promise<DashboardTokenView[]>;
  revoke(ref: string): Promise<DashboardTokenView>;
}

async function remoteCall<T>(base: string, token: string | undefined, method: string, path: string, body?: unknown): Promise<T> {
  let response: Response;
  try {
    response = await fetch(`${base.replace(/\/+$/, '')}/admin/api/dashboard-tokens${path}`, {
      method,
      headers: { ...(token === undefined ? {} : { authorization: `Bearer ${token}` }), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  } catch (error) {
    throw new TollgateError('upstream_unreachable', `cannot reach ${base}: ${(error as Error).message}`);
  }
  const json = (await response.json().catch(() => undefined)) as { error?: { code?: string; message?: string } } | undefined;
  if (!response.ok)
    throw new TollgateError((json?.error?.code ?? 'internal_error') as ErrorCode, json?.error?.message ?? `${base} answered ${response.status}`);
  return json as T;
}

async function withTokenOps<T>(command: Command, fn: (ops: TokenOps) => Promise<T>): Promise<T> {
  const global = command.optsWithGlobals<GlobalOptions>();
  const config = loadConfig();
  if (global.url !== undefined) {
    const base = global.url;
    const admin = global.adminToken ?? config.adminToken;
    return fn({
      create: async (input) => {
        const { token, ...view } = await remoteCall<DashboardTokenView & { token: string }>(base, admin, 'POST', '', input);
        return { token, view };
      },
      list: async (tenant) =>
        (await remoteCall<{ data: DashboardTokenView[] }>(base, admin, 'GET', tenant === undefined ? '' : `?tenant=${encodeURIComponent(tenant)}`)).data,
      revoke: (ref) => remoteCall(base, admin, 'POST', `/${encodeURIComponent(ref)}/revoke`),
    });
  }
  const onStore = (store: DashboardTokenStore): TokenOps => ({
    create: (input) => store.create(input, Date.now()),
    list: (tenant) => store.list({ tenant }, Date.now()),
    revoke: (ref) => store.revoke(ref, Date.now()),
  });
  const opened = await openCliBackend(config, global);
  try {
    return await fn(onStore(openDashboardTokens(opened.backend)));
  } finally {
    await opened.close();
  }
}

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
      const issued = await withTokenOps(command, (ops) => ops.create({ tenant: options.tenant, label: options.label, expiresAt }));
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
      const views = await withTokenOps(command, (ops) => ops.list(options.tenant));
      if (options.json) printJson(views);
      else print(views.length === 0 ? 'No dashboard tokens.' : rows(views));
    });
  tokens
    .command('revoke <token>')
    .description('revoke a token (its id or prefix); its sessions end at their next request')
    .option('--json', 'print JSON')
    .action(async (ref: string, options: { json?: boolean }, command: Command) => {
      const view = await withTokenOps(command, (ops) => ops.revoke(ref));
      if (options.json) printJson(view);
      else print(`Revoked dashboard token ${view.id} (${view.prefix}) of tenant ${view.tenant}.`);
    });
}
