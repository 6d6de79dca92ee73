/** The receipt comment a settled stream ends with (src/pipeline/receipt.ts; docs/ledger-and-exports.md, "Receipts"). */
export const RECEIPT_COMMENT = /: tollgate cost_usd=\d+\.\d{6} reserved_usd=\d+\.\d{6} request_id=req_\S+\n\n$/;

/** A stream's text without its receipt comment (unchanged when it has none). */
export function withoutReceipt(text: string): string {
  return text.replace(RECEIPT_COMMENT, '');
}
