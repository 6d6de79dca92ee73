import { Cluster } from 'ioredis';
import { afterAll, beforeAll } from 'vitest';
import { createLeaseLimiter } from '../../../src/coordination/lease-store.js';
import { startRedisCluster, type RedisClusterHandle } from '../../support/redis.js';
import { describeLimiterContract } from '../../support/limiter-contract.js';

let cluster: RedisClusterHandle;
let client: Cluster;

beforeAll(async () => {
  cluster = await startRedisCluster(3);
  client = new Cluster([...cluster.nodes]);
  await new Promise<void>((resolve, reject) => {
    client.once('ready', () => resolve());
    client.once('error', reject);
  });
});

afterAll(async () => {
  client.disconnect();
  await cluster.stop();
});

describeLimiterContract('redis cluster', { create: async () => createLeaseLimiter({ redis: client, failMode: 'closed', maxWaitMs: 2000 }) });
