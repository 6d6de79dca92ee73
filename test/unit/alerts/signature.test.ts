/** Webhook signatures (src/alerts/signature.ts): what docs/alerts.md tells receivers to check. */
import fc from 'fast-check';
import { createHmac } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { signPayload, verifySignature } from '../../../src/alerts/signature.js';

const NOW = Date.parse('2026-11-22T10:00:00Z');
const secret = fc.string({ minLength: 16, maxLength: 64 });

describe('webhook signatures', () => {
  it('verify for the body and secret they were made with, and for nothing else', () => {
    fc.assert(
      fc.property(secret, secret, fc.string(), fc.string({ minLength: 1 }), (s, other, body, tamper) => {
        const header = signPayload(s, body, NOW);
        expect(verifySignature(s, header, body, NOW)).toBe(true);
        if (other !== s) expect(verifySignature(other, header, body, NOW)).toBe(false);
        expect(verifySignature(s, header, body + tamper, NOW)).toBe(false);
      }),
    );
  });

  it('are HMAC-SHA256 over "<t>.<body>", as documented', () => {
    const header = signPayload('whsec-0123456789abcdef', '{"a":1}', NOW);
    const t = Math.floor(NOW / 1000);
    expect(header).toBe(`t=${t},v1=${createHmac('sha256', 'whsec-0123456789abcdef').update(`${t}.{"a":1}`).digest('hex')}`);
  });

  it('refuse an old or future timestamp and malformed headers', () => {
    const header = signPayload('whsec-0123456789abcdef', 'body', NOW);
    expect(verifySignature('whsec-0123456789abcdef', header, 'body', NOW + 301_000)).toBe(false);
    expect(verifySignature('whsec-0123456789abcdef', header, 'body', NOW - 301_000)).toBe(false);
    expect(verifySignature('whsec-0123456789abcdef', header, 'body', NOW + 299_000)).toBe(true);
    for (const bad of ['', 't=1', 'v1=00', `t=x,v1=${'0'.repeat(64)}`, `t=${NOW / 1000},v1=zz`])
      expect(verifySignature('whsec-0123456789abcdef', bad, 'body', NOW)).toBe(false);
  });
});

describe("docs/alerts.md's verification snippet", () => {
  it('accepts what Tollgate signs and refuses a tampered body or a wrong secret', async () => {
    const alertsDoc = readFileSync(fileURLToPath(new URL('../../../docs/alerts.md', import.meta.url)), 'utf8');
    const snippet = /```js\n(import \{ createHmac, timingSafeEqual \}[\s\S]*?function verifyTollgate[\s\S]*?)```/.exec(alertsDoc)?.[1];
    expect(snippet).toBeDefined();
    const dir = mkdtempSync(join(tmpdir(), 'tollgate-snippet-'));
    try {
      const file = join(dir, 'verify.mjs');
      writeFileSync(file, `${snippet}\nexport { verifyTollgate };\n`);
      const { verifyTollgate } = (await import(pathToFileURL(file).href)) as { verifyTollgate: (s: string, h: string, b: string) => boolean };
      const body = '{"type":"budget.threshold"}';
      const header = signPayload('whsec-0123456789abcdef', body, Date.now());
      expect(verifyTollgate('whsec-0123456789abcdef', header, body)).toBe(true);
      expect(verifyTollgate('whsec-0123456789abcdef', header, `${body} `)).toBe(false);
      expect(verifyTollgate('whsec-other-0123456789', header, body)).toBe(false);
      expect(verifyTollgate('whsec-0123456789abcdef', signPayload('whsec-0123456789abcdef', body, Date.now() - 600_000), body)).toBe(false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
