/**
 * Typed reads of untrusted parsed JSON. Every read names its path so a wrong type becomes an
 * {@link EstimateInputError} whose `param` points at the field, the way OpenAI's 400s do.
 */
import { EstimateInputError } from './errors.js';

/** A JSON object (not an array, not null). */
export type JsonObject = Record<string, unknown>;

/** Deepest nesting we walk (JSON schemas, generic items); deeper input is rejected, never recursed. */
export const MAX_NESTING_DEPTH = 64;

/** True for a plain JSON object. */
export function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function describeType(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value;
}

/** Throws `invalid_type` for `param`. */
export function failType(param: string, expected: string, value: unknown): never {
  throw new EstimateInputError(`Invalid type for '${param}': expected ${expected}, but got ${describeType(value)}.`, param, 'invalid_type');
}

/** Reads an object or throws. */
export function readObject(value: unknown, param: string): JsonObject {
  if (!isJsonObject(value)) failType(param, 'an object', value);
  return value;
}

/** Reads an array or throws. */
export function readArray(value: unknown, param: string): unknown[] {
  if (!Array.isArray(value)) failType(param, 'an array', value);
  return value;
}

/** Reads a string or throws. */
export function readString(value: unknown, param: string): string {
  if (typeof value !== 'string') failType(param, 'a string', value);
  return value;
}

/** Reads an optional string: undefined and null mean absent. */
export function readOptionalString(value: unknown, param: string): string | undefined {
  if (value === undefined || value === null) return undefined;
  return readString(value, param);
}

/** Reads an optional positive integer (`max_tokens`, `n`, …): undefined and null mean absent. */
export function readOptionalPositiveInteger(value: unknown, param: string): number | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'number') failType(param, 'an integer', value);
  if (!Number.isSafeInteger(value) || value < 1) {
    throw new EstimateInputError(`Invalid value for '${param}': expected a positive integer, but got ${String(value)}.`, param, 'invalid_value');
  }
  return value;
}

/** Throws `nesting_too_deep` when a walk goes past {@link MAX_NESTING_DEPTH}. */
export function failDepth(param: string): never {
  throw new EstimateInputError(`'${param}' is nested more than ${MAX_NESTING_DEPTH} levels deep.`, param, 'nesting_too_deep');
}

/** `object[key]` only when it is the object's own field (untrusted keys must not reach the prototype). */
export function readOwnField(object: JsonObject, key: string): unknown {
  return Object.hasOwn(object, key) ? object[key] : undefined;
}
