/**
 * The dashboard in a real browser (the system Chromium, headless, driven by
 * playwright-core) against the real server: log in, read the overview and
 * compare it with `tollgate spend --json`, open a key page and see its chart
 * drawn, watch a new request appear without reloading, and check the token
 * never reaches a URL or a cookie. Screenshots go to test-artifacts/dashboard/.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, mkdirSync, rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import OpenAI from 'openai';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { openDatabase, type TollgateDatabase } from '../../../src/storage/sqlite/open.js';
import { SqliteKeyStore as KeyStore } from '../../../src/storage/sqlite/keys.js';
import { SqliteLedgerWriter } from '../../../src/storage/sqlite/ledger-writer.js';
import type { LedgerWriter } from '../../../src/storage/ledger.js';
import { count, usdTotal } from '../../../src/dashboard/format.js';
import type { SpendReport } from '../../../src/storage/spend-reads.js';
import { startTestProxy, type TestProxy } from '../../support/proxy.js';
import { tempDatabasePath } from '../../support/db.js';
import { cli } from '../../support/cli.js';
import { waitFor } from '../../support/wait.js';
import { recordRejection, recordRequest } from '../../support/dashboard.js';
import { expectFits, legendValues } from './fit.js';

const CHROMIUM = '/usr/bin/chromium';
const ADMIN = 'browser-test-admin-token-0123456789';
const ARTIFACTS = fileURLToPath(new URL('../../../test-artifacts/dashboard/', import.meta.url));
const DAY = 86_400_000;

let proxy: TestProxy;
let browser: Browser;
let dbDir: string;
let writerDb: TollgateDatabase;
let writer: LedgerWriter;
let alphaKey: string;
let alphaId: string;
let betaKey: string;
/** Everything the browser asked for, and what the console said. */
const requested: string[] = [];
const problems: string[] = [];

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `The dashboard's browser tests need Chromium at ${CHROMIUM} (Debian: apt-get install chromium). It is missing, so they fail rather than skip.`,
    );
  }
  mkdirSync(ARTIFACTS, { recursive: true });
  // History first (earlier days), as the proxy would have written it, before the proxy starts.
  const { dir, path } = tempDatabasePath();
  dbDir = dir;
  const setup = openDatabase(path);
  const store = new KeyStore(setup);
  const alpha = store.createKey({
    name: 'alpha',
    tenant: 'acme',
    policy: { limits: [{ name: 'rpm', unit: 'requests', amount: 600, period: 'min', burst: 600 }], budget: { microUsd: 50_000, period: 'day' } },
  });
  const beta = store.createKey({ name: 'beta', tenant: 'globex', policy: { limits: [] } });
  alphaKey = alpha.key;
  alphaId = alpha.view.id;
  betaKey = beta.key;
  const history = new SqliteLedgerWriter(setup);
  for (const [daysAgo, keyId, cost] of [
    [1, alphaId, 12_345],
    [2, beta.view.id, 2_000_000],
    [5, alphaId, 777],
    [20, alphaId, 31_000],
    [40, beta.view.id, 5],
  ] as const) {
    await recordRequest(history, { keyId, createdAt: Date.now() - daysAgo * DAY, costMicros: cost, promptTokens: 100 * daysAgo, completionTokens: 50 });
  }
  // A big month on a long model name: the tables must fit it at 1280 px as well.
  await recordRequest(history, {
    keyId: alphaId,
    createdAt: Date.now() - 3 * DAY,
    costMicros: 123_456_789,
    model: 'gpt-4o-mini-2024-07-18-long-deployment-name',
    promptTokens: 12_345_678,
    completionTokens: 2_345_678,
  });
  history.close();
  setup.close();

  proxy = await startTestProxy({ TOLLGATE_ADMIN_TOKEN: ADMIN, TOLLGATE_DB: path });
  writerDb = openDatabase(proxy.dbPath);
  writer = new SqliteLedgerWriter(writerDb);
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--disable-dev-shm-usage',
    ],
  });
}, 90_000);

