/**
 * The serving process gives its helper threads (V8's collector and compiler
 * helpers, libuv's pool, its workers) a higher nice value so the event loop
 * has a shared core first (src/helper-threads.ts, TOLLGATE_HELPER_NICE). What
 * an operator would check: `/proc/<pid>/task/*` of a running `tollgate serve`
 * (`ps -L -o tid,ni`); `taskset` confines it to one CPU as a one-CPU VM would.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { availableParallelism, getPriority } from 'node:os';
import { dirname } from 'node:path';
import { tempDatabasePath } from '../../support/db.js';
import { startFakeUpstream, type FakeUpstream } from '../../support/fake-upstream.js';
import { spawnServe, type TollgateProcess } from '../../support/process.js';
import { waitFor } from '../../support/wait.js';

let fake: FakeUpstream;
const { path: db } = tempDatabasePath();
const running: TollgateProcess[] = [];

beforeAll(async () => {
  fake = await startFakeUpstream({ apiKey: 'sk-helpers' });
});

afterAll(async () => {
  for (const proc of running) if (proc.child.exitCode === null) proc.child.kill('SIGKILL');
  await fake.close();
  rmSync(dirname(db), { recursive: true, force: true });
});

const env = (extra: Record<string, string>) => ({ TOLLGATE_UPSTREAM_URL: fake.url, TOLLGATE_UPSTREAM_KEY: 'sk-helpers', TOLLGATE_DB: db, ...extra });

/** Each thread of `pid` and its nice value (field 19 of /proc/<pid>/task/<tid>/stat). */
function niceValues(pid: number): Map<number, number> {
  const values = new Map<number, number>();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      values.set(Number(tid), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]));
    } catch {
      // The thread ended while being listed.
    }
  }
  return values;
}

const helpers = (values: Map<number, number>, pid: number) => [...values].filter(([tid]) => tid !== pid).map(([, nice]) => nice);

describe.runIf(process.platform === 'linux')('helper threads', () => {
  it('run at TOLLGATE_HELPER_NICE while the event loop keeps the nice value it started with, threads started later included', async () => {
    const inherited = getPriority();
    const proc = await spawnServe(env({ TOLLGATE_HELPER_NICE: '7' }));
    running.push(proc);
    const pid = proc.child.pid!;
    // A request starts what a first request starts (libuv's pool for the log's writes, among others).
    const answer = await fetch(`${proc.url}/healthz`);
    expect(answer.status).toBe(200);
    // At least 7: the large-body estimate worker yields more on its own (nice 10, src/estimate/estimate-worker.ts).
    await waitFor(() => helpers(niceValues(pid), pid).every((nice) => nice >= 7), 'every helper thread at nice 7 or more', 15_000);
    const values = niceValues(pid);
    expect(values.get(pid)).toBe(inherited);
    // V8's helpers alone are four; Tollgate's workers (the checkpointer among them) add more.
    expect(helpers(values, pid).filter((nice) => nice === 7).length).toBeGreaterThanOrEqual(4);
    proc.child.kill('SIGTERM');
    await proc.exited;
  }, 60_000);

  it('auto (the default): left alone while the process may use several CPUs, at 19 once it is confined to one', async () => {
    const inherited = getPriority();
    const proc = await spawnServe(env({}));
    running.push(proc);
    const pid = proc.child.pid!;
    expect((await fetch(`${proc.url}/healthz`)).status).toBe(200);
    if (availableParallelism() > 1) {
      // Two rescans' time: nothing moves while the helpers have other cores to run on.
      await new Promise((resolve) => setTimeout(resolve, 2_500));
      expect(helpers(niceValues(pid), pid).filter((nice) => nice === inherited).length).toBeGreaterThanOrEqual(4);
    }
    execFileSync('taskset', ['-a', '-p', '-c', '0', String(pid)], { stdio: 'ignore' });
    await waitFor(() => helpers(niceValues(pid), pid).every((nice) => nice >= 19), 'every helper thread at nice 19', 15_000);
    expect(niceValues(pid).get(pid)).toBe(inherited);
    proc.child.kill('SIGTERM');
    await proc.exited;
  }, 60_000);

  it('are left alone with TOLLGATE_HELPER_NICE=0 (but for the estimate worker, which yields on its own)', async () => {
    const inherited = getPriority();
    const proc = await spawnServe(env({ TOLLGATE_HELPER_NICE: '0' }));
    running.push(proc);
    const pid = proc.child.pid!;
    expect((await fetch(`${proc.url}/healthz`)).status).toBe(200);
    const values = niceValues(pid);
    expect(values.get(pid)).toBe(inherited);
    expect(helpers(values, pid).filter((nice) => nice === inherited).length).toBeGreaterThanOrEqual(4);
    expect(helpers(values, pid).filter((nice) => nice !== inherited && nice !== 10)).toEqual([]);
    proc.child.kill('SIGTERM');
    await proc.exited;
  }, 60_000);
});
