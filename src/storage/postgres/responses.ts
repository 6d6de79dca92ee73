/**
 * Stored responses as every node shipped them to PostgreSQL's `responses`
 * (src/storage/postgres/shipper.ts): the SharedResponses of src/storage/responses.ts,
 * through which a response created through one node is retrieved, cancelled,
 * deleted or continued through any other.
 */
import { TollgateError } from '../../domain/errors.js';
import type { PgPool } from './open.js';
import type { SharedResponseRow, SharedResponses } from '../responses.js';

interface Row {
  readonly id: string;
  readonly key_id: string;
  readonly request_id: string;
  readonly created_at: number | string;
  readonly billed_tokens?: number | string | null;
  readonly item_of?: string | null;
}

function shared(row: Row): SharedResponseRow {
  return {
    id: row.id,
    keyId: row.key_id,
    requestId: row.request_id,
    createdAt: Number(row.created_at),
    billedTokens: row.billed_tokens === null || row.billed_tokens === undefined ? undefined : Number(row.billed_tokens),
    itemOf: row.item_of ?? undefined,
  };
}

export function pgSharedResponses(pool: PgPool): SharedResponses {
  const rows = async (text: string, values: unknown[]): Promise<Row[]> => {
    try {
      return (await pool.query<Row>(text, values)).rows;
    } catch (error) {
      throw new TollgateError('ledger_unavailable', 'Tollgate could not look this response up in its shared database; retry shortly.', { cause: error });
    }
  };
  return {
    response: async (id) =>
      (
        await rows('SELECT id, key_id, request_id, created_at, billed_tokens FROM responses WHERE id = $1 AND deleted_at IS NULL AND item_of IS NULL', [id])
      ).map(shared)[0],
    items: async (ids) =>
      (
        await rows('SELECT id, key_id, request_id, created_at, item_of FROM responses WHERE id = ANY($1) AND deleted_at IS NULL AND item_of IS NOT NULL', [
          [...ids],
        ])
      ).map(shared),
  };
}
