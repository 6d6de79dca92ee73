/**
 * Which database holds what the nodes share, decided once from the
 * configuration (src/tollgate.ts for the proxy, src/cli/context.ts for the
 * CLI) and asked about only by the factories (src/storage/open-stores.ts). Every
 * node keeps its own SQLite file (the ledger's write-ahead outbox, its copy of
 * the keys); with PostgreSQL, what the nodes share (keys and tenants, spend,
 * tokens, reconciliations) is read and written there instead.
 */
import type { TollgateDatabase } from './sqlite/open.js';
import type { PgPool } from './postgres/open.js';

export type Backend =
  { readonly kind: 'sqlite'; readonly database: TollgateDatabase } | { readonly kind: 'postgres'; readonly database: TollgateDatabase; readonly pool: PgPool };

/**
 * Where what the nodes share is read and written (keys, tenants, spend, the
 * ledger's exports and sums, dashboard tokens, reconciliations): a Backend,
 * or PostgreSQL alone — the CLI on a replica opens no SQLite file.
 */
export type SharedBackend = Backend | { readonly kind: 'postgres'; readonly pool: PgPool };

/** Closes what a backend opened: the SQLite file, or the PostgreSQL pool. */
export async function closeBackend(backend: SharedBackend): Promise<void> {
  if (backend.kind === 'postgres') await backend.pool.end();
  else backend.database.close();
}
