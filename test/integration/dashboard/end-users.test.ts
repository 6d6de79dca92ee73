/**
 * A key's page lists its top end users and tags, in the real browser against
 * the real server, with the numbers `tollgate spend --by user|tag` prints, and
 * picks up a new end user on its own refresh. Screenshot:
 * test-artifacts/dashboard/key-end-users.png.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { existsSync, mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import OpenAI from 'openai';
import { chromium, type Browser } from 'playwright-core';
import type { SpendReport } from '../../../src/storage/spend-reads.js';
import { usd } from '../../../src/dashboard/format.js';
import { cli } from '../../support/cli.js';
import { startTestProxy, type TestProxy } from '../../support/proxy.js';
import { waitFor } from '../../support/wait.js';
import { expectFits } from './fit.js';

const CHROMIUM = '/usr/bin/chromium';
const ADMIN = 'end-users-admin-token-0123456789';
const ARTIFACTS = fileURLToPath(new URL('../../../test-artifacts/dashboard/', import.meta.url));

let proxy: TestProxy;
let browser: Browser;
let key: string;
let keyId: string;

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`The dashboard's browser tests need Chromium at ${CHROMIUM}; it is missing, so they fail rather than skip.`);
  mkdirSync(ARTIFACTS, { recursive: true });
  proxy = await startTestProxy({ TOLLGATE_ADMIN_TOKEN: ADMIN });
  const created = await cli('--db', proxy.dbPath, 'keys', 'create', '--name', 'chat-app', '--user-rpm', '100', '--json');
  expect(created.code, created.stderr).toBe(0);
  ({ key, id: keyId } = created.json<{ key: string; id: string }>());
  browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
}, 90_000);

afterAll(async () => {
  await browser?.close();
  await proxy?.close();
});

async function ask(user: string, tags: string, maxTokens: number): Promise<void> {
  const client = new OpenAI({ baseURL: proxy.baseURL, apiKey: key, maxRetries: 0 });
  await client.chat.completions.create(
    { model: 'gpt-4o', messages: [{ role: 'user', content: 'hello' }], max_tokens: maxTokens, user },
    { headers: { 'x-tollgate-tags': tags } },
  );
}

async function spendBy(by: 'user' | 'tag'): Promise<SpendReport> {
  const result = await cli('--db', proxy.dbPath, 'spend', '--key', 'chat-app', '--since', 'month', '--by', by, '--json');
  expect(result.code, result.stderr).toBe(0);
  return result.json<SpendReport>();
}

it("lists a key's top end users and tags with the spend the CLI reports, and picks up a new user without reloading", async () => {
  for (const [user, tags, tokens] of [
    ['alice@example.com', 'search,beta', 200],
    ['alice@example.com', 'search', 200],
    ['bob', 'summarize', 50],
  ] as const) {
    await ask(user, tags, tokens);
  }
  await waitFor(async () => (await spendBy('user')).pending === 0, 'every request to settle');
  const byUser = await spendBy('user');
  const byTag = await spendBy('tag');

  const context = await browser.newContext({ viewport: { width: 1400, height: 1200 } });
  const page = await context.newPage();
  await page.goto(`${proxy.server.url}/dashboard`);
  await page.fill('input[name="token"]', ADMIN);
  await page.click('button[type="submit"]');
  await page.waitForURL(`${proxy.server.url}/dashboard`);
  await page.goto(`${proxy.server.url}/dashboard/keys/${keyId}`);
  const users = page.locator('tbody[data-list="topUsers"] > tr[data-item]');
  await expect.poll(() => users.count()).toBe(2);
  // The most spent first, at the CLI's amounts.
  const shown = await users.evaluateAll((rows) => rows.map((row) => (row as HTMLElement).innerText.split('\t').map((cell) => cell.trim())));
  expect(shown.map((cells) => [cells[0], cells[2]])).toEqual(
    byUser.rows.filter((row) => row.group !== '(no end user)').map((row) => [row.group, usd(row.costMicros)]),
  );
  const tags = await page.locator('tbody[data-list="topTags"] > tr[data-item] > td:first-child').allInnerTexts();
  expect(tags).toEqual(byTag.rows.map((row) => row.group));
  expect(tags[0]).toBe('search');
  await page.screenshot({ path: `${ARTIFACTS}key-end-users.png`, fullPage: true });
  await expectFits(page, ARTIFACTS, 'key-end-users');

  await page.evaluate(() => {
    (window as unknown as { notReloaded: boolean }).notReloaded = true;
  });
  await ask('carol', 'search', 500);
  await expect.poll(() => page.locator('tbody[data-list="topUsers"]').innerText(), { timeout: 10_000 }).toContain('carol');
  expect(await page.evaluate(() => (window as unknown as { notReloaded?: boolean }).notReloaded)).toBe(true);
  await context.close();
}, 90_000);
