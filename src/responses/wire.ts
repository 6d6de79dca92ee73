/**
 * The Responses API's lifecycle on the wire, as the proxy reads it: response
 * ids and statuses, the query parameters each lifecycle call takes, and the
 * API's own "not found" answer. Pure.
 */
import { TollgateError } from '../domain/errors.js';
import { outputItemIds } from '../dialects/responses-answer.js';
import { readUsage } from '../dialects/usage.js';

export { outputItemIds, parseResponseObject, responseIdOfJson } from '../dialects/responses-answer.js';

/** Statuses after which a response changes no more (its usage is final). */
const TERMINAL = new Set(['completed', 'failed', 'cancelled', 'incomplete']);

export function isTerminal(status: unknown): boolean {
  return typeof status === 'string' && TERMINAL.has(status);
}

/**
 * What a response object tells about continuing it: the input plus output
 * tokens its usage reports (billed again as input by a request that continues
 * it), and its output items.
 */
export function answerFacts(response: Record<string, unknown>): { billedTokens: number | undefined; itemIds: string[] } {
  const usage = readUsage(response.usage);
  return { billedTokens: usage === undefined ? undefined : usage.promptTokens + usage.completionTokens, itemIds: outputItemIds(response) };
}

/** The lifecycle calls the proxy passes on. */
export type LifecycleCall = 'retrieve' | 'cancel' | 'delete' | 'input_items';

/** Query parameters the API defines per call; anything else is not forwarded. */
const QUERY_PARAMS: Readonly<Record<LifecycleCall, ReadonlySet<string>>> = {
  retrieve: new Set(['include', 'include[]', 'include_obfuscation', 'starting_after', 'stream']),
  cancel: new Set(),
  delete: new Set(),
  input_items: new Set(['after', 'include', 'include[]', 'limit', 'order']),
};

/** The query string to forward (with its `?`, or empty). */
export function forwardedQuery(call: LifecycleCall, url: string): string {
  const query = new URL(url).searchParams;
  const kept = new URLSearchParams();
  for (const [name, value] of query) if (QUERY_PARAMS[call].has(name)) kept.append(name, value);
  const text = kept.toString();
  return text === '' ? '' : `?${text}`;
}

/** The API's answer for a response that does not exist — or that belongs to another key. */
export function responseNotFound(id: string): TollgateError {
  return new TollgateError('response_not_found', `Response with id '${id.slice(0, 200)}' not found.`);
}
