/**
 * The node's ledger outbox (replicas): triggers on the SQLite file queue the
 * request id of every new ledger row and settlement, in the writer's own
 * transaction, for the shipper to move to PostgreSQL (postgres/shipper.ts);
 * owners of stored responses get a small outbox of their own.
 */
import type { TollgateDatabase } from './open.js';

/** Creates the local outbox and its triggers; the first time, queues every row already in the file. */
export function enableOutbox(database: TollgateDatabase): void {
  const sqlite = database.sqlite;
  sqlite
    .transaction(() => {
      sqlite.exec(`
        CREATE TABLE IF NOT EXISTS replica_state (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
        CREATE TABLE IF NOT EXISTS ledger_outbox (
          seq INTEGER PRIMARY KEY AUTOINCREMENT,
          request_id TEXT NOT NULL,
          -- 1 for a new row, 0 for a settlement: while a row's 1 waits, PostgreSQL has none of it (src/storage/postgres/spend-source.ts).
          is_new INTEGER NOT NULL,
          queued_at INTEGER NOT NULL);
        CREATE INDEX IF NOT EXISTS ledger_outbox_request ON ledger_outbox (request_id);
        CREATE TRIGGER IF NOT EXISTS ledger_outbox_insert AFTER INSERT ON ledger BEGIN
          INSERT INTO ledger_outbox (request_id, is_new, queued_at) VALUES (NEW.request_id, 1, CAST(unixepoch('subsec') * 1000 AS INTEGER));
        END;
        CREATE TRIGGER IF NOT EXISTS ledger_outbox_settle AFTER UPDATE OF status ON ledger WHEN NEW.status <> OLD.status BEGIN
          INSERT INTO ledger_outbox (request_id, is_new, queued_at) VALUES (NEW.request_id, 0, CAST(unixepoch('subsec') * 1000 AS INTEGER));
        END;`);
      const enabled = sqlite.prepare(`SELECT value FROM replica_state WHERE name = 'outbox_enabled'`).get();
      if (enabled === undefined) {
        sqlite.exec(
          `INSERT INTO ledger_outbox (request_id, is_new, queued_at) SELECT request_id, 1, CAST(unixepoch('subsec') * 1000 AS INTEGER) FROM ledger ORDER BY created_at`,
        );
        sqlite.exec(`INSERT INTO replica_state (name, value) VALUES ('outbox_enabled', 1)`);
      }
      // Who owns each stored response, and its deletion, for every node (src/storage/sqlite/responses.ts).
      sqlite.exec(`
        CREATE TABLE IF NOT EXISTS responses_outbox (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL);
        CREATE TRIGGER IF NOT EXISTS responses_outbox_insert AFTER INSERT ON responses BEGIN
          INSERT INTO responses_outbox (id) VALUES (NEW.id);
        END;
        CREATE TRIGGER IF NOT EXISTS responses_outbox_delete AFTER UPDATE OF deleted_at ON responses WHEN NEW.deleted_at IS NOT OLD.deleted_at BEGIN
          INSERT INTO responses_outbox (id) VALUES (NEW.id);
        END;
        CREATE TRIGGER IF NOT EXISTS responses_outbox_billed AFTER UPDATE OF billed_tokens ON responses WHEN NEW.billed_tokens IS NOT OLD.billed_tokens BEGIN
          INSERT INTO responses_outbox (id) VALUES (NEW.id);
        END;`);
      // Its own flag: a node whose ledger outbox predates this one queues its responses too.
      if (sqlite.prepare(`SELECT value FROM replica_state WHERE name = 'responses_outbox_enabled'`).get() === undefined) {
        sqlite.exec(`INSERT INTO responses_outbox (id) SELECT id FROM responses ORDER BY created_at`);
        sqlite.exec(`INSERT INTO replica_state (name, value) VALUES ('responses_outbox_enabled', 1)`);
      }
    })
    .immediate();
}

/**
 * A node that is no longer a replica stops queueing (the triggers go). Should
 * it become one again, it queues its whole ledger again: PostgreSQL keeps
 * what it has, so only what it lacks counts.
 */
export function disableOutbox(database: TollgateDatabase): void {
  const sqlite = database.sqlite;
  const exists = sqlite.prepare(`SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'ledger_outbox'`).get();
  if (exists === undefined) return;
  sqlite
    .transaction(() => {
      sqlite.exec(`DROP TRIGGER IF EXISTS ledger_outbox_insert; DROP TRIGGER IF EXISTS ledger_outbox_settle; DELETE FROM ledger_outbox;
        DELETE FROM replica_state WHERE name = 'outbox_enabled';
        DROP TRIGGER IF EXISTS responses_outbox_insert; DROP TRIGGER IF EXISTS responses_outbox_delete; DROP TRIGGER IF EXISTS responses_outbox_billed;
        DROP TABLE IF EXISTS responses_outbox;
        DELETE FROM replica_state WHERE name = 'responses_outbox_enabled';`);
    })
    .immediate();
}
