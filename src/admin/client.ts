/**
 * The admin operations on a remote proxy, over its admin API — what
 * `tollgate --url http://host:8787 …` uses. Errors come back as the same
 * TollgateErrors the local operations throw.
 */
import { TollgateError, type ErrorCode } from '../domain/errors.js';
import type { SpendReport } from '../storage/spend-reads.js';
import type { IssuedKey, KeyView, TenantView } from '../domain/keys.js';
import type { AdminOps } from './ops.js';
import type { AdminView } from '../storage/admins.js';
import type { AuditPage } from '../storage/audit.js';
import type { DashboardTokenView } from '../storage/tenant-tokens.js';

export function remoteAdminOps(baseUrl: string, adminToken: string | undefined): AdminOps {
  const root = `${baseUrl.replace(/\/+$/, '')}/admin/api`;

  async function call<T>(method: string, path: string, body?: unknown): Promise<T> {
    let response: Response;
    try {
      response = await fetch(root + path, {
        method,
        headers: {
          ...(adminToken === undefined ? {} : { authorization: `Bearer ${adminToken}` }),
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
    } catch (error) {
      throw new TollgateError(
        'upstream_unreachable',
        `cannot reach ${baseUrl}: ${(error as Error).cause instanceof Error ? ((error as Error).cause as Error).message : (error as Error).message}`,
      );
    }
    const text = await response.text();
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      throw new TollgateError('upstream_bad_response', `${baseUrl} answered ${response.status} with something that is not JSON`);
    }
    if (!response.ok) {
      const error = (json as { error?: { code?: string; message?: string; param?: string | null } }).error;
      throw new TollgateError((error?.code ?? 'internal_error') as ErrorCode, error?.message ?? `${baseUrl} answered ${response.status}`, {
        param: error?.param ?? null,
      });
    }
    return json as T;
  }
  const issued = (json: KeyView & { key: string }): IssuedKey => {
    const { key, ...view } = json;
    return { key, view };
  };
  const q = (params: Record<string, string | undefined>): string => {
    const search = new URLSearchParams();
    for (const [name, value] of Object.entries(params)) if (value !== undefined) search.set(name, value);
    const text = search.toString();
    return text === '' ? '' : `?${text}`;
  };
  const ref = (text: string): string => encodeURIComponent(text);

  return {
    createKey: async (input) => issued(await call('POST', '/keys', input)),
    listKeys: async (opts) => (await call<{ data: KeyView[] }>('GET', `/keys${q({ tenant: opts.tenant, all: opts.includeRevoked ? '1' : undefined })}`)).data,
    getKey: (r) => call('GET', `/keys/${ref(r)}`),
    updateKey: (r, patch) => call('PATCH', `/keys/${ref(r)}`, patch),
    revokeKey: (r) => call('POST', `/keys/${ref(r)}/revoke`),
    resumeKey: (r, owner) =>
      call('POST', `/keys/${ref(r)}/resume`, owner === undefined ? undefined : owner.level === 'session' ? { session: owner.name } : { endUser: owner.name }),
    rotateKey: async (r) => issued(await call('POST', `/keys/${ref(r)}/rotate`)),
    suspendKey: (r) => call('POST', `/keys/${ref(r)}/suspend`),
    unsuspendKey: (r) => call('POST', `/keys/${ref(r)}/unsuspend`),
    createTenant: (name, policy) => call<TenantView>('POST', '/tenants', { name, ...policy }),
    listTenants: async () => (await call<{ data: TenantView[] }>('GET', '/tenants')).data,
    getTenant: (r) => call('GET', `/tenants/${ref(r)}`),
    updateTenant: (r, patch) => call('PATCH', `/tenants/${ref(r)}`, patch),
    spend: (request) =>
      call<SpendReport>(
        'GET',
        `/spend${q({
          key: request.key,
          tenant: request.tenant,
          since: request.since,
          until: request.until,
          by: request.by,
          limit: request.limit === undefined ? undefined : String(request.limit),
          cursor: request.cursor,
        })}`,
      ),
    createAdmin: async (input) => {
      const { token, ...view } = await call<AdminView & { token: string }>('POST', '/admins', input);
      return { token, view };
    },
    listAdmins: async () => (await call<{ data: AdminView[] }>('GET', '/admins')).data,
    revokeAdmin: (r) => call('POST', `/admins/${ref(r)}/revoke`),
    createTenantToken: async (input) => {
      const { token, ...view } = await call<DashboardTokenView & { token: string }>('POST', '/dashboard-tokens', input);
      return { token, view };
    },
    listTenantTokens: async (opts) => (await call<{ data: DashboardTokenView[] }>('GET', `/dashboard-tokens${q({ tenant: opts.tenant })}`)).data,
    revokeTenantToken: (r) => call('POST', `/dashboard-tokens/${ref(r)}/revoke`),
    audit: (request) =>
      call<AuditPage>(
        'GET',
        `/audit${q({
          key: request.key,
          tenant: request.tenant,
          target: request.targetKind,
          since: request.since,
          until: request.until,
          actor: request.actor,
          action: request.action,
          limit: request.limit === undefined ? undefined : String(request.limit),
          cursor: request.cursor,
        })}`,
      ),
    close: async () => undefined,
  };
}
