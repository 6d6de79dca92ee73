/**
 * The API endpoints Tollgate proxies and bills, and where clients reach them.
 * The one declaration of `Endpoint`: estimation, the wire readers, the ledger
 * and the metrics all name requests by it.
 */

/** The OpenAI-compatible endpoints, served by one route each (src/pipeline/routes.ts). */
export const ENDPOINTS = ['chat', 'completions', 'embeddings', 'responses'] as const;

/** A billed endpoint: one of OpenAI's, or Anthropic's Messages API (`messages`, src/anthropic). */
export type Endpoint = (typeof ENDPOINTS)[number] | 'messages';

/** Client paths of the billed endpoints. */
export const ENDPOINT_PATHS: Readonly<Record<Endpoint, string>> = {
  chat: '/v1/chat/completions',
  completions: '/v1/completions',
  embeddings: '/v1/embeddings',
  responses: '/v1/responses',
  messages: '/v1/messages',
};
