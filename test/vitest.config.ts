import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

/**
 * Two projects: `unit` (test/unit: pure logic, in-process apps, real SQLite
 * files; no Redis, no browser, no child processes) and `integration`
 * (test/integration: real redis-server processes, proxy processes, the CLI,
 * Chromium, the SDK against a listening server). `npm test` runs both,
 * `npm run test:unit` the first.
 */
export default defineConfig({
  test: {
    root: fileURLToPath(new URL('..', import.meta.url)),
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Tests start real servers, redis-server processes and Chromium; two
    // cores are the norm on our machines, so keep the parallelism modest.
    maxWorkers: 2,
    projects: [
      { extends: true, test: { name: 'unit', include: ['test/unit/**/*.test.{ts,tsx}'] } },
      { extends: true, test: { name: 'integration', include: ['test/integration/**/*.test.{ts,tsx}'] } },
    ],
  },
});
