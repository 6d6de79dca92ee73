/**
 * Dashboard tokens in PostgreSQL (replicas, TOLLGATE_DATABASE_URL): the same
 * store as the SQLite one (src/storage/sqlite/tenant-tokens.ts), so a token issued by the CLI or
 * by any node's admin API logs in on every node, and a revocation ends its
 * sessions on every node at their next request. Nothing is cached: a session
 * reads its token once per dashboard request, by primary key, which is cheap
 * and off the proxy's request path.
 *
 * PostgreSQL unreachable: 503 `ledger_unavailable`, never the node's own file,
 * whose tokens would be stale (a revoked token that still works there).
 */
import type pg from 'pg';
import { isPgUnreachable, type PgPool } from './open.js';
import { pgUnavailable } from '../../domain/errors.js';
import type { DashboardTokenStore } from '../tenant-tokens.js';
import {
  activeViewerOf,
  hashDashboardToken,
  issuedView,
  newTokenRecord,
  noSuchTenant,
  onlyToken,
  tokenChange,
  tokenView,
  type DashboardTokenRow,
} from '../token-rules.js';
import { SYSTEM_ACTOR } from '../../domain/admins.js';
import { appendAudit } from './audit.js';

const SELECT = `SELECT d.id, d.tenant_id AS "tenantId", t.name AS tenant, d.prefix, d.label, d.created_at AS "createdAt",
  d.expires_at AS "expiresAt", d.revoked_at AS "revokedAt" FROM dashboard_tokens d JOIN tenants t ON t.id = d.tenant_id`;

/** Dashboard tokens in PostgreSQL. */
export function pgDashboardTokens(pool: PgPool): DashboardTokenStore {
  const query = async <R extends object>(text: string, values: readonly unknown[]): Promise<R[]> => {
    try {
      return (await pool.query<R>(text, values as unknown[])).rows;
    } catch (error) {
      // The cause goes to the log (app.onError), never to the answer.
      throw pgUnavailable('Dashboard tokens are kept in', error);
    }
  };
  /** One transaction: the change and its audit row commit together. */
  const write = async <T>(fn: (client: pg.PoolClient) => Promise<T>): Promise<T> => {
    let client: pg.PoolClient;
    try {
      client = await pool.connect();
    } catch (error) {
      throw pgUnavailable('Dashboard tokens are kept in', error);
    }
    try {
      await client.query('BEGIN');
      const result = await fn(client);
      await client.query('COMMIT');
      return result;
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw isPgUnreachable(error) ? pgUnavailable('Dashboard tokens are kept in', error) : error;
    } finally {
      client.release();
    }
  };
  const tenantOf = async (ref: string): Promise<{ id: string; name: string }> => {
    const [row] = await query<{ id: string; name: string }>('SELECT id, name FROM tenants WHERE id = $1 OR name = $1', [ref]);
    if (row === undefined) throw noSuchTenant(ref);
    return row;
  };
  const byRef = async (ref: string): Promise<DashboardTokenRow> =>
    onlyToken(await query<DashboardTokenRow>(`${SELECT} WHERE d.id = $1 OR d.prefix = $1`, [ref]), ref);
  return {
    create: async (input, now, actor = SYSTEM_ACTOR) => {
      const tenant = await tenantOf(input.tenant);
      const { token, record } = newTokenRecord(input, now);
      const view = issuedView(record, tenant, now);
      await write(async (client) => {
        await client.query(
          'INSERT INTO dashboard_tokens (id, tenant_id, token_hash, prefix, label, created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7)',
          [record.id, tenant.id, record.tokenHash, record.prefix, record.label, now, record.expiresAt],
        );
        await appendAudit(client, tokenChange(actor, 'tenant-token.create', null, view), now);
      });
      return { token, view };
    },
    list: async (options, now) => {
      const rows =
        options.tenant === undefined
          ? await query<DashboardTokenRow>(`${SELECT} ORDER BY d.created_at DESC, d.id`, [])
          : await query<DashboardTokenRow>(`${SELECT} WHERE d.tenant_id = $1 ORDER BY d.created_at DESC, d.id`, [(await tenantOf(options.tenant)).id]);
      return rows.map((row) => tokenView(row, now));
    },
    revoke: async (ref, now, actor = SYSTEM_ACTOR) => {
      const token = await byRef(ref);
      return write(async (client) => {
        // Only the revocation that sets the time is a change (and audited); a second one finds it set.
        const [revoked] = (
          await client.query<DashboardTokenRow>(
            `UPDATE dashboard_tokens SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL
             RETURNING id, tenant_id AS "tenantId", $3::text AS tenant, prefix, label, created_at AS "createdAt", expires_at AS "expiresAt", revoked_at AS "revokedAt"`,
            [now, token.id, token.tenant],
          )
        ).rows;
        if (revoked === undefined) return tokenView((await client.query<DashboardTokenRow>(`${SELECT} WHERE d.id = $1`, [token.id])).rows[0] ?? token, now);
        const after = tokenView(revoked, now);
        await appendAudit(client, tokenChange(actor, 'tenant-token.revoke', tokenView(token, now), after), now);
        return after;
      });
    },
    activeViewer: async (by, now) => {
      const [row] =
        'secret' in by
          ? await query<DashboardTokenRow>(`${SELECT} WHERE d.token_hash = $1`, [hashDashboardToken(by.secret)])
          : await query<DashboardTokenRow>(`${SELECT} WHERE d.id = $1`, [by.tokenId]);
      return activeViewerOf(row, now);
    },
  };
}
