/** A ledger row by its request id: the node's own file first, then every node's shipped rows (src/storage/request-reads.ts). */
import { ENTRY_COLUMNS, toEntry, type RequestReads } from '../request-reads.js';
import { entryInFile } from '../sqlite/request-reads.js';
import type { TollgateDatabase } from '../sqlite/open.js';
import type { PgPool } from './open.js';

export function postgresRequestReads(pool: PgPool, file: TollgateDatabase | undefined): RequestReads {
  return {
    async entryOf(keyId, requestId) {
      const local = file === undefined ? undefined : entryInFile(file, keyId, requestId);
      if (local !== undefined) return local;
      const { rows } = await pool.query(`SELECT ${ENTRY_COLUMNS} FROM ledger WHERE request_id = $1 AND key_id = $2`, [requestId, keyId]);
      const row = rows[0] as Record<string, unknown> | undefined;
      return row === undefined ? undefined : toEntry(row);
    },
  };
}
