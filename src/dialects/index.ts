/**
 * Every dialect Tollgate serves, by endpoint (dialect.ts says what a record holds). The route
 * factory (src/pipeline/routes.ts) mounts one route per record; the pipeline finds a request's
 * record by its endpoint.
 */
import type { Endpoint } from '../endpoints.js';
import { ANTHROPIC_MESSAGES } from './anthropic-messages.js';
import { CHAT } from './chat.js';
import { COMPLETIONS } from './completions.js';
import type { Dialect } from './dialect.js';
import { EMBEDDINGS } from './embeddings.js';
import { RESPONSES } from './responses.js';

export type { Dialect } from './dialect.js';
export { ANTHROPIC_MESSAGES, CHAT };

/** The records by endpoint name. */
export const DIALECTS: Readonly<Record<Endpoint, Dialect>> = {
  chat: CHAT,
  completions: COMPLETIONS,
  embeddings: EMBEDDINGS,
  responses: RESPONSES,
  messages: ANTHROPIC_MESSAGES,
};

/** The record of a request's endpoint. */
export function dialectOf(endpoint: Endpoint): Dialect {
  return DIALECTS[endpoint];
}
