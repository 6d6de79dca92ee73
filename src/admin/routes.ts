/**
 * The admin HTTP API under /admin/api: the same operations as the CLI, behind
 * `Authorization: Bearer <token>` — TOLLGATE_ADMIN_TOKEN (the bootstrap admin)
 * or a named admin's token — or, for reads, a dashboard session. Every route
 * needs a role (docs/admins.md): reads any, writes operator, /admins admin;
 * too little is 403 `insufficient_role`. With no TOLLGATE_ADMIN_TOKEN the
 * whole API answers 404 `admin_disabled` (it also keys the dashboard's
 * session signatures).
 */
import { Hono, type Context } from 'hono';
import type { z } from 'zod';
import { permissionOf, type Actor } from '../domain/admins.js';
import type { AdminStore } from '../storage/admins.js';
import { TollgateError } from '../domain/errors.js';
import { parseSince } from '../reports/spend.js';
import { SPEND_GROUPINGS, type SpendGrouping } from '../storage/spend-reads.js';
import { parseExportRange, spendCsvRecords, spendReportCsv, textStream, type LedgerExportFormat, type LedgerExporter } from '../reports/export.js';
import { parseSpendLimit } from '../storage/spend-cursor.js';
import type { Policy } from '../domain/policy.js';
import { actorOf, requireRole, type ActingAdminOps, type AdminOps } from './ops.js';
import { bearerActor } from './identify.js';
import { registerAccessRoutes } from './access-routes.js';
import { createKeyBody, createTenantBody, resumedOwner, resumeKeyBody, updateKeyBody, updateTenantBody } from './wire.js';
import type { AppEnv } from '../app-env.js';
import { ownSecretGuard, type SecretGuard } from '../http/secret-check.js';

export { tokenMatches } from './identify.js';

export interface AdminRouteDeps {
  /** The operations, taken for each request's actor. */
  readonly ops: ActingAdminOps;
  readonly adminToken: string | undefined;
  /** Named admins (their tokens open the API too); only the bootstrap token without. */
  readonly admins?: AdminStore | undefined;
  readonly now?: () => number;
  /** The actor of a request's dashboard session, if it carries one: it opens the API's reads (never its writes: no cross-site form can use it). */
  readonly sessionActor?: (c: Context<AppEnv>) => Promise<Actor | undefined>;
  /** Who an already checked request is (a tenant's scoped reads, src/dashboard/tenant-access.ts): no token is asked. */
  readonly presetActor?: Actor;
  /** What the ledger exports read (the node's SQLite file, or PostgreSQL on a replica); no ledger exports without it. */
  readonly exportLedger?: LedgerExporter | undefined;
  /** The per-address brake on guessing the bearer token, shared with the app's other surfaces (a guard of its own without). */
  readonly guard?: SecretGuard | undefined;
}

