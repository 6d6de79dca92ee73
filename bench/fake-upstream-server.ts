/**
 * The fake upstream as its own process, so the benchmark's upstream does not
 * share an event loop with the proxy or the load generator.
 * Usage: tsx bench/fake-upstream-server.ts [apiKey]   (prints {"url": …})
 */
import { startFakeUpstream } from '../src/demo/fake-upstream/index.js';

const apiKey = process.argv[2];
const fake = await startFakeUpstream(apiKey === undefined ? {} : { apiKey });
process.stdout.write(`${JSON.stringify({ url: fake.url })}\n`);
process.on('SIGTERM', () => {
  void fake.close().then(() => process.exit(0));
});
