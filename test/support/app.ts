/**
 * The app in-process (for `app.request` tests) with its real parts: a temp
 * SQLite database, the key cache, the ledger writer, the estimator, and an
 * upstream client pointed at whatever the test gives.
 */
import { createApp } from '../../src/app.js';
import { localAdminOps } from '../../src/admin/ops.js';
import { builtinPriceTable } from '../../src/estimate/prices.js';
import { KeyCache } from '../../src/keys/cache.js';
import { KeyStore } from '../../src/keys/store.js';
import { LedgerWriter } from '../../src/ledger/writer.js';
import { SpendTracker } from '../../src/budgets/spend-tracker.js';
import { createLocalLimiter, type Limiter } from '../../src/limits/index.js';
import type { LimitSpec } from '../../src/limits/policy.js';
import type { Upstream } from '../../src/proxy/upstream.js';
import type { Policy } from '../../src/limits/policy.js';
import type { Logger } from '../../src/logger.js';
import { openTempDatabase, type TempDatabase } from './db.js';

export interface TestApp {
  readonly app: ReturnType<typeof createApp>;
  readonly db: TempDatabase;
  readonly store: KeyStore;
  readonly keys: KeyCache;
  readonly ledger: LedgerWriter;
  readonly lifecycle: { shuttingDown: boolean };
  readonly limiter: Limiter;
  readonly spend: SpendTracker;
  /** Issues a key and returns its secret. */
  issueKey(name: string, policy?: Policy, extra?: { tenant?: string; expiresAt?: number }): string;
  close(): void;
}

export function buildTestApp(options: {
  upstream: Upstream;
  logger: Logger;
  maxBodyBytes?: number;
  adminToken?: string;
  now?: () => number;
  /** Monotonic clock for the limiter's buckets (tests move it by hand). */
  limiterClock?: () => number;
  globalLimits?: readonly LimitSpec[];
}): TestApp {
  const db = openTempDatabase();
  const store = new KeyStore(db.database, options.now);
  const keys = new KeyCache(store, { pollMs: 20 });
  const spend = new SpendTracker(db.database);
  const ledger = new LedgerWriter(db.database, { spend });
  const limiter = createLocalLimiter(options.limiterClock ? { now: options.limiterClock } : {});
  const lifecycle = { shuttingDown: false };
  const app = createApp({
    upstream: options.upstream,
    logger: options.logger,
    maxBodyBytes: options.maxBodyBytes ?? 1024 * 1024,
    keys,
    ledger,
    estimate: { prices: builtinPriceTable, defaultMaxCompletionTokens: 1000 },
    admin: { ops: localAdminOps(db.database, { onChange: () => keys.refresh() }), token: options.adminToken },
    database: db.database,
    admission: { limiter, spend, globalLimits: options.globalLimits ?? [], storeName: 'local' },
    lifecycle,
    ...(options.now ? { now: options.now } : {}),
  });
  return {
    app,
    db,
    store,
    keys,
    ledger,
    lifecycle,
    limiter,
    spend,
    issueKey(name, policy = { limits: [] }, extra = {}) {
      return store.createKey({ name, policy, tenant: extra.tenant, expiresAt: extra.expiresAt ?? null }).key;
    },
    close() {
      keys.stop();
      ledger.close();
      db.remove();
    },
  };
}
