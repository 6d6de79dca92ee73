/**
 * The app in-process (for `app.request` tests), built by the same
 * composition root as the server (src/tollgate.ts) with its real parts — a
 * temp SQLite database, the key cache, the ledger writer, the estimator —
 * and an upstream client pointed at whatever the test gives.
 */
import { loadConfig } from '../../src/config/index.js';
import type { KeyCache } from '../../src/keys/cache.js';
import type { SqliteKeyStore as KeyStore } from '../../src/storage/sqlite/keys.js';
import type { LedgerWriter } from '../../src/storage/ledger.js';
import type { SpendTracker } from '../../src/budgets/spend-tracker.js';
import type { Limiter } from '../../src/limits/index.js';
import type { LimitSpec, Policy } from '../../src/domain/policy.js';
import type { Logger } from '../../src/logger.js';
import { Metrics } from '../../src/metrics.js';
import { buildTollgate, type Tollgate } from '../../src/tollgate.js';
import type { Upstream } from '../../src/upstreams/pool.js';
import { openTempDatabase, type TempDatabase } from './db.js';

export interface TestApp {
  readonly app: Tollgate['app'];
  readonly tollgate: Tollgate;
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
  /** More settings, as environment variables (e.g. TOLLGATE_METRICS_TOKEN, TOLLGATE_MAX_END_USERS). */
  env?: Readonly<Record<string, string>>;
}): TestApp {
  const db = openTempDatabase();
  const config = {
    ...loadConfig({
      TOLLGATE_DB: db.path,
      TOLLGATE_MAX_BODY: String(options.maxBodyBytes ?? 1024 * 1024),
      TOLLGATE_DEFAULT_MAX_TOKENS: '1000',
      TOLLGATE_KEY_REFRESH: '20ms',
      ...(options.adminToken === undefined ? {} : { TOLLGATE_ADMIN_TOKEN: options.adminToken }),
      ...options.env,
    }),
    globalLimits: options.globalLimits ?? [],
  };
  const tollgate = buildTollgate(config, {
    logger: options.logger,
    database: db.database,
    upstream: options.upstream,
    metrics: new Metrics({ defaultMetrics: false }),
    // In-process apps show the dashboard without the limiter's live view (the dashboard tests wire their own).
    limitSnapshot: undefined,
    ...(options.now ? { now: options.now } : {}),
    ...(options.limiterClock ? { limiterClock: options.limiterClock } : {}),
  });
  return {
    app: tollgate.app,
    tollgate,
    db,
    store: tollgate.keyStore,
    keys: tollgate.keys,
    ledger: tollgate.ledger,
    lifecycle: tollgate.lifecycle,
    limiter: tollgate.limiter.limiter,
    spend: tollgate.spend,
    issueKey(name, policy = { limits: [] }, extra = {}) {
      return tollgate.keyStore.createKey({ name, policy, tenant: extra.tenant, expiresAt: extra.expiresAt ?? null }).key;
    },
    close() {
      tollgate.keys.stop();
      void tollgate.readWorker?.close();
      tollgate.ledger.close();
      db.remove();
    },
  };
}
