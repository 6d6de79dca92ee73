import { Redis } from 'ioredis';
import { afterAll, beforeAll } from 'vitest';
import { createLeaseLimiter } from '../../../src/coordination/lease-store.js';
import { startRedis, type RedisHandle } from '../../support/redis.js';
import { describeLimiterContract } from '../../support/limiter-contract.js';

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

describeLimiterContract('redis', { create: async () => createLeaseLimiter({ redis, failMode: 'closed', maxWaitMs: 2000 }) });
