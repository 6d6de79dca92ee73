/**
 * Credentials an operator puts in a URL never reach a log line or the CLI's
 * output: the real server starts with a user and password and a key in its
 * upstream URL, a password in its PostgreSQL URL and in its Redis URL (Redis
 * down, so its errors are logged too), serves requests, and shuts down; the
 * captured log holds the hosts, never the secrets.
 */
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../../src/config/index.js';
import { openKeyStore } from '../../../src/storage/index.js';
import { startServer, type RunningServer } from '../../../src/main.js';
import { cli } from '../../support/cli.js';
import { tempDatabasePath } from '../../support/db.js';
import { startFakeUpstream, type FakeUpstream } from '../../support/fake-upstream.js';
import { captureLogs, type CapturedLogs } from '../../support/logs.js';
import { createTempPostgres, type TempPostgres } from '../../support/postgres.js';
import { REFUSED_PORT } from '../../support/refused.js';

const UPSTREAM_KEY = 'sk-upstream-key-in-env-0123456789';
/** Every secret the URLs carry; none may be printed. */
const SECRETS = ['upstream-user-7Qx', 'upstream-pass-8Rw', 'query-key-9Sv', 'pg-pass-1Tu', 'redis-pass-2Ut'];

let fake: FakeUpstream;
let postgres: TempPostgres;
let server: RunningServer;
let logs: CapturedLogs;
let directory: { dir: string; path: string };
let tenantKey: string;

beforeAll(async () => {
  fake = await startFakeUpstream({ apiKey: UPSTREAM_KEY });
  postgres = await createTempPostgres();
  directory = tempDatabasePath();
  const pgUrl = new URL(postgres.url);
  // Trust auth: the server ignores the password, but the URL carries it like a production one.
  pgUrl.password = SECRETS[3]!;
  const config = loadConfig({
    TOLLGATE_PORT: '0',
    TOLLGATE_UPSTREAM_URL: `http://${SECRETS[0]}:${SECRETS[1]}@127.0.0.1:${fake.port}/v1?api-key=${SECRETS[2]}&api-version=2024-10-21`,
    TOLLGATE_UPSTREAM_KEY: UPSTREAM_KEY,
    TOLLGATE_DATABASE_URL: pgUrl.href,
    TOLLGATE_REDIS_URL: `redis://:${SECRETS[4]}@127.0.0.1:${REFUSED_PORT}`,
    TOLLGATE_DB: directory.path,
    TOLLGATE_SHUTDOWN_TIMEOUT: '2s',
    TOLLGATE_LOG_LEVEL: 'debug',
  });
  // A replica's keys live in PostgreSQL.
  tenantKey = (await openKeyStore({ kind: 'postgres', pool: postgres.pool }).createKey({ name: 'logs', policy: { limits: [] } })).key;
  logs = captureLogs('debug');
  server = await startServer(config, { logger: logs.logger });
});

afterAll(async () => {
  await server.close();
  await fake.close();
  await postgres.drop();
  rmSync(directory.dir, { recursive: true, force: true });
});

function expectNoSecret(text: string): void {
  for (const secret of SECRETS) expect(text, secret).not.toContain(secret);
}

describe('the log', () => {
  it('names the upstream, PostgreSQL and Redis at start-up with their credentials masked', () => {
    const listening = logs.lines.find((line) => line.msg === 'tollgate listening')!;
    expect(listening.upstream).toBe(`http://***@127.0.0.1:${fake.port}/v1?api-key=***&api-version=2024-10-21`);
    expect(listening.database).toMatch(/^postgres:\/\/\*\*\*@127\.0\.0\.1:5432\/tollgate_test_/);
    expect(listening.redis).toEqual([expect.stringMatching(/^redis:\/\/\*\*\*@127\.0\.0\.1:\d+$/)]);
  });

  it('holds no credential after requests and Redis errors', async () => {
    const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: tenantKey, maxRetries: 0 });
    const answer = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] });
    expect(answer.choices[0]?.message.content).toEqual(expect.any(String));
    const failed = await client.chat.completions
      .create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }, { headers: { 'x-fake-scenario': 'status=500' } })
      .catch((error: unknown) => error);
    expect(failed).toBeInstanceOf(OpenAI.InternalServerError);
    expect(logs.lines.filter((line) => line.msg === 'request')).toHaveLength(2);
    expect(logs.raw.some((line) => line.includes('Redis'))).toBe(true);
    expectNoSecret(logs.raw.join('\n'));
  });
});

describe('the CLI', () => {
  it('masks credentials of a --url it cannot reach', async () => {
    const port = REFUSED_PORT;
    const result = await cli('--url', `http://admin:${SECRETS[1]}@127.0.0.1:${port}`, 'keys', 'list');
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain(`http://***@127.0.0.1:${port}`);
    expectNoSecret(result.stderr + result.stdout);
  });

  it('masks credentials in a configuration error that quotes the file', () => {
    const file = join(directory.dir, 'broken.json');
    writeFileSync(file, `https://${SECRETS[0]}:${SECRETS[1]}@gateway.example/v1`);
    let error: unknown;
    try {
      loadConfig({ TOLLGATE_CONFIG: file });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expectNoSecret((error as Error).message);
  });
});
