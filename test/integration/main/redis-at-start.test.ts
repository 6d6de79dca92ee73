/**
 * What `tollgate serve` says about Redis at start: a Redis that answers is reported once, at
 * info, as where limits are shared; only one that does not answer is reported as unreachable.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rmSync } from 'node:fs';
import { dirname } from 'node:path';
import { tempDatabasePath } from '../../support/db.js';
import { spawnServe, type TollgateProcess } from '../../support/process.js';
import { startRedis, type RedisHandle } from '../../support/redis.js';
import { REFUSED_PORT } from '../../support/refused.js';

const UNREACHABLE = 'Redis not reachable at start; limits start in the fail mode';
const { path: db } = tempDatabasePath();
let redis: RedisHandle;
const running: TollgateProcess[] = [];

beforeAll(async () => {
  redis = await startRedis();
});

afterAll(async () => {
  for (const proc of running) if (proc.child.exitCode === null) proc.child.kill('SIGKILL');
  await redis.stop();
  rmSync(dirname(db), { recursive: true, force: true });
});

async function serveWithRedis(url: string) {
  const proc = await spawnServe({ TOLLGATE_DB: db, TOLLGATE_UPSTREAM_URL: 'http://127.0.0.1:9/v1', TOLLGATE_REDIS_URL: url });
  running.push(proc);
  proc.child.kill('SIGTERM');
  await proc.exited;
  return proc.logs;
}

describe('Redis at start', () => {
  it('is reported connected, once and at info, with its password hidden, when it answers', async () => {
    const url = `redis://:hunter2@127.0.0.1:${redis.port}`;
    const logs = await serveWithRedis(url);
    expect(logs.filter((line) => line.msg === UNREACHABLE)).toEqual([]);
    const connected = logs.filter((line) => typeof line.msg === 'string' && line.msg.startsWith('limits are shared through Redis at'));
    expect(connected).toHaveLength(1);
    expect(connected[0]!.level).toBe('info');
    expect(connected[0]!.msg).toBe(`limits are shared through Redis at redis://***@127.0.0.1:${redis.port}`);
    expect(JSON.stringify(logs)).not.toContain('hunter2');
  });

  it('is reported unreachable, at error, when nothing listens at its address', async () => {
    const logs = await serveWithRedis(`redis://127.0.0.1:${REFUSED_PORT}`);
    const unreachable = logs.filter((line) => line.msg === UNREACHABLE);
    expect(unreachable).toHaveLength(1);
    expect(unreachable[0]!.level).toBe('error');
    expect(logs.some((line) => typeof line.msg === 'string' && line.msg.startsWith('limits are shared through Redis'))).toBe(false);
  });
});
