/**
 * The fake upstream as its own process, so the benchmark's upstream does not
 * share an event loop with the proxy or the load generator.
 * Usage: tsx bench/fake-upstream-server.ts [apiKey]   (prints {"url": …})
 */
import { startFakeUpstream } from '../src/demo/fake-upstream/index.js';

const apiKey = process.argv[2];
// No records: nothing reads them in this process, and the 100,000+ bodies a bench run kept
// made the fake's collections long enough to show in every proxy's tail (docs/performance.md).
const fake = await startFakeUpstream({ maxRecords: 0, ...(apiKey === undefined ? {} : { apiKey }) });
process.stdout.write(`${JSON.stringify({ url: fake.url })}\n`);
process.on('SIGTERM', () => {
  void fake.close().then(() => process.exit(0));
});
