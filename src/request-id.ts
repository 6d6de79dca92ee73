/**
 * Request ids, the ledger's key: time-ordered, unique across processes (a
 * random per-process tag) and cheap (a counter, no random bytes per request).
 */
import { randomBytes } from 'node:crypto';

const PROCESS_TAG = randomBytes(6).toString('hex');
let sequence = 0;

export function newRequestId(): string {
  sequence = (sequence + 1) % 0x1000000;
  return `req_${Date.now().toString(36)}${PROCESS_TAG}${sequence.toString(36).padStart(5, '0')}`;
}
