/**
 * The admin API's routes for who may change Tollgate and what they changed
 * (docs/admins.md): named admins under /admins (role admin), and the audit
 * trail under /audit (any role), as JSON pages or streamed as CSV/NDJSON.
 */
import type { Context, Hono } from 'hono';
import { z } from 'zod';
import { ADMIN_ROLES } from '../domain/admins.js';
import { AUDIT_ACTIONS, type AuditTargetKind } from '../domain/audit.js';
import { TollgateError } from '../domain/errors.js';
import { auditExport, type AuditFormat } from '../reports/audit-export.js';
import { textStream } from '../reports/export.js';
import { MAX_AUDIT_PAGE } from '../storage/audit.js';
import type { AppEnv } from '../app-env.js';
import type { AdminOps, AuditRequest } from './ops.js';

const createAdminBody = z.strictObject({ name: z.string().min(1).max(64), role: z.enum(ADMIN_ROLES as [string, ...string[]]) });

const TARGET_KINDS: readonly AuditTargetKind[] = ['key', 'tenant', 'admin', 'tenant-token'];

/** The audit query of a request's parameters (bad values are 400s naming the parameter). */
export function auditRequestOf(query: (name: string) => string | undefined): AuditRequest {
  const action = query('action');
  if (action !== undefined && !(AUDIT_ACTIONS as readonly string[]).includes(action))
    throw new TollgateError('invalid_value', `action must be one of ${AUDIT_ACTIONS.join(', ')}`, { param: 'action' });
  const target = query('target');
  if (target !== undefined && !(TARGET_KINDS as readonly string[]).includes(target))
    throw new TollgateError('invalid_value', `target must be one of ${TARGET_KINDS.join(', ')}`, { param: 'target' });
  const limitText = query('limit');
  const limit = limitText === undefined ? undefined : Number(limitText);
  if (limit !== undefined && !(Number.isInteger(limit) && limit >= 1 && limit <= MAX_AUDIT_PAGE))
    throw new TollgateError('invalid_value', `limit must be a whole number from 1 to ${MAX_AUDIT_PAGE}`, { param: 'limit' });
  return {
    key: query('key'),
    tenant: query('tenant'),
    targetKind: target as AuditTargetKind | undefined,
    since: query('since'),
    until: query('until'),
    actor: query('actor'),
    action: action as AuditRequest['action'],
    limit,
    cursor: query('cursor'),
  };
}

export function registerAccessRoutes(
  api: Hono<AppEnv>,
  deps: {
    readonly opsOf: (c: Context<AppEnv>) => AdminOps;
    readonly body: <S extends z.ZodType>(c: Context<AppEnv>, schema: S) => Promise<z.output<S>>;
    readonly now: () => number;
  },
): void {
  const { opsOf, body } = deps;
  api.get('/admins', async (c) => c.json({ data: await opsOf(c).listAdmins() }));
  api.post('/admins', async (c) => {
    const input = await body(c, createAdminBody);
    const issued = await opsOf(c).createAdmin({ name: input.name, role: input.role as (typeof ADMIN_ROLES)[number] });
    return c.json({ token: issued.token, ...issued.view }, 201);
  });
  const revoke = async (c: Context<AppEnv>) => c.json(await opsOf(c).revokeAdmin(c.req.param('ref') ?? ''));
  api.post('/admins/:ref/revoke', revoke);
  api.delete('/admins/:ref', revoke);

  api.get('/audit', async (c) => {
    const request = auditRequestOf((name) => c.req.query(name));
    const format = c.req.query('format') ?? 'json';
    if (format === 'json') return c.json(await opsOf(c).audit(request));
    if (format !== 'csv' && format !== 'ndjson') throw new TollgateError('invalid_value', 'format must be json, csv or ndjson', { param: 'format' });
    const ops = opsOf(c);
    const stream = await textStream(auditExport((cursor) => ops.audit({ ...request, limit: MAX_AUDIT_PAGE, cursor }), format as AuditFormat));
    const day = new Date(deps.now()).toISOString().slice(0, 10);
    return new Response(stream, {
      status: 200,
      headers: {
        'content-type': format === 'csv' ? 'text/csv; charset=utf-8; header=present' : 'application/x-ndjson; charset=utf-8',
        'content-disposition': `attachment; filename="tollgate-audit-${day}.${format}"`,
        'cache-control': 'no-store',
        'x-request-id': c.get('requestId'),
      },
    });
  });
}
