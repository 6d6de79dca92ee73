/**
 * A running `tollgate serve` keeps the built-in prototypes fast: ioredis 6 subclasses String on
 * import, which leaves `String.prototype` a dictionary on Node 20's V8, and every string method
 * call of the request path (the tokenizer's `charCodeAt` above all) then a dictionary lookup
 * (src/fast-prototypes.ts; docs/performance.md, "String methods looked up in a dictionary").
 * What it costs is measured in bench/; here, with V8's own test hook, that the server as started
 * has none of them slow. The first case shows the hook sees what the server undoes.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { tempDatabasePath } from '../../support/db.js';
import { startFakeUpstream, type FakeUpstream } from '../../support/fake-upstream.js';
import { spawnServe, type TollgateProcess } from '../../support/process.js';
import { waitFor } from '../../support/wait.js';

const PROBE = fileURLToPath(new URL('../../fixtures/v8/prototype-probe.mjs', import.meta.url));
const REPO_ROOT = fileURLToPath(new URL('../../..', import.meta.url));
let fake: FakeUpstream;
const { path: db } = tempDatabasePath();
let proc: (TollgateProcess & { url: string }) | undefined;

beforeAll(async () => {
  fake = await startFakeUpstream({ apiKey: 'sk-prototypes' });
});

afterAll(async () => {
  if (proc !== undefined && proc.child.exitCode === null) proc.child.kill('SIGKILL');
  await fake.close();
  rmSync(dirname(db), { recursive: true, force: true });
});

/** The prototypes the probe in `proc` reports slow, on request. */
async function slowPrototypes(running: TollgateProcess): Promise<string[]> {
  const before = running.stderr.length;
  running.child.kill('SIGUSR2');
  let report: string[] | undefined;
  await waitFor(() => {
    for (const line of running.stderr.slice(before)) {
      if (line.startsWith('{"slowPrototypes"')) report = (JSON.parse(line) as { slowPrototypes: string[] }).slowPrototypes;
    }
    return report !== undefined;
  }, 'the prototype probe to answer');
  return report!;
}

describe('built-in prototypes in a running proxy', () => {
  it('ioredis alone leaves String.prototype slow (what the server undoes)', () => {
    const out = execFileSync(
      process.execPath,
      [
        '--allow-natives-syntax',
        '--input-type=module',
        '-e',
        "await import('ioredis'); console.log(new Function('o', 'return %HasFastProperties(o)')(String.prototype));",
      ],
      {
        cwd: REPO_ROOT,
        encoding: 'utf8',
      },
    );
    expect(out.trim()).toBe('false');
  });

  it('tollgate serve has none slow once it listens', async () => {
    proc = await spawnServe({ TOLLGATE_UPSTREAM_URL: fake.url, TOLLGATE_UPSTREAM_KEY: 'sk-prototypes', TOLLGATE_DB: db }, [
      '--allow-natives-syntax',
      '--import',
      PROBE,
    ]);
    expect(await slowPrototypes(proc)).toEqual([]);
  });
});
