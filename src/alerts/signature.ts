/**
 * Webhook signatures: `x-tollgate-signature: t=<unix seconds>,v1=<hex>`
 * where v1 is HMAC-SHA256 of `<t>.<raw body>` with the webhook's secret, as
 * the README's "Alerts" section tells receivers to check. The timestamp is
 * signed so an old delivery cannot be replayed later.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

export const SIGNATURE_HEADER = 'x-tollgate-signature';

/** The header value for `body` sent at `nowMs`. */
export function signPayload(secret: string, body: string, nowMs: number): string {
  const t = Math.floor(nowMs / 1000);
  return `t=${t},v1=${createHmac('sha256', secret).update(`${t}.${body}`).digest('hex')}`;
}

/** True when `header` signs `body` with `secret` and its time is within `toleranceSec` of `nowMs`. */
export function verifySignature(secret: string, header: string, body: string, nowMs: number, toleranceSec = 300): boolean {
  const parts = new Map(header.split(',').map((part) => [part.slice(0, part.indexOf('=')).trim(), part.slice(part.indexOf('=') + 1).trim()]));
  const t = Number(parts.get('t'));
  const given = parts.get('v1') ?? '';
  if (!Number.isInteger(t) || Math.abs(nowMs / 1000 - t) > toleranceSec || !/^[0-9a-f]{64}$/.test(given)) return false;
  const expected = createHmac('sha256', secret).update(`${t}.${body}`).digest();
  return timingSafeEqual(expected, Buffer.from(given, 'hex'));
}
