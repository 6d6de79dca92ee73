/**
 * Prompt tokens of the legacy completions and the embeddings endpoints. Both accept a string, an
 * array of strings, an array of token ids, or an array of such arrays; token ids count as given.
 * No per-request overhead is added: neither endpoint has message framing.
 */
import { EstimateInputError } from './errors.js';
import { failType } from './read-body.js';
import type { TextCounter } from './text-counter.js';

/** Tokens of each prompt / input item, in order. */
export interface InputCounts {
  readonly perItem: number[];
  readonly total: number;
}

function isTokenId(value: unknown): boolean {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}

function countTokenArray(values: unknown[], param: string): number {
  for (let i = 0; i < values.length; i++) {
    if (!isTokenId(values[i])) failType(`${param}[${i}]`, 'a token id (non-negative integer)', values[i]);
  }
  return values.length;
}

/**
 * Counts `prompt` (completions) or `input` (embeddings). `param` names the field for errors.
 */
export function countTextInputs(value: unknown, counter: TextCounter, param: string): InputCounts {
  if (value === undefined) {
    throw new EstimateInputError(`Missing required parameter: '${param}'.`, param, 'missing_required_parameter');
  }
  if (typeof value === 'string') {
    const tokens = counter.count(value);
    return { perItem: [tokens], total: tokens };
  }
  if (!Array.isArray(value)) return failType(param, 'a string or an array', value);
  if (value.length === 0) return { perItem: [], total: 0 };
  // A flat array of numbers is one tokenized prompt.
  if (typeof value[0] === 'number') {
    const tokens = countTokenArray(value, param);
    return { perItem: [tokens], total: tokens };
  }
  const perItem: number[] = [];
  let total = 0;
  for (let i = 0; i < value.length; i++) {
    const item: unknown = value[i];
    let tokens: number;
    if (typeof item === 'string') tokens = counter.count(item);
    else if (Array.isArray(item)) tokens = countTokenArray(item, `${param}[${i}]`);
    else return failType(`${param}[${i}]`, 'a string or an array of token ids', item);
    perItem.push(tokens);
    total += tokens;
  }
  return { perItem, total };
}
