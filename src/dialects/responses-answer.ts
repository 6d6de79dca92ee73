/**
 * A Responses API answer as the proxy reads it when the answer is stored upstream: the
 * response's id, and the ids of its output items (they become the key's:
 * src/pipeline/ownership.ts). Pure.
 */
import type { StoredAnswers } from './dialect.js';

const LEADING_ID = /^\s*\{\s*"id"\s*:\s*"([^"\\]{1,200})"/;

/**
 * The id of a response object in a JSON answer. OpenAI writes `id` first, so
 * the answer's first bytes are enough; any other order is parsed in full.
 */
export function responseIdOfJson(bytes: Buffer): string | undefined {
  const leading = LEADING_ID.exec(bytes.toString('utf8', 0, Math.min(bytes.length, 256)));
  if (leading) return leading[1];
  try {
    const id = (JSON.parse(bytes.toString('utf8')) as { id?: unknown } | null)?.id;
    return typeof id === 'string' && id !== '' ? id : undefined;
  } catch {
    return undefined;
  }
}

/** The answer parsed as a response object, or undefined. */
export function parseResponseObject(bytes: Buffer): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(bytes.toString('utf8'));
    return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** Ids of the items in a response object's `output` (or of a list page's `data`). */
export function outputItemIds(response: Record<string, unknown> | undefined, field: 'output' | 'data' = 'output'): string[] {
  const items = response?.[field];
  if (!Array.isArray(items)) return [];
  const ids: string[] = [];
  for (const item of items) {
    const id = (item as { id?: unknown } | null)?.id;
    if (typeof id === 'string' && id !== '') ids.push(id);
  }
  return ids;
}

/** The output item ids of a JSON answer. */
function itemIdsOfJson(bytes: Buffer): string[] {
  return outputItemIds(parseResponseObject(bytes));
}

/** How a Responses answer names what is stored. */
export const RESPONSES_STORED: StoredAnswers = { idOfJson: responseIdOfJson, itemIdsOfJson };
