/**
 * The dashboard's writes in a real browser (the system Chromium, headless,
 * playwright-core) against the real server and its proxy: a named operator
 * logs in with its token, creates a key, copies its secret with the copy button, uses it, sets a
 * tiny budget (previewed first) and the proxy refuses the key's next request
 * within a second, then revokes it and the key is refused; the audit page
 * shows each change under the operator's name. Another key is suspended and
 * unsuspended from its page, each seen by the proxy within a second. A viewer (and a tenant) sees
 * no write buttons and its direct posts are refused; a form of another site
 * cannot change anything. Screenshots go to
 * test-artifacts/dashboard/.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, mkdirSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { SqliteKeyStore as KeyStore } from '../../../src/storage/sqlite/keys.js';
import { openDatabase } from '../../../src/storage/sqlite/open.js';
import { sqliteAdmins } from '../../../src/storage/sqlite/admins.js';
import { SYSTEM_ACTOR, type AdminRole } from '../../../src/domain/admins.js';
import { startTestProxy, type TestProxy } from '../../support/proxy.js';
import { cli } from '../../support/cli.js';
import { waitFor } from '../../support/wait.js';
import { expectFits } from './fit.js';

const CHROMIUM = '/usr/bin/chromium';
const ADMIN = 'writes-browser-admin-token-0123456789';
const ARTIFACTS = fileURLToPath(new URL('../../../test-artifacts/dashboard/', import.meta.url));

let proxy: TestProxy;
let browser: Browser;
/** A page of another site (another origin and host) with a form aimed at the dashboard. */
let evil: Server;
let evilUrl: string;
let evilTarget = '';
const problems: string[] = [];
/** Named admins' tokens (docs/admins.md). */
let operatorToken: string;
let viewerToken: string;

async function createAdmin(name: string, role: AdminRole): Promise<string> {
  const db = openDatabase(proxy.dbPath);
  try {
    return (await sqliteAdmins(db).create({ name, role }, Date.now(), SYSTEM_ACTOR)).token;
  } finally {
    db.close();
  }
}

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`The dashboard's browser tests need Chromium at ${CHROMIUM}; it is missing, so they fail rather than skip.`);
  mkdirSync(ARTIFACTS, { recursive: true });
  proxy = await startTestProxy({ TOLLGATE_ADMIN_TOKEN: ADMIN });
  proxy.issueKey('acme-key', { limits: [] }, 'acme');
  operatorToken = await createAdmin('alice', 'operator');
  viewerToken = await createAdmin('victor', 'viewer');
  evil = createServer((_request, response) => {
    response.writeHead(200, { 'content-type': 'text/html' });
    response.end(`<!DOCTYPE html><form id="f" method="post" action="${evilTarget}"><input name="_csrf" value="guess"><button>Win a prize</button></form>`);
  });
  await new Promise<void>((resolve) => evil.listen(0, '127.0.0.1', resolve));
  // localhost vs 127.0.0.1: another host, so another site to the browser.
  evilUrl = `http://localhost:${(evil.address() as AddressInfo).port}/`;
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run'],
  });
}, 90_000);

afterAll(async () => {
  await browser?.close();
  await proxy?.close();
  await new Promise((resolve) => evil?.close(resolve));
});

async function newPage(): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext({ viewport: { width: 1400, height: 1000 } });
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: proxy.server.url });
  const page = await context.newPage();
  page.on('console', (message) => {
    if (message.type() === 'error' || /Content Security Policy/i.test(message.text())) problems.push(message.text());
  });
  page.on('pageerror', (error) => problems.push(error.message));
  page.on('dialog', (dialog) => void dialog.accept());
  return { context, page };
}

async function login(page: Page, token: string): Promise<void> {
  await page.goto(`${proxy.server.url}/dashboard`);
  await page.waitForURL(/\/dashboard\/login/);
  await page.fill('input[name="token"]', token);
  await page.click('button[type="submit"]');
  await page.waitForURL(`${proxy.server.url}/dashboard`);
}

