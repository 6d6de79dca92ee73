/**
 * Stored responses (`/v1/responses` with `store`): which key owns each one
 * and its items, what continuing one bills, and which background jobs still
 * wait for their usage. Every node keeps its own in its SQLite file
 * (src/storage/sqlite/responses.ts: written without a network round trip,
 * claimed by the process polling each job); on a replica, what the other
 * nodes stored is looked up in PostgreSQL (src/storage/postgres/responses.ts),
 * where the shipper copies each node's rows (src/storage/postgres/shipper.ts).
 */

// The store itself is the node's SQLite file (sqlite/responses.ts: ResponseStore), which on a replica
// asks SharedResponses for what it does not hold.

/** A background job nobody polls, with what its ledger row says about it. */
export interface UnclaimedJob {
  readonly responseId: string;
  readonly requestId: string;
  readonly keyId: string;
  readonly createdAt: number;
  readonly model: string;
  readonly estPromptTokens: number;
  readonly estCompletionTokens: number;
  readonly estCostMicros: number;
  readonly upstreamRequestId: string | null;
  /** The ledger row is still pending (false: settled elsewhere, only the flag is left). */
  readonly pending: boolean;
}

export interface NewResponse {
  readonly id: string;
  readonly keyId: string;
  readonly requestId: string;
  readonly createdAt: number;
  readonly background: boolean;
  readonly claimedUntil: number;
  /** An item of this response (its rows inherit the response's key, request and time). */
  readonly itemOf?: string | undefined;
  /** Input plus output tokens its settled usage reported, once known. */
  billedTokens?: number | undefined;
}

/** A stored response as a request that continues it needs it: whose it is, and what it bills again. */
export interface StoredResponse {
  readonly keyId: string;
  /** Its input plus output tokens as settled, or undefined while unknown. */
  readonly billedTokens: number | undefined;
}

/** A response (or an item of one) as another node stored it. */
export interface SharedResponseRow {
  readonly id: string;
  readonly keyId: string;
  readonly requestId: string;
  readonly createdAt: number;
  /** Input plus output tokens as settled, or undefined while unknown. */
  readonly billedTokens: number | undefined;
  /** The response an item belongs to (items only). */
  readonly itemOf: string | undefined;
}

/**
 * What every node stored (a replica's PostgreSQL). Not answering is a 503
 * `ledger_unavailable` the SDKs retry, never a 404 that may be wrong.
 */
export interface SharedResponses {
  /** A response (not an item), unless unknown or deleted. */
  response(id: string): Promise<SharedResponseRow | undefined>;
  /** The items among `ids` (unknown and deleted ones left out). */
  items(ids: readonly string[]): Promise<SharedResponseRow[]>;
}
