import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

/**
 * Two projects: `unit` (test/unit: pure logic, in-process apps, real SQLite
 * files; no Redis, no browser, no child processes) and `integration`
 * (test/integration: real redis-server processes, proxy processes, the CLI,
 * Chromium, the SDK against a listening server). `npm test` runs both,
 * `npm run test:unit` the first.
 *
 * Unit files share their worker process (`isolate: false`): a fresh process
 * per file spent most of the unit project's time importing the same modules
 * again (docs/development.md has the measurements). They keep no state
 * between files: no module mocks, fake timers restored, no process.env
 * writes. Integration files stay one process each, since they start
 * servers, spawn children and own ports.
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
      { extends: true, test: { name: 'unit', isolate: false, include: ['test/unit/**/*.test.{ts,tsx}'] } },
      { extends: true, test: { name: 'integration', include: ['test/integration/**/*.test.{ts,tsx}'] } },
    ],
  },
});
