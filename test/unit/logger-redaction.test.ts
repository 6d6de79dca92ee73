/** What errors say in the log: a URL an error quotes is shown without its credentials. */
import { describe, expect, it } from 'vitest';
import { captureLogs } from '../support/logs.js';

describe('logged errors', () => {
  it('have the credentials of every URL they quote masked, in err, message and cause', async () => {
    const { logger, raw } = captureLogs('info');
    const quoting = new TypeError('Request cannot be constructed from a URL that includes credentials: https://user:pw-1a@gateway.example/v1');
    (quoting as TypeError & { input?: string }).input = 'https://user:pw-2b@gateway.example/v1?api-key=qk-3c';
    logger.error({ err: quoting }, 'unhandled error');
    logger.warn({ message: 'cannot connect to redis://:pw-4d@cache.internal:6379' }, 'redis connection error');
    logger.warn({ cause: 'TypeError: fetch failed for postgres://tollgate:pw-5e@db.internal/tollgate' }, 'upstream failed');
    logger.flush();
    await new Promise((resolve) => setImmediate(resolve));
    const text = raw.join('\n');
    expect(raw).toHaveLength(3);
    for (const secret of ['pw-1a', 'pw-2b', 'qk-3c', 'pw-4d', 'pw-5e']) expect(text).not.toContain(secret);
    expect(text).toContain('https://***@gateway.example/v1');
    expect(text).toContain('redis://***@cache.internal:6379');
    expect(text).toContain('TypeError');
  });
});
