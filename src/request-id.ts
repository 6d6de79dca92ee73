/**
 * Request ids, the ledger's key: time-ordered, unique across processes (a
 * random per-process tag) and cheap (a counter, no random bytes per request).
 */
import { randomBytes } from 'node:crypto';

const PROCESS_TAG = randomBytes(6).toString('hex');
let sequence = 0;

export function newRequestId(): string {
  sequence = (sequence + 1) % 0x1000000;
  return `req_${base36(Date.now(), 8)}${PROCESS_TAG}${base36(sequence, 5)}`;
}

const DIGITS = '0123456789abcdefghijklmnopqrstuvwxyz';

/**
 * `n.toString(36).padStart(width, '0')` for a whole 0 ≤ n < 36^width, by table: `toString` with a
 * radix calls into V8's runtime (about a microsecond a request for the time's and the sequence's,
 * in a profile of the proxy: docs/performance.md, "Slow paths the profile named"). The time has
 * eight digits from 1973 to 2059.
 */
export function base36(n: number, width: number): string {
  let digits = '';
  let rest = n;
  for (let i = 0; i < width; i += 1) {
    digits = DIGITS[rest % 36]! + digits;
    rest = Math.floor(rest / 36);
  }
  return digits;
}