/** One chat request with a key: its status and error code. */
async function chat(apiKey: string): Promise<{ status: number; code: string | undefined }> {
  const response = await fetch(`${proxy.baseURL}/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hello from the dashboard test.' }] }),
  });
  const body = (await response.json()) as { error?: { code?: string } };
  return { status: response.status, code: body.error?.code };
}

function keyId(name: string): string {
  const db = openDatabase(proxy.dbPath);
  try {
    return new KeyStore(db).getKey(name).id;
  } finally {
    db.close();
  }
}

describe('an operator in the dashboard', () => {
  it('creates a key, copies its secret, sets its budget and revokes it, each seen by the proxy within a second', async () => {
    const { context, page } = await newPage();
    await login(page, operatorToken);
    await page.goto(`${proxy.server.url}/dashboard/keys`);
    await page.click('a:has-text("New key")');
    await page.fill('input[name="name"]', 'browser-made');
    await page.fill('input[name="tenant"]', 'acme');
    await page.fill('textarea[name="limits"]', 'requests:600/min');
    await page.click('button[value="save"]');
    await page.waitForSelector('[data-secret]');
    const shown = (await page.locator('[data-secret]').innerText()).trim();
    expect(shown).toMatch(/^tg-/);
    await page.click('button[data-copy]');
    await expect.poll(() => page.locator('button[data-copy]').innerText()).toBe('Copied');
    const copied = await page.evaluate(() => navigator.clipboard.readText());
    expect(copied).toBe(shown);
    await page.screenshot({ path: `${ARTIFACTS}write-secret.png`, fullPage: true });

    // The copied secret works on the proxy at once.
    expect((await chat(copied)).status).toBe(200);
    await waitFor(async () => {
      const result = await cli('--db', proxy.dbPath, 'spend', '--json', '--key', 'browser-made', '--since', 'today');
      return result.json<{ pending: number; total: { requests: number } }>().total.requests === 1;
    }, 'the request to settle');

    // A budget far below what it spent: previewed, then saved.
    await page.click('a:has-text("Go to the key")');
    await page.click('a:has-text("Edit limits and budgets")');
    await page.fill('input[name="budgetUsd"]', '0.000001');
    await page.selectOption('select[name="budgetPeriod"]', 'month');
    await page.click('button[value="preview"]');
    const sentence = await page.locator('[data-change] .sentence').first().innerText();
    expect(sentence).toMatch(/^This key may now spend \$0\.000001 per month; \$0\.0\d+ spent this month\.$/);
    await page.screenshot({ path: `${ARTIFACTS}write-preview.png`, fullPage: true });
    await expectFits(page, ARTIFACTS, 'write-preview');
    await page.setViewportSize({ width: 1400, height: 1000 });
    await page.click('button[value="save"]');
    await page.waitForSelector('[data-done]');
    const saved = Date.now();
    expect(await page.locator('[data-done]').innerText()).toContain('This key may now spend $0.000001 per month');
    let refused = await chat(copied);
    while (refused.status === 200 && Date.now() - saved < 1000) refused = await chat(copied);
    expect(refused).toEqual({ status: 429, code: 'insufficient_quota' });
    expect(Date.now() - saved).toBeLessThan(1000);
    await page.screenshot({ path: `${ARTIFACTS}write-saved.png`, fullPage: true });

    // Revoked: refused within a second.
    await page.click('form[action$="/revoke"] button');
    await page.waitForURL(/done=revoked/);
    const revoked = Date.now();
    let answer = await chat(copied);
    while (answer.status !== 401 && Date.now() - revoked < 1000) answer = await chat(copied);
    expect(answer.status).toBe(401);
    expect(await page.locator('[data-bind="key.status"]').innerText()).toBe('revoked');
    expect(await page.locator('[data-actions]').count()).toBe(0);
    await page.screenshot({ path: `${ARTIFACTS}write-revoked.png`, fullPage: true });

    // The audit trail names alice for each change, newest first.
    await page.goto(`${proxy.server.url}/dashboard/keys`);
    await page.click('a:has-text("Audit trail")');
    await page.fill('input[name="key"]', keyId('browser-made'));
    await page.click('button:has-text("Apply")');
    await page.waitForURL(/\/dashboard\/audit\?key=/);
    const rows = await page
      .locator('tr[data-audit-row]')
      .evaluateAll((trs) => trs.map((tr) => `${tr.querySelector('[data-actor]')?.textContent} ${tr.getAttribute('data-audit-row')}`));
    expect(rows).toEqual(['alice key.revoke', 'alice key.update', 'alice key.create']);
    expect(await page.locator('tr[data-audit-row="key.update"]').innerText()).toContain('budget: - → $0.000001 per month');
    expect(await page.locator('a:has-text("CSV")').getAttribute('href')).toMatch(/^\/admin\/api\/audit\?key=key_[^&]+&format=csv$/);
    await page.screenshot({ path: `${ARTIFACTS}write-audit.png`, fullPage: true });
    await expectFits(page, ARTIFACTS, 'write-audit');
    expect(problems).toEqual([]);
    await context.close();
  });

  it('suspends a key from its page and unsuspends it, each seen by the proxy within a second', async () => {
    const secret = proxy.issueKey('browser-suspended');
    const id = keyId('browser-suspended');
    expect((await chat(secret)).status).toBe(200);
    const { context, page } = await newPage();
    await login(page, operatorToken);
    await page.goto(`${proxy.server.url}/dashboard/keys/${id}`);
    expect(await page.locator('form[action$="/unsuspend"]').count()).toBe(0);

    await page.click('form[action$="/suspend"] button');
    await page.waitForURL(/done=suspended/);
    const suspended = Date.now();
    let answer = await chat(secret);
    while (answer.status !== 403 && Date.now() - suspended < 1000) answer = await chat(secret);
    expect(answer).toEqual({ status: 403, code: 'key_suspended' });
    expect(await page.locator('[data-bind="key.status"]').innerText()).toBe('suspended');
    await page.screenshot({ path: `${ARTIFACTS}write-suspended.png`, fullPage: true });

    await page.click('form[action$="/unsuspend"] button');
    await page.waitForURL(/done=unsuspended/);
    const lifted = Date.now();
    answer = await chat(secret);
    while (answer.status !== 200 && Date.now() - lifted < 1000) answer = await chat(secret);
    expect(answer.status).toBe(200);
    expect(await page.locator('[data-bind="key.status"]').innerText()).toBe('active');
    expect(problems).toEqual([]);
    await context.close();
  });

  it('is not moved by a form of another site, nor by a post with another origin', async () => {
    const id = keyId('acme-key');
    const { context, page } = await newPage();
    await login(page, operatorToken);
    // The page's own CSRF token, in a post that says it comes from elsewhere (a browser ignoring SameSite).
    await page.goto(`${proxy.server.url}/dashboard/keys/${id}`);
    const csrf = await page.locator('form[action$="/revoke"] input[name="_csrf"]').inputValue();
    const forged = await page.request.post(`${proxy.server.url}/dashboard/keys/${id}/revoke`, {
      form: { _csrf: csrf },
      headers: { origin: evilUrl.replace(/\/$/, '') },
      maxRedirects: 0,
    });
    expect(forged.status()).toBe(403);
    // A real cross-site form post from the other site's page: the Strict cookie stays home, nothing changes.
    evilTarget = `${proxy.server.url}/dashboard/keys/${id}/revoke`;
    await page.goto(evilUrl);
    await page.click('button');
    await page.waitForURL(/\/dashboard\/login/);
    expect(await page.locator('h1').innerText()).toBe('Tollgate dashboard');
    await page.goto(`${proxy.server.url}/dashboard/keys/${id}`);
    expect(await page.locator('[data-bind="key.status"]').innerText()).toBe('active');
    await context.close();
  });
});

describe('read-only sessions', () => {
  it('a viewer sees no write buttons, and its direct post is refused', async () => {
    const id = keyId('acme-key');
    const { context, page } = await newPage();
    await login(page, viewerToken);
    await page.goto(`${proxy.server.url}/dashboard/keys`);
    expect(await page.locator('a:has-text("New key")').count()).toBe(0);
    expect(await page.locator('a:has-text("Audit trail")').count()).toBe(1);
    await page.goto(`${proxy.server.url}/dashboard/keys/${id}`);
    expect(await page.locator('[data-actions], form[action$="/revoke"], input[name="_csrf"]').count()).toBe(0);
    await page.screenshot({ path: `${ARTIFACTS}write-viewer.png`, fullPage: true });
    const direct = await page.request.post(`${proxy.server.url}/dashboard/keys/${id}/revoke`, {
      form: { _csrf: 'anything' },
      headers: { origin: proxy.server.url },
      maxRedirects: 0,
    });
    expect(direct.status()).toBe(403);
    expect((await page.goto(`${proxy.server.url}/dashboard/keys/${id}/edit`))?.status()).toBe(403);
    await page.goto(`${proxy.server.url}/dashboard/keys/${id}`);
    expect(await page.locator('[data-bind="key.status"]').innerText()).toBe('active');
    await context.close();
  });

  it('a tenant sees no write buttons, and its direct post is refused', async () => {
    const id = keyId('acme-key');
    const issued = await cli('--db', proxy.dbPath, 'dashboard-token', 'create', '--tenant', 'acme', '--json');
    expect(issued.code, issued.stderr).toBe(0);
    const { context, page } = await newPage();
    await login(page, issued.json<{ token: string }>().token);
    await page.goto(`${proxy.server.url}/dashboard/keys`);
    expect(await page.locator('a:has-text("New key")').count()).toBe(0);
    await page.goto(`${proxy.server.url}/dashboard/keys/${id}`);
    expect(await page.locator('[data-actions], form[action$="/revoke"], input[name="_csrf"]').count()).toBe(0);
    await page.screenshot({ path: `${ARTIFACTS}write-tenant.png`, fullPage: true });
    const direct = await page.request.post(`${proxy.server.url}/dashboard/keys/${id}/revoke`, {
      form: { _csrf: 'anything' },
      headers: { origin: proxy.server.url },
      maxRedirects: 0,
    });
    expect(direct.status()).toBe(403);
    expect((await page.goto(`${proxy.server.url}/dashboard/new-key`))?.status()).toBe(403);
    await page.goto(`${proxy.server.url}/dashboard/keys/${id}`);
    expect(await page.locator('[data-bind="key.status"]').innerText()).toBe('active');
    await context.close();
  });
});
