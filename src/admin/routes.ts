/**
 * The admin HTTP API under /admin/api: the same operations as the CLI, behind
 * `Authorization: Bearer $TOLLGATE_ADMIN_TOKEN`. With no token configured the
 * whole API answers 404 `admin_disabled`.
 */
import { Hono, type Context } from 'hono';
import { createHash, timingSafeEqual } from 'node:crypto';
import type { z } from 'zod';
import { TollgateError } from '../domain/errors.js';
import { parseSince } from '../reports/spend.js';
import { SPEND_GROUPINGS, type SpendGrouping } from '../storage/spend-reads.js';
import { parseExportRange, spendCsvRecords, spendReportCsv, textStream, type LedgerExportFormat, type LedgerExporter } from '../reports/export.js';
import { parseSpendLimit } from '../storage/spend-cursor.js';
import type { Policy } from '../domain/policy.js';
import type { AdminOps } from './ops.js';
import { createKeyBody, createTenantBody, resumedOwner, resumeKeyBody, updateKeyBody, updateTenantBody } from './wire.js';
import type { AppEnv } from '../app-env.js';
import { bearerOf, checkPresentedSecret, ownSecretGuard, tooManyAttempts, type SecretGuard } from '../http/secret-check.js';

export interface AdminRouteDeps {
  readonly ops: AdminOps;
  readonly adminToken: string | undefined;
  readonly now?: () => number;
  /** Extra ways in besides the bearer token (the dashboard's session cookie). */
  readonly isAuthorized?: (c: Context<AppEnv>) => boolean;
  /** What the ledger exports read (the node's SQLite file, or PostgreSQL on a replica); no ledger exports without it. */
  readonly exportLedger?: LedgerExporter | undefined;
  /** The per-address brake on guessing the bearer token, shared with the app's other surfaces (a guard of its own without). */
  readonly guard?: SecretGuard | undefined;
}

function digest(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}

/** Constant-time comparison of a presented token with the configured one. */
export function tokenMatches(presented: string, expected: string): boolean {
  return timingSafeEqual(digest(presented), digest(expected));
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
    const bearer = bearerOf(c);
    if (bearer !== undefined) {
      // Compared only while the client's address has checks left (src/http/secret-throttle.ts).
      const outcome = await checkPresentedSecret(c, guard, () => (tokenMatches(bearer, adminToken) ? true : undefined));
      if (outcome.kind === 'throttled') throw tooManyAttempts(outcome.retryAfterMs);
      if (outcome.kind === 'right') return next();
    }
    if (!(deps.isAuthorized?.(c) ?? false)) {
      throw new TollgateError('invalid_admin_token', 'A valid admin token is required (Authorization: Bearer <TOLLGATE_ADMIN_TOKEN>).');
    }
    await next();
  });

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

  api.get('/keys', async (c) =>
    c.json({ data: await deps.ops.listKeys({ tenant: c.req.query('tenant'), includeRevoked: c.req.query('all') === '1' || c.req.query('all') === 'true' }) }),
  );
  api.post('/keys', async (c) => {
    const input = await body(c, createKeyBody);
    const issued = await deps.ops.createKey({ ...input, policy: input.policy as Policy });
    return c.json({ key: issued.key, ...issued.view }, 201);
  });
  api.get('/keys/:ref', async (c) => c.json(await deps.ops.getKey(id(c))));
  api.patch('/keys/:ref', async (c) => c.json(await deps.ops.updateKey(id(c), await body(c, updateKeyBody))));
  api.post('/keys/:ref/revoke', async (c) => c.json(await deps.ops.revokeKey(id(c))));
  api.post('/keys/:ref/resume', async (c) => {
    // No body resumes the whole key (and everything paused on it).
    const owner = (await c.req.raw.clone().text()).trim() === '' ? undefined : resumedOwner(await body(c, resumeKeyBody));
    return c.json(await deps.ops.resumeKey(id(c), owner));
  });
  api.post('/keys/:ref/rotate', async (c) => {
    const issued = await deps.ops.rotateKey(id(c));
    return c.json({ key: issued.key, ...issued.view });
  });

  api.get('/tenants', async (c) => c.json({ data: await deps.ops.listTenants() }));
  api.post('/tenants', async (c) => {
    const input = await body(c, createTenantBody);
    return c.json(await deps.ops.createTenant(input.name, input), 201);
  });
  api.get('/tenants/:ref', async (c) => c.json(await deps.ops.getTenant(id(c))));
  api.patch('/tenants/:ref', async (c) => c.json(await deps.ops.updateTenant(id(c), await body(c, updateTenantBody))));

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
  api.get('/spend', async (c) => c.json(await deps.ops.spend(spendRequest(c))));
  // The whole report as one CSV file, read page by page (each page a bounded read), streamed as it is read.
  api.get('/spend.csv', async (c) => {
    const request = spendRequest(c);
    const first = await deps.ops.spend(request);
    const ops = deps.ops;
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
    const keyId = keyRef === undefined ? undefined : (await deps.ops.getKey(keyRef)).id;
    const tenantId = tenantRef === undefined ? undefined : (await deps.ops.getTenant(tenantRef)).id;
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
