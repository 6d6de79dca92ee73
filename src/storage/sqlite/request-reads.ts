/** A ledger row by its request id, from the node's file (src/storage/request-reads.ts). */
import { ENTRY_COLUMNS, toEntry, type LedgerEntry, type RequestReads } from '../request-reads.js';
import type { TollgateDatabase } from './open.js';

/** The row of `requestId` in `database` when `keyId` made it (the primary key, then the key compared). */
export function entryInFile(database: TollgateDatabase, keyId: string, requestId: string): LedgerEntry | undefined {
  const row = database.sqlite.prepare(`SELECT ${ENTRY_COLUMNS} FROM ledger WHERE request_id = ? AND key_id = ?`).get(requestId, keyId);
  return row === undefined ? undefined : toEntry(row as Record<string, unknown>);
}

export function sqliteRequestReads(database: TollgateDatabase): RequestReads {
  return {
    entryOf: (keyId, requestId) => Promise.resolve(entryInFile(database, keyId, requestId)),
  };
}
