/**
 * One write of an operator's store on PostgreSQL: a transaction that first
 * takes the store's advisory lock (so checks such as "the name is free" hold
 * against a concurrent write from another node), and "PostgreSQL did not
 * answer" turned into the 503 every store gives.
 */
import type pg from 'pg';
import { pgUnavailable } from '../../domain/errors.js';
import { isPgUnreachable, type PgPool } from './open.js';

/** `fn`'s answer, or a 503 naming what lives in PostgreSQL (`what`: "Keys and tenants live in"); the driver's error stays the cause. */
export async function answeredByPg<T>(what: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (error) {
    if (!isPgUnreachable(error)) throw error;
    throw pgUnavailable(what, error);
  }
}

/** Runs `fn` in a transaction holding advisory lock `lock` (a bigint as text), committed or rolled back whole. */
export function lockedWrite<T>(pool: PgPool, lock: string, what: string, fn: (client: Pick<pg.PoolClient, 'query'>) => Promise<T>): Promise<T> {
  return answeredByPg(what, async () => {
    const client = await pool.connect();
    try {
      await client.query('BEGIN');
      await client.query('SELECT pg_advisory_xact_lock($1::bigint)', [lock]);
      const result = await fn(client);
      await client.query('COMMIT');
      return result;
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    } finally {
      client.release();
    }
  });
}
