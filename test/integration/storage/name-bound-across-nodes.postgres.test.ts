/**
 * The bound on a key's distinct end users and tags per day in PostgreSQL's
 * rollups, where every node's rows meet: each node bounds its own file, and
 * the shipper decides again against every node's names, so two nodes that
 * each stayed within the bound still make at most the bound plus `(other)`.
 */
import { afterEach, beforeEach, expect, it } from 'vitest';
import { PostgresKeyStore as PgKeyStore } from '../../../src/storage/postgres/keys.js';
import { KeySync } from '../../../src/storage/postgres/key-sync.js';
import { LedgerShipper } from '../../../src/storage/postgres/shipper.js';
import { SqliteLedgerWriter } from '../../../src/storage/sqlite/ledger-writer.js';
import type { PendingEntry } from '../../../src/storage/ledger.js';
import { openTempDatabase, type TempDatabase } from '../../support/db.js';
import { createTempPostgres, type TempPostgres } from '../../support/postgres.js';
import { byId, expectedNamedRollups, expectNamedRollupsEqualRows, NAMED_ROW_COLUMNS, namedRollupSql, type NamedRow } from '../../unit/storage/rollup-checks.js';

let pg: TempPostgres;
let nodes: TempDatabase[];

beforeEach(async () => {
  pg = await createTempPostgres();
  nodes = [openTempDatabase(), openTempDatabase()];
});
afterEach(async () => {
  for (const node of nodes) node.remove();
  await pg.drop();
});

const T0 = Date.parse('2026-11-21T12:00:00Z');
const BOUNDS = { endUsers: 5, tags: 4 };

function pending(keyId: string, id: string, i: number, extra: Partial<PendingEntry> = {}): PendingEntry {
  return {
    requestId: id,
    keyId,
    tenantId: null,
    createdAt: T0 + i,
    endpoint: 'chat',
    model: 'gpt-4o-mini',
    stream: false,
    estPromptTokens: 100,
    estCompletionTokens: 1000,
    estCostMicros: 615 + i,
    priceKnown: true,
    ...extra,
  };
}

async function expectPgNamedRollupsEqualRows(): Promise<void> {
  const rows = (await pg.pool.query<NamedRow>(`SELECT ${NAMED_ROW_COLUMNS} FROM ledger`)).rows;
  const want = expectedNamedRollups(rows);
  expect(byId((await pg.pool.query(namedRollupSql('rollups_end_users'))).rows), 'rollups_end_users').toEqual(want.user);
  expect(byId((await pg.pool.query(namedRollupSql('rollups_tags'))).rows), 'rollups_tags').toEqual(want.tag);
}

async function names(table: 'rollups_end_users' | 'rollups_tags'): Promise<string[]> {
  const column = table === 'rollups_end_users' ? 'end_user' : 'tag';
  return (await pg.pool.query<{ name: string }>(`SELECT ${column} AS name FROM ${table} ORDER BY 1`)).rows.map((row) => row.name);
}

