/**
 * Alert claims (and the reconciler's run claims) are stamped with Tollgate's
 * clock, and the alerts' periodic prune must read the same clock: pruned by
 * the wall clock, a claim made on an injected clock days behind it lapsed
 * early and its interval was run twice (a scheduled-reconciliation test saw
 * it whenever the prune fell between two runs). `close()` runs the last tick,
 * prune included.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config/index.js';
import { Metrics } from '../../../src/metrics.js';
import { buildTollgate } from '../../../src/tollgate.js';
import { createUpstream } from '../../../src/upstreams/pool.js';
import { openTempDatabase } from '../../support/db.js';
import { captureLogs } from '../../support/logs.js';

const DAY_MS = 86_400_000;
const db = openTempDatabase();

afterAll(() => db.remove());

it("keeps a claim that has not expired on Tollgate's clock, however far the wall clock is ahead", async () => {
  const configPath = join(db.dir, 'tollgate.json');
  writeFileSync(configPath, JSON.stringify({ alerts: { webhooks: [{ name: 'ops', url: 'http://127.0.0.1:9/hook', secretEnv: 'TG_HOOK_SECRET' }] } }));
  const config = loadConfig({ TOLLGATE_DB: db.path, TOLLGATE_CONFIG: configPath, TG_HOOK_SECRET: 'whsec-claims-clock-0123456789' });
  // Eight days behind the wall clock, as a test's hand-moved clock is.
  const now = Date.now() - 8 * DAY_MS;
  const tollgate = buildTollgate(config, {
    logger: captureLogs('info').logger,
    database: db.database,
    upstream: createUpstream(config.upstream),
    metrics: new Metrics({ defaultMetrics: false }),
    limitSnapshot: undefined,
    now: () => now,
  });
  await tollgate.start();
  const claims = tollgate.alerts!.claims;
  expect(await claims.claim('reconcile.run:86400000:1', now, now + 2 * DAY_MS)).toBe(true);
  expect(await claims.claim('expired', now - 2 * DAY_MS, now - DAY_MS)).toBe(true);
  await tollgate.close();

  const file = new Database(db.path, { readonly: true });
  const held = (file.prepare('SELECT id FROM alert_claims ORDER BY id').all() as { id: string }[]).map((row) => row.id);
  file.close();
  // The live claim stays (it would have lapsed by the wall clock); the one expired on Tollgate's clock goes.
  expect(held).toEqual(['reconcile.run:86400000:1']);
});
