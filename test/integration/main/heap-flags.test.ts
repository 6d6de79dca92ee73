/**
 * A running `tollgate serve` has V8's allocation-site pretenuring off (src/heap-flags.ts): a
 * request's objects are born young and die in scavenges instead of filling the old generation.
 * What it saves is measured in bench/ (docs/performance.md, "Request objects born old"); here,
 * with V8's own test hook, that the flag the server sets at run time holds, and that an operator
 * who starts node with the flag keeps it (which also shows the probe sees pretenuring).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rmSync } from 'node:fs';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { tempDatabasePath } from '../../support/db.js';
import { startFakeUpstream, type FakeUpstream } from '../../support/fake-upstream.js';
import { spawnServe, type TollgateProcess } from '../../support/process.js';
import { waitFor } from '../../support/wait.js';

const PROBE = fileURLToPath(new URL('../../fixtures/v8/pretenure-probe.mjs', import.meta.url));
// A new space at its largest from the start: V8 tenures a site only after a scavenge of a full-size new space.
const PROBE_ARGS = ['--allow-natives-syntax', '--expose-gc', '--min-semi-space-size=1', '--max-semi-space-size=1', '--import', PROBE];
let fake: FakeUpstream;
const { path: db } = tempDatabasePath();
const running: TollgateProcess[] = [];

beforeAll(async () => {
  fake = await startFakeUpstream({ apiKey: 'sk-heap' });
});

afterAll(async () => {
  for (const proc of running) if (proc.child.exitCode === null) proc.child.kill('SIGKILL');
  await fake.close();
  rmSync(dirname(db), { recursive: true, force: true });
});

/** Starts `tollgate serve` with the probe and `nodeArgs`; resolves with whether the probe's site was pretenured. */
async function pretenuredIn(nodeArgs: readonly string[]): Promise<boolean> {
  const proc = await spawnServe({ TOLLGATE_UPSTREAM_URL: fake.url, TOLLGATE_UPSTREAM_KEY: 'sk-heap', TOLLGATE_DB: db }, [...PROBE_ARGS, ...nodeArgs]);
  running.push(proc);
  proc.child.kill('SIGUSR2');
  let pretenured: boolean | undefined;
  await waitFor(() => {
    for (const line of proc.stderr) if (line.startsWith('{"pretenured"')) pretenured = (JSON.parse(line) as { pretenured: boolean }).pretenured;
    return pretenured !== undefined;
  }, 'the pretenuring probe to answer');
  proc.child.kill('SIGTERM');
  await proc.exited;
  return pretenured!;
}

describe('V8 allocation-site pretenuring in a running proxy', () => {
  it('tollgate serve turns it off: objects that outlived scavenges still leave their site young', async () => {
    expect(await pretenuredIn([])).toBe(false);
  });

  it('an operator who starts node with --allocation-site-pretenuring keeps it', async () => {
    expect(await pretenuredIn(['--allocation-site-pretenuring'])).toBe(true);
  });
});