it('holds the bound over every node’s names, and settlements shipped later move the rows their insert chose', async () => {
  const issued = await new PgKeyStore(pg.pool).createKey({ name: 'two-nodes', policy: { limits: [] } });
  const keyId = issued.view.id;
  for (const node of nodes) await new KeySync(pg.pool, node.database, { url: pg.url }).pull();
  const writers = nodes.map((node) => new SqliteLedgerWriter(node.database, { nameBounds: BOUNDS }));
  const shippers = nodes.map((node) => new LedgerShipper(pg.pool, node.database, { nameBounds: BOUNDS, batch: 3 }));
  // Each node sees (nearly) the bound of new names of its own, within its local bound: about 2× the bound in PostgreSQL.
  for (const [n, writer] of writers.entries()) {
    await Promise.all(
      Array.from({ length: BOUNDS.endUsers - n }, (_, i) =>
        writer.begin(pending(keyId, `n${n}-${i}`, i, { endUser: `node${n}-user-${i}`, tags: [`node${n}-tag-${i}`, 'shared'] })),
      ),
    );
  }
  // One budgeted end user of node 1, admitted by its node (its fifth): PostgreSQL keeps its row even past the bound (its budget reads it).
  await writers[1]!.begin(pending(keyId, 'exact', 9, { endUser: 'budgeted', exact: { endUser: true, tags: [] } }));
  // Refusals: a new end user's counts under (other), a budgeted tag's under the tag (on the node and in PostgreSQL alike).
  writers[0]!.reject({
    requestId: 'refused',
    keyId,
    tenantId: null,
    createdAt: T0 + 20,
    endpoint: 'chat',
    model: 'gpt-4o-mini',
    stream: false,
    status: 'rejected',
    httpStatus: 429,
    errorCode: 'insufficient_quota',
    reason: 'budget',
    estPromptTokens: 0,
    estCompletionTokens: 0,
    estCostMicros: 0,
    endUser: 'stranger',
    tags: ['budgeted-tag'],
    exact: { endUser: false, tags: ['budgeted-tag'] },
  });
  expect(writers[0]!.flush()).toBe(true);
  for (const node of nodes) expectNamedRollupsEqualRows(node.database.sqlite);
  // The nodes ship at once, in small batches: their transactions take turns on the key·day's count.
  await Promise.all(shippers.map((shipper) => shipper.drain()));
  // Then the settlements: they move the rows each insert chose in PostgreSQL.
  for (const [n, writer] of writers.entries()) {
    for (let i = 0; i < BOUNDS.endUsers - n; i += 1) {
      writer.complete({
        requestId: `n${n}-${i}`,
        completedAt: T0 + 100,
        status: 'ok',
        httpStatus: 200,
        promptTokens: 90,
        cachedTokens: 0,
        completionTokens: 10 + i,
        reasoningTokens: 0,
        costMicros: 20 + i,
        usageSource: 'reported',
        latencyMs: 100,
        ttftMs: null,
        upstreamRequestId: null,
        errorCode: null,
      });
    }
    expect(writer.flush()).toBe(true);
  }
  await Promise.all(shippers.map((shipper) => shipper.drain()));

  // The bound's names (the budgeted one among them, or kept beyond them), and (other) for the rest.
  const users = await names('rollups_end_users');
  const named = users.filter((name) => name !== '(other)');
  expect(users).toContain('(other)');
  expect(named).toContain('budgeted');
  expect(named.filter((name) => name !== 'budgeted')).toHaveLength(named.length === BOUNDS.endUsers + 1 ? BOUNDS.endUsers : BOUNDS.endUsers - 1);
  const tags = await names('rollups_tags');
  expect(tags.filter((name) => name !== 'budgeted-tag')).toHaveLength(BOUNDS.tags + 1);
  expect(tags).toContain('shared');
  expect(tags).toContain('budgeted-tag');
  expect(users).not.toContain('stranger');
  const counted = await pg.pool.query<{ end_users: number; tags: number }>('SELECT end_users, tags FROM rollup_names');
  expect(counted.rows).toEqual([{ end_users: named.length, tags: tags.length - 1 }]);
  // Every raw row keeps its own end user and tags in PostgreSQL too.
  expect((await pg.pool.query(`SELECT end_user, tags FROM ledger WHERE request_id = 'n1-3'`)).rows).toEqual([
    { end_user: 'node1-user-3', tags: 'node1-tag-3,shared' },
  ]);
  await expectPgNamedRollupsEqualRows();
  // The totals of the (other) rows are what they stand for: every request counted once across named rows and (other).
  const total = await pg.pool.query<{ requests: number; cost: number }>(
    'SELECT sum(requests)::bigint AS requests, sum(cost_micros)::bigint AS cost FROM rollups_end_users',
  );
  const ledgerTotal = await pg.pool.query<{ requests: number; cost: number }>(
    `SELECT count(*) FILTER (WHERE status NOT IN ('rejected', 'invalid_request'))::bigint AS requests, sum(CASE WHEN status = 'pending' THEN est_cost_micros ELSE cost_micros END)::bigint AS cost FROM ledger`,
  );
  expect(total.rows).toEqual(ledgerTotal.rows);
});
