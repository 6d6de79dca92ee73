import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    root: fileURLToPath(new URL('..', import.meta.url)),
    include: ['test/**/*.test.ts', 'test/**/*.test.tsx'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Tests start real servers, redis-server processes and Chromium; two
    // cores are the norm on our machines, so keep the parallelism modest.
    maxWorkers: 2,
  },
});