export function createAdminRoutes(deps: AdminRouteDeps): Hono<AppEnv> {
  const api = new Hono<AppEnv>();
  const now = deps.now ?? Date.now;
  const guard = deps.guard ?? ownSecretGuard({ now });

  api.use('*', async function requireAdmin(c, next) {
    const adminToken = deps.adminToken;
    if (adminToken === undefined) {
      throw new TollgateError('admin_disabled', 'The admin API is disabled: start Tollgate with TOLLGATE_ADMIN_TOKEN set.');
    }
    const reading = c.req.method === 'GET' || c.req.method === 'HEAD';
    const actor = deps.presetActor ?? (await bearerActor(c, adminToken, deps.admins, guard)) ?? (reading ? await deps.sessionActor?.(c) : undefined);
    if (actor === undefined) {
      throw new TollgateError('invalid_admin_token', 'A valid admin token is required (Authorization: Bearer <TOLLGATE_ADMIN_TOKEN or a named admin token>).');
    }
    requireRole(actor, permissionOf(c.req.method, c.req.path.replace(/^.*?\/admin\/api/, '')));
    c.set('actor', actor);
    await next();
  });
  /** The operations as the request's actor (set by requireAdmin). */
  const opsOf = (c: Context<AppEnv>): AdminOps => deps.ops.as(actorOf(c));

  const body = async <S extends z.ZodType>(c: Context<AppEnv>, schema: S): Promise<z.output<S>> => {
    let json: unknown;
    try {
      json = await c.req.json();
    } catch {
      throw new TollgateError('invalid_json', 'The request body is not valid JSON.');
    }
    const parsed = schema.safeParse(json);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      const param = issue?.path.join('.') ?? null;
      throw new TollgateError('invalid_request', `${param ? `${param}: ` : ''}${issue?.message ?? 'invalid body'}`, { param });
    }
    return parsed.data;
  };
  const id = (c: Context<AppEnv>): string => c.req.param('ref') ?? '';
  registerAccessRoutes(api, { opsOf, body, now });

  api.get('/keys', async (c) =>
    c.json({ data: await opsOf(c).listKeys({ tenant: c.req.query('tenant'), includeRevoked: c.req.query('all') === '1' || c.req.query('all') === 'true' }) }),
  );
  api.post('/keys', async (c) => {
    const input = await body(c, createKeyBody);
    const issued = await opsOf(c).createKey({ ...input, policy: input.policy as Policy });
    return c.json({ key: issued.key, ...issued.view }, 201);
  });
  api.get('/keys/:ref', async (c) => c.json(await opsOf(c).getKey(id(c))));
  api.patch('/keys/:ref', async (c) => c.json(await opsOf(c).updateKey(id(c), await body(c, updateKeyBody))));
  api.post('/keys/:ref/revoke', async (c) => c.json(await opsOf(c).revokeKey(id(c))));
  api.post('/keys/:ref/resume', async (c) => {
    // No body resumes the whole key (and everything paused on it).
    const owner = (await c.req.raw.clone().text()).trim() === '' ? undefined : resumedOwner(await body(c, resumeKeyBody));
    return c.json(await opsOf(c).resumeKey(id(c), owner));
  });
  api.post('/keys/:ref/suspend', async (c) => c.json(await opsOf(c).suspendKey(id(c))));
  api.post('/keys/:ref/unsuspend', async (c) => c.json(await opsOf(c).unsuspendKey(id(c))));
  api.post('/keys/:ref/rotate', async (c) => {
    const issued = await opsOf(c).rotateKey(id(c));
    return c.json({ key: issued.key, ...issued.view });
  });

  api.get('/tenants', async (c) => c.json({ data: await opsOf(c).listTenants() }));
  api.post('/tenants', async (c) => {
    const input = await body(c, createTenantBody);
    return c.json(await opsOf(c).createTenant(input.name, input), 201);
  });
  api.get('/tenants/:ref', async (c) => c.json(await opsOf(c).getTenant(id(c))));
  api.patch('/tenants/:ref', async (c) => c.json(await opsOf(c).updateTenant(id(c), await body(c, updateTenantBody))));

  const spendRequest = (c: Context<AppEnv>) => {
    const by = (c.req.query('by') ?? 'day') as SpendGrouping;
    if (!SPEND_GROUPINGS.includes(by)) throw new TollgateError('invalid_value', `by must be one of ${SPEND_GROUPINGS.join(', ')}`, { param: 'by' });
    let since: string;
    let until: string | undefined;
    try {
      since = parseSince(c.req.query('since') ?? '7d', now());
      until = c.req.query('until') === undefined ? undefined : parseSince(c.req.query('until')!, now());
    } catch (error) {
      throw new TollgateError('invalid_value', (error as Error).message, { param: 'since' });
    }
    // One page of rows (README, "Admin API"): at most `limit`, from `cursor` on.
    const cursor = c.req.query('cursor');
    return { key: c.req.query('key'), tenant: c.req.query('tenant'), since, until, by, limit: parseSpendLimit(c.req.query('limit')), cursor };
  };
  api.get('/spend', async (c) => c.json(await opsOf(c).spend(spendRequest(c))));
  // The whole report as one CSV file, read page by page (each page a bounded read), streamed as it is read.
  api.get('/spend.csv', async (c) => {
    const request = spendRequest(c);
    const first = await opsOf(c).spend(request);
    const ops = opsOf(c);
    async function* pages(): AsyncGenerator<string, void, undefined> {
      yield spendReportCsv(first);
      let report = first;
      while (report.hasMore && report.nextCursor !== null) {
        report = await ops.spend({ ...request, cursor: report.nextCursor });
        yield spendCsvRecords(report);
      }
    }
    return new Response(await textStream(pages()), {
      status: 200,
      headers: {
        'content-type': 'text/csv; charset=utf-8; header=present',
        'content-disposition': `attachment; filename="tollgate-spend-${first.by}-${first.since}-${first.until}.csv"`,
        'x-request-id': c.get('requestId'),
      },
    });
  });

  const ledgerExport = async (c: Context<AppEnv>, format: LedgerExportFormat) => {
    if (deps.exportLedger === undefined) throw new TollgateError('unknown_url', `Invalid URL (${c.req.method} ${c.req.path}).`);
    let range: { sinceMs: number; untilMs: number; since: string; until: string };
    try {
      range = parseExportRange(c.req.query('since') ?? '7d', c.req.query('until'), now());
    } catch (error) {
      throw new TollgateError('invalid_value', (error as Error).message, { param: 'since' });
    }
    const keyRef = c.req.query('key');
    const tenantRef = c.req.query('tenant');
    // Unknown references fail here, before the 200 and the first byte.
    const keyId = keyRef === undefined ? undefined : (await opsOf(c).getKey(keyRef)).id;
    const tenantId = tenantRef === undefined ? undefined : (await opsOf(c).getTenant(tenantRef)).id;
    // The first chunk is read here too: an export that cannot start is an error response, not a 200 cut short.
    const body = await textStream(deps.exportLedger({ sinceMs: range.sinceMs, untilMs: range.untilMs, keyId, tenantId }, format));
    return new Response(body, {
      status: 200,
      headers: {
        'content-type': format === 'csv' ? 'text/csv; charset=utf-8; header=present' : 'application/x-ndjson; charset=utf-8',
        'content-disposition': `attachment; filename="tollgate-ledger-${range.since}-${range.until}.${format}"`,
        'x-request-id': c.get('requestId'),
      },
    });
  };
  api.get('/ledger.csv', (c) => ledgerExport(c, 'csv'));
  api.get('/ledger.ndjson', (c) => ledgerExport(c, 'ndjson'));

  return api;
}
