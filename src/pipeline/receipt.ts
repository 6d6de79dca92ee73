/**
 * A receipt on every answer (docs/ledger-and-exports.md, "Receipts"): what the request cost and
 * what it held while it ran, to the micro-dollar the ledger row says. A JSON answer carries it in
 * headers (its body is read whole before the headers go out); a stream ends with it as an SSE
 * comment line after its last event, which SSE clients skip (the WHATWG event-stream format: a
 * line beginning with a colon is ignored). Every SSE dialect takes the same comment.
 */
import { formatMicrosFixed } from '../domain/money.js';
import type { AdmittedRequest } from './context.js';

/** The receipt headers of a JSON answer. */
const COST_HEADER = 'x-tollgate-cost-usd';
const RESERVED_HEADER = 'x-tollgate-reserved-usd';

/** Adds the receipt to a settled request's response headers (none while its settlement is deferred: a background Response). */
export function addReceiptHeaders(headers: Record<string, string>, request: AdmittedRequest): Record<string, string> {
  const cost = request.costMicros;
  if (cost === undefined) return headers;
  headers[COST_HEADER] = formatMicrosFixed(cost);
  headers[RESERVED_HEADER] = formatMicrosFixed(request.reservation.microUsd);
  return headers;
}

/** The comment that ends a settled request's stream: `: tollgate cost_usd=… reserved_usd=… request_id=…` and a blank line. */
export function receiptComment(request: AdmittedRequest): Uint8Array | null {
  const cost = request.costMicros;
  if (cost === undefined) return null;
  const reserved = formatMicrosFixed(request.reservation.microUsd);
  return Buffer.from(`: tollgate cost_usd=${formatMicrosFixed(cost)} reserved_usd=${reserved} request_id=${request.requestId}\n\n`);
}