afterAll(async () => {
  await browser?.close();
  writer?.close();
  writerDb?.close();
  await proxy?.close();
  if (dbDir !== undefined) rmSync(dbDir, { recursive: true, force: true });
});

async function newPage(): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext({ viewport: { width: 1400, height: 1000 } });
  const page = await context.newPage();
  page.on('request', (request) => requested.push(request.url()));
  page.on('console', (message) => {
    if (message.type() === 'error' || /Content Security Policy/i.test(message.text())) problems.push(message.text());
  });
  page.on('pageerror', (error) => problems.push(error.message));
  return { context, page };
}

async function login(page: Page, token = ADMIN): Promise<void> {
  await page.goto(`${proxy.server.url}/dashboard`);
  await page.waitForURL(/\/dashboard\/login\?next=%2Fdashboard$/);
  await page.fill('input[name="token"]', token);
  await page.click('button[type="submit"]');
}

async function chat(apiKey: string, options: { stream?: boolean } = {}): Promise<string> {
  const client = new OpenAI({ baseURL: proxy.baseURL, apiKey, maxRetries: 0 });
  if (options.stream) {
    const stream = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Stream a few words.' }], stream: true });
    for await (const _chunk of stream) {
      // drain
    }
    return '';
  }
  const { response } = await client.chat.completions
    .create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'Say hello to the dashboard.' }], max_tokens: 50 })
    .withResponse();
  return response.headers.get('x-request-id') ?? '';
}

async function spend(...args: string[]): Promise<SpendReport> {
  const result = await cli('--db', proxy.dbPath, 'spend', '--json', ...args);
  expect(result.code, result.stderr).toBe(0);
  return result.json<SpendReport>();
}

/** Waits for the ledger to settle every request (the proxy settles just after answering). */
async function settled(): Promise<void> {
  await waitFor(async () => (await spend('--since', 'today')).pending === 0, 'every request to settle');
}

const text = (page: Page, bind: string) => page.locator(`[data-bind="${bind}"]`).first().innerText();

