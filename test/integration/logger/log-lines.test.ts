/**
 * The process log on stdout (src/logger.ts) is written in batches of whole
 * lines: a quiet proxy's request line still comes out on its own (the
 * periodic flush), and the workers of `serve --workers 2`, sharing one stdout
 * pipe, never interleave inside a line (no write is larger than PIPE_BUF).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rmSync } from 'node:fs';
import { dirname } from 'node:path';
import { Pool } from 'undici';
import { openDatabase } from '../../../src/storage/sqlite/open.js';
import { SqliteKeyStore as KeyStore } from '../../../src/storage/sqlite/keys.js';
import { tempDatabasePath } from '../../support/db.js';
import { startFakeUpstream, type FakeUpstream } from '../../support/fake-upstream.js';
import { spawnServe, spawnTollgate, type TollgateProcess } from '../../support/process.js';
import { waitFor } from '../../support/wait.js';

let fake: FakeUpstream;
const { path: db } = tempDatabasePath();
let key: string;
const running: TollgateProcess[] = [];

beforeAll(async () => {
  fake = await startFakeUpstream({ apiKey: 'sk-log-lines' });
  const setup = openDatabase(db);
  key = new KeyStore(setup).createKey({ name: 'logged', policy: { limits: [] } }).key;
  setup.close();
});

afterAll(async () => {
  for (const proc of running) if (proc.child.exitCode === null) proc.child.kill('SIGKILL');
  await fake.close();
  rmSync(dirname(db), { recursive: true, force: true });
});

const env = () => ({ TOLLGATE_UPSTREAM_URL: fake.url, TOLLGATE_UPSTREAM_KEY: 'sk-log-lines', TOLLGATE_DB: db });
const chat = (id: number) => JSON.stringify({ model: 'gpt-4o-mini', max_tokens: 8, messages: [{ role: 'user', content: `line ${id}` }] });

describe('the log on stdout', () => {
  it("writes a lone request's line without waiting for more traffic to fill a batch", async () => {
    const proc = await spawnServe(env());
    running.push(proc);
    const response = await fetch(`${proc.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: chat(0),
    });
    expect(response.status).toBe(200);
    const requestId = response.headers.get('x-request-id');
    // One line is far less than a batch: only the periodic flush writes it.
    await waitFor(() => proc.logs.some((line) => line.msg === 'request' && line.requestId === requestId), 'the request line on stdout', 10_000);
    proc.child.kill('SIGTERM');
    await proc.exited;
  }, 90_000);

  it('keeps every line whole while two workers write 2,000 request lines to one pipe', async () => {
    const proc = spawnTollgate(['serve', '--workers', '2'], { TOLLGATE_PORT: '0', TOLLGATE_LOG_LEVEL: 'info', ...env() });
    running.push(proc);
    await waitFor(() => proc.logs.some((line) => line.msg === 'tollgate workers listening'), 'both workers to listen', 120_000);
    const url = new URL(String(proc.logs.find((line) => line.msg === 'tollgate workers listening')!.url));
    const pool = new Pool(url.origin, { connections: 64 });
    let next = 0;
    const client = async () => {
      while (next < 2000) {
        const id = next++;
        const response = await pool.request({
          method: 'POST',
          path: '/v1/chat/completions',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body: chat(id),
        });
        await response.body.text();
        expect(response.statusCode).toBe(200);
      }
    };
    await Promise.all(Array.from({ length: 64 }, client));
    await pool.close();
    proc.child.kill('SIGTERM');
    await proc.exited;
    const requestLines = proc.logs.filter((line) => line.msg === 'request');
    expect(requestLines).toHaveLength(2000);
    expect(new Set(requestLines.map((line) => line.pid)).size).toBe(2);
    const broken = proc.stdout.filter((line) => {
      try {
        return typeof JSON.parse(line) !== 'object';
      } catch {
        return true;
      }
    });
    expect(broken).toEqual([]);
  }, 180_000);
});
