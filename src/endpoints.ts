/**
 * The names of the API endpoints Tollgate proxies and bills: the one declaration of `Endpoint`.
 * Estimation (and its worker, which is sent the name), the wire readers, the ledger and the
 * metrics name requests by it. Everything else about an endpoint — its path, its fields, its
 * readers — is its dialect record's (src/dialects/). The names sit on the ground floor, apart
 * from the records, because the estimate, which the records point to, names requests by them too.
 */

/** Every billed endpoint: OpenAI's four, and Anthropic's Messages API (`messages`). */
export const ENDPOINTS = ['chat', 'completions', 'embeddings', 'responses', 'messages'] as const;

/** A billed endpoint. */
export type Endpoint = (typeof ENDPOINTS)[number];
