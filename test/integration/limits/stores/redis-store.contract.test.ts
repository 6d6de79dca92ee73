import { Redis } from 'ioredis';
import { afterAll, beforeAll } from 'vitest';
import { createRedisLimiter } from '../../../../src/limits/stores/redis-store.js';
import { startRedis, type RedisHandle } from '../../../support/redis.js';
import { describeLimiterContract } from '../../../support/limiter-contract.js';

let server: RedisHandle;
let redis: Redis;

beforeAll(async () => {
  server = await startRedis();
  redis = new Redis(server.url);
});

afterAll(async () => {
  redis.disconnect();
  await server.stop();
});

describeLimiterContract('redis', { create: async () => createRedisLimiter({ redis, failMode: 'closed', maxWaitMs: 2000 }) });
