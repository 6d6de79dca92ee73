/** URLs as Tollgate prints them: where, never with what credentials. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { redactUrl, redactUrlsIn } from '../../src/redact-url.js';

describe('redactUrl', () => {
  it.each([
    ['https://user:pass@gateway.example/v1', 'https://***@gateway.example/v1'],
    ['https://sk-only-a-key@gateway.example/v1', 'https://***@gateway.example/v1'],
    ['https://gateway.example/v1?api-key=sk-123&api-version=2024-10-21', 'https://gateway.example/v1?api-key=***&api-version=2024-10-21'],
    ['https://r.openai.azure.com/openai?key=abc&sig=def&sv=2022', 'https://r.openai.azure.com/openai?key=***&sig=***&sv=2022'],
    ['https://gateway.example/v1?access_token=t0k&token=x&Password=y', 'https://gateway.example/v1?access_token=***&token=***&Password=***'],
    ['redis://:hunter2@cache.internal:6379/0', 'redis://***@cache.internal:6379/0'],
    ['rediss://default:hunter2@cache.internal:6380', 'rediss://***@cache.internal:6380'],
    ['postgres://tollgate:s3cret@db.internal:5432/tollgate?sslmode=require', 'postgres://***@db.internal:5432/tollgate?sslmode=require'],
    ['postgresql://db.internal/tollgate?password=s3cret', 'postgresql://db.internal/tollgate?password=***'],
  ])('%s → %s', (given, shown) => {
    expect(redactUrl(given)).toBe(shown);
  });

  it('leaves a URL without credentials exactly as given', () => {
    for (const url of ['https://api.openai.com/v1', 'http://127.0.0.1:8787', 'redis://127.0.0.1:6379', 'https://x.example/v1?api-version=2024-10-21']) {
      expect(redactUrl(url)).toBe(url);
    }
  });

  it('redacts text that is not a well-formed URL too', () => {
    expect(redactUrl('redis://:p@ss@bad host:1')).not.toContain('p@ss');
    expect(redactUrl('not a url?key=abc&x=1')).toBe('not a url?key=***&x=1');
  });

  it('never lets the userinfo or a secret parameter through, whatever they hold', () => {
    const secret = fc.stringMatching(/^[A-Za-z0-9._~%!$&'()*+;=:-]{1,24}$/).map((text) => `Zq${text}`);
    fc.assert(
      fc.property(
        fc.constantFrom('https', 'http', 'redis', 'rediss', 'postgres'),
        secret,
        secret,
        fc.constantFrom('key', 'api-key', 'api_key', 'token', 'secret', 'password', 'sig', 'client_secret'),
        secret,
        (scheme, user, password, parameter, value) => {
          const url = `${scheme}://${encodeURIComponent(user)}:${encodeURIComponent(password)}@host.example:1234/v1?${parameter}=${encodeURIComponent(value)}&model=x`;
          const shown = redactUrl(url);
          for (const part of [user, password, value]) {
            expect(shown).not.toContain(part);
            expect(shown).not.toContain(encodeURIComponent(part));
          }
          expect(shown).toContain('host.example:1234/v1');
          expect(shown).toContain('model=x');
        },
      ),
    );
  });
});

describe('redactUrlsIn', () => {
  it('redacts every URL in a message and keeps the rest', () => {
    expect(redactUrlsIn('cannot reach https://u:p@a.example/v1: connect ECONNREFUSED (then redis://:pw@b.example:6379)')).toBe(
      'cannot reach https://***@a.example/v1: connect ECONNREFUSED (then redis://***@b.example:6379)',
    );
    expect(redactUrlsIn('seeds redis://:a1@n1:7000,redis://:b2@n2:7001')).toBe('seeds redis://***@n1:7000,redis://***@n2:7001');
    expect(redactUrlsIn('no URL here')).toBe('no URL here');
  });
});
