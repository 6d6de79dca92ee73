/**
 * `tollgate serve --workers 2` with tracing on: each worker builds its own tracer and exports its
 * own spans (told apart by the resource's `process.pid`), and SIGTERM's drain flushes what each
 * had queued before it exits — no span waits for the export timer.
 */
import { rmSync } from 'node:fs';
import { dirname } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { SqliteKeyStore as KeyStore } from '../../../src/storage/sqlite/keys.js';
import { openDatabase } from '../../../src/storage/sqlite/open.js';
import { tempDatabasePath } from '../../support/db.js';
import { startFakeUpstream, type FakeUpstream } from '../../support/fake-upstream.js';
import { startOtlpReceiver, type OtlpReceiver } from '../../support/otlp-receiver.js';
import { spawnTollgate, type TollgateProcess } from '../../support/process.js';
import { waitFor } from '../../support/wait.js';

let fake: FakeUpstream;
let receiver: OtlpReceiver;
let proc: TollgateProcess;
const { path: db } = tempDatabasePath();

beforeAll(async () => {
  fake = await startFakeUpstream({ apiKey: 'sk-traced-workers' });
  receiver = await startOtlpReceiver();
}, 30_000);

afterAll(async () => {
  if (proc !== undefined && proc.child.exitCode === null && proc.child.signalCode === null) proc.child.kill('SIGKILL');
  await Promise.all([fake.close(), receiver.close()]);
  rmSync(dirname(db), { recursive: true, force: true });
});

it('exports every worker’s spans, flushed when SIGTERM drains them', async () => {
  const setup = openDatabase(db);
  const key = new KeyStore(setup).createKey({ name: 'traced', policy: { limits: [] } }).key;
  setup.close();
  proc = spawnTollgate(['serve', '--workers', '2'], {
    TOLLGATE_PORT: '0',
    TOLLGATE_UPSTREAM_URL: fake.url,
    TOLLGATE_UPSTREAM_KEY: 'sk-traced-workers',
    TOLLGATE_DB: db,
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
  });
  await waitFor(
    async () => {
      const exited = await Promise.race([proc.exited, Promise.resolve(undefined)]);
      if (exited !== undefined) throw new Error(`serve --workers 2 exited (${String(exited)}):\n${proc.stderr.join('\n')}`);
      return proc.logs.some((line) => line.msg === 'tollgate workers listening');
    },
    'both workers to listen',
    // Three tsx starts: on a loaded 2-core machine one alone has taken 5 s and more.
    120_000,
  );
  const url = String(proc.logs.find((line) => line.msg === 'tollgate workers listening')!.url);
  const workers = new Set(proc.logs.filter((line) => line.msg === 'worker listening').map((line) => Number(line.pid)));
  expect(workers.size).toBe(2);
  // New connections are dealt to the workers in turn: until each has served some.
  const servedBy = () => new Set(proc.logs.filter((line) => line.msg === 'request').map((line) => Number(line.pid)));
  for (let i = 0; i < 40 && servedBy().size < 2; i += 1) {
    const res = await fetch(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', connection: 'close' },
      body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: `hello ${i}` }] }),
    });
    expect(res.status).toBe(200);
    await res.text();
    await waitFor(() => proc.logs.filter((line) => line.msg === 'request').length > i, 'the request log line');
  }
  const requests = proc.logs.filter((line) => line.msg === 'request').length;
  expect(servedBy()).toEqual(workers);

  proc.child.kill('SIGTERM');
  expect(await proc.exited).toBe(0);
  const servers = receiver.spans.filter((span) => span.kind === 2);
  expect(servers).toHaveLength(requests);
  expect(new Set(servers.map((span) => span.resource['process.pid']))).toEqual(workers);
}, 180_000);
