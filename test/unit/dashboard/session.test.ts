/** The signed session value on its own: what it holds, and every way a forged or stale one is refused. */
import { describe, expect, it } from 'vitest';
import { checkSessionValue, createSessionValue, SESSION_TTL_MS } from '../../../src/dashboard/index.js';

const TOKEN = 'session-test-admin-token-0123456789';
const NOW = Date.parse('2026-11-18T15:00:00Z');

describe('dashboard session values', () => {
  it('verify for the token that signed them until they expire', () => {
    const value = createSessionValue(TOKEN, NOW);
    expect(checkSessionValue(value, TOKEN, NOW)).toBe('valid');
    expect(checkSessionValue(value, TOKEN, NOW + SESSION_TTL_MS - 1)).toBe('valid');
    expect(checkSessionValue(value, TOKEN, NOW + SESSION_TTL_MS)).toBe('expired');
  });

  it('are different every time and hold neither the token nor anything derived from it in clear', () => {
    const a = createSessionValue(TOKEN, NOW);
    const b = createSessionValue(TOKEN, NOW);
    expect(a).not.toBe(b);
    for (const value of [a, b]) {
      expect(value).not.toContain(TOKEN);
      expect(value).toMatch(/^v1\.[0-9a-z]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{43}$/);
    }
  });

  it('are refused when signed with another token, altered, or malformed', () => {
    const value = createSessionValue(TOKEN, NOW);
    const [version, expiry, nonce, mac] = value.split('.') as [string, string, string, string];
    expect(checkSessionValue(value, 'another-admin-token-0123456789', NOW)).toBe('bad_signature');
    expect(checkSessionValue(`${version}.${(parseInt(expiry, 36) + 1).toString(36)}.${nonce}.${mac}`, TOKEN, NOW)).toBe('bad_signature');
    expect(checkSessionValue(`${version}.${expiry}.${nonce.slice(1)}A.${mac}`, TOKEN, NOW)).toBe('bad_signature');
    expect(checkSessionValue(`v2.${expiry}.${nonce}.${mac}`, TOKEN, NOW)).toBe('malformed');
    expect(checkSessionValue(`${version}.${expiry}.${nonce}`, TOKEN, NOW)).toBe('malformed');
    expect(checkSessionValue(`${version}.${expiry}.${nonce}.${mac}.x`, TOKEN, NOW)).toBe('malformed');
    expect(checkSessionValue(`${version}.${expiry}.${nonce}.${mac.slice(1)}`, TOKEN, NOW)).toBe('malformed');
    expect(checkSessionValue(undefined, TOKEN, NOW)).toBe('missing');
    expect(checkSessionValue('', TOKEN, NOW)).toBe('missing');
  });

  it('are refused when their (signed) expiry lies further ahead than a session lasts', () => {
    // Made "in the future" (a clock far ahead): not something this server issued now.
    const value = createSessionValue(TOKEN, NOW + 10 * SESSION_TTL_MS);
    expect(checkSessionValue(value, TOKEN, NOW)).toBe('expired');
  });
});