describe('the dashboard in Chromium', () => {
  it('sends a logged-out browser to the login page and refuses a wrong token', async () => {
    const { context, page } = await newPage();
    await login(page, 'definitely-not-the-admin-token');
    expect(await page.locator('.notice').innerText()).toBe('That is not the admin token. Check TOLLGATE_ADMIN_TOKEN and try again.');
    expect(new URL(page.url()).pathname).toBe('/dashboard/login');
    expect(await context.cookies()).toEqual([]);
    await page.screenshot({ path: `${ARTIFACTS}login-refused.png`, fullPage: true });
    await context.close();
  }, 60_000);

  it('logs in and shows the overview with the totals tollgate spend prints', async () => {
    await chat(alphaKey);
    await chat(alphaKey);
    await chat(alphaKey, { stream: true });
    await chat(betaKey);
    await chat(proxy.key);
    recordRejection(writer, { keyId: alphaId, createdAt: Date.now(), reason: 'rate_limit' });
    recordRejection(writer, { keyId: alphaId, createdAt: Date.now(), reason: 'budget' });
    await settled();

    const { context, page } = await newPage();
    await page.goto(`${proxy.server.url}/dashboard/login`);
    await page.screenshot({ path: `${ARTIFACTS}login.png`, fullPage: true });
    await login(page);
    await page.waitForURL(`${proxy.server.url}/dashboard`);
    // After the first poll the page shows the JSON's numbers (the same as the server rendered).
    await page.waitForSelector('main[data-generated-at]');
    const today = await spend('--since', 'today', '--by', 'total');
    const month = await spend('--since', 'month', '--by', 'total');
    // Totals are as precise as the top keys' rows beside them (every key here is a top key).
    const todayByKey = await spend('--since', 'today', '--by', 'key');
    const monthByKey = await spend('--since', 'month', '--by', 'key');
    expect(await text(page, 'text.spendToday')).toBe(
      usdTotal(
        today.total.costMicros,
        todayByKey.rows.map((row) => row.costMicros),
      ),
    );
    expect(await text(page, 'text.spendMonth')).toBe(
      usdTotal(
        month.total.costMicros,
        monthByKey.rows.map((row) => row.costMicros),
      ),
    );
    expect(await text(page, 'text.requestsToday')).toBe(count(today.total.requests));
    expect(await text(page, 'text.requestsMonth')).toBe(count(month.total.requests));
    expect(await text(page, 'text.tokensToday')).toBe(count(today.total.promptTokens + today.total.completionTokens));
    expect(await text(page, 'text.rateLimitedToday')).toBe('1');
    expect(await text(page, 'text.overBudgetToday')).toBe('1');
    expect(today.total.requests).toBe(5);
    // Both charts drawn.
    await expect.poll(() => page.locator('[data-chart="charts.daily"] canvas').count()).toBeGreaterThan(0);
    expect(Number(await page.getAttribute('[data-chart="charts.daily"]', 'data-points'))).toBeGreaterThan(3);
    // The top keys name the keys by name and prefix, as spend --by key ranks them.
    const byKey = await spend('--since', 'month', '--by', 'key');
    const topNames = await page.locator('tbody[data-list="topKeys"] > tr[data-item] td:first-child').allInnerTexts();
    expect(topNames).toEqual(byKey.rows.map((row) => row.group));
    expect(await page.locator('tbody[data-list="budgets"]').innerText()).toContain('alpha');
    await page.screenshot({ path: `${ARTIFACTS}overview.png`, fullPage: true });
    // Before any pointer moves over a chart its legend shows the latest values, not an empty "Spend:".
    const legends = await legendValues(page);
    expect(legends.length).toBeGreaterThan(1);
    for (const value of legends) expect(value).toMatch(/^\$?[\d,.]+$/);
    await expectFits(page, ARTIFACTS, 'overview');
    await context.close();
  }, 60_000);

  it('opens a key page with its chart drawn, and shows a new request after auto-refresh without reloading', async () => {
    const { context, page } = await newPage();
    await login(page);
    await page.waitForURL(`${proxy.server.url}/dashboard`);
    await page.click('tbody[data-list="topKeys"] a:text-is("alpha")');
    await page.waitForURL(`${proxy.server.url}/dashboard/keys/${alphaId}`);
    const chart = page.locator('[data-chart="charts.daily"]');
    await expect.poll(async () => Number((await chart.getAttribute('data-points')) ?? 0)).toBeGreaterThan(0);
    // The spend bars are drawn in the series colour: count those pixels on the canvas.
    const coloured = await chart.locator('canvas').evaluate((canvas: HTMLCanvasElement) => {
      const { data } = canvas.getContext('2d')!.getImageData(0, 0, canvas.width, canvas.height);
      let n = 0;
      for (let i = 0; i < data.length; i += 4) if (data[i + 3]! > 0 && data[i + 2]! > data[i]! + 60) n += 1;
      return n;
    });
    expect(coloured).toBeGreaterThan(20);
    expect(await page.locator('tbody[data-list="models"]').innerText()).toContain('gpt-4o');
    expect(await page.locator('tbody[data-list="recent429"] > tr[data-item]').count()).toBe(2);
    // The proxy wires the limiter in: each limit shows what is left right now.
    expect(await page.locator('text=live from the limiter').isVisible()).toBe(true);
    expect(await page.locator('tbody[data-list="limits"]').innerText()).toMatch(/\d+ of \d+|\d+ left|%/);
    await page.waitForSelector('main[data-generated-at]');
    expect(await page.locator('tbody[data-scope="budget"]').innerText()).toMatch(/\$0\.000\d+ of \$0\.05 per day/);
    // The burn-rate forecast under the budget (the alerts' sentence): this test's spend is all in the last 24 h.
    expect(await page.locator('[data-bind="text.budgetForecast"]').innerText()).toMatch(
      /^at the last 24 h's rate \(\$[\d.]+\/day\), today's budget (lasts the day|lasts until \d\d:\d\d UTC)$/,
    );
    const before = await text(page, 'text.requestsToday');
    await page.screenshot({ path: `${ARTIFACTS}key.png`, fullPage: true });
    for (const value of await legendValues(page)) expect(value).toMatch(/^\$?[\d,.]+$/);
    await expectFits(page, ARTIFACTS, 'key');

    await page.evaluate(() => {
      (window as unknown as { notReloaded: boolean }).notReloaded = true;
    });
    const requestId = await chat(alphaKey);
    expect(requestId).toMatch(/^req_/);
    await expect.poll(() => page.locator('tbody[data-list="latest"] > tr[data-item]').first().innerText(), { timeout: 10_000 }).toContain(requestId);
    await expect.poll(() => text(page, 'text.requestsToday'), { timeout: 10_000 }).toBe(String(Number(before) + 1));
    expect(await page.evaluate(() => (window as unknown as { notReloaded?: boolean }).notReloaded)).toBe(true);
    await page.screenshot({ path: `${ARTIFACTS}key-refreshed.png`, fullPage: true });
    await context.close();
  }, 60_000);

  it('lists the keys, sorted and filtered, and logs out', async () => {
    const { context, page } = await newPage();
    await login(page);
    await page.waitForURL(`${proxy.server.url}/dashboard`);
    await page.click('nav a:text-is("Keys")');
    await page.waitForURL(`${proxy.server.url}/dashboard/keys`);
    const names = () => page.locator('tbody[data-list="rows"] > tr[data-item] td:first-child').allInnerTexts();
    // By this month's spend, most first: the order spend --by key prints.
    const byKey = await spend('--since', 'month', '--by', 'key');
    await expect.poll(names).toEqual(byKey.rows.map((row) => row.group));
    await page.click('th a:text-is("Name")');
    await page.waitForURL(/sort=name/);
    expect(await names()).toEqual(['alpha', 'beta', 'default']);
    await page.selectOption('select[name="tenant"]', { label: 'acme' });
    await page.waitForURL(/tenant=tn_/);
    expect(await names()).toEqual(['alpha']);
    expect(await page.locator('tbody[data-list="rows"]').innerText()).toMatch(/tg-[0-9A-Za-z]{6}/);
    await page.screenshot({ path: `${ARTIFACTS}keys.png`, fullPage: true });
    await expectFits(page, ARTIFACTS, 'keys');

    await page.click('button:text-is("Log out")');
    await page.waitForURL(/\/dashboard\/login\?loggedOut=1$/);
    expect(await page.locator('.notice.info').innerText()).toBe('You are logged out.');
    expect((await context.cookies()).filter((cookie) => cookie.value !== '')).toEqual([]);
    await page.goto(`${proxy.server.url}/dashboard/keys`);
    await page.waitForURL(/\/dashboard\/login\?next=%2Fdashboard%2Fkeys$/);
    await context.close();
  }, 60_000);

  it('never put the token in a URL or a cookie, and ran with no script or CSP error', async () => {
    const { context, page } = await newPage();
    await login(page);
    await page.waitForURL(`${proxy.server.url}/dashboard`);
    const cookies = await context.cookies();
    expect(cookies).toHaveLength(1);
    expect(cookies[0]).toMatchObject({ name: 'tollgate_session', httpOnly: true, sameSite: 'Strict' });
    expect(cookies[0]!.value).not.toContain(ADMIN);
    expect(await page.evaluate(() => document.cookie)).toBe('');
    await context.close();
    expect(requested.length).toBeGreaterThan(10);
    for (const url of requested) expect(decodeURIComponent(url)).not.toContain(ADMIN);
    expect(requested.every((url) => url.startsWith(proxy.server.url))).toBe(true);
    expect(problems.filter((p) => !/status of 401/.test(p))).toEqual([]);
    expect(proxy.logs.raw.join('\n')).not.toContain(ADMIN);
  }, 60_000);
});
