/**
 * What a batch check reports, in the shape of OpenAI's batch validation errors (the batch object's
 * `errors.data[]`: `code`, `message`, `line`, `param`), and the set of `custom_id`s a batch has
 * used. Pure.
 */
import { createHash } from 'node:crypto';

/**
 * One reason a batch is refused. Codes follow OpenAI's batch validation where it has one
 * (`invalid_json_line`, `duplicate_custom_id`, `url_mismatch`, `model_mismatch`, `empty_file`,
 * `too_many_tasks`); the rest are Tollgate's own (`line_too_long`, `file_too_large`) or the
 * estimate's (`invalid_type`, `invalid_value`, `missing_required_parameter`,
 * `context_length_exceeded`, `nesting_too_deep`: src/estimate/errors.ts).
 */
export interface BatchError {
  readonly code: string;
  readonly message: string;
  /** 1-based line of the input file; null for Anthropic's `requests` items (`param` names the item) and for the file as a whole. */
  readonly line: number | null;
  /** The field at fault, e.g. `custom_id`, `body.model`, `requests[3].params.max_tokens`; null when none. */
  readonly param: string | null;
}

/** A check's answer: the value, or why not. Expected failures are values, never throws. */
export type BatchResult<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly error: BatchError };

/** A failed {@link BatchResult}. */
export function refused(code: string, message: string, line: number | null, param: string | null): { readonly ok: false; readonly error: BatchError } {
  return { ok: false, error: { code, message, line, param } };
}

/** Ids this long or shorter are kept as they are; longer ones as their SHA-256 (Anthropic's are at most 64 characters). */
const KEPT_AS_IS = 64;

/**
 * The `custom_id`s seen so far. Its size is bounded by the batch's request limit (50,000 or
 * 100,000 ids), and a long id costs 64 characters at most: ids longer than that are kept as their
 * SHA-256 digest, so a file of huge ids holds no more than one of short ones.
 */
export class CustomIds {
  readonly #seen = new Set<string>();

  /** Adds `id`; false when it was already there. */
  add(id: string): boolean {
    // Distinct prefixes: a short id can never equal a long one's digest.
    const key = id.length <= KEPT_AS_IS ? `=${id}` : `#${createHash('sha256').update(id).digest('base64')}`;
    if (this.#seen.has(key)) return false;
    this.#seen.add(key);
    return true;
  }

  get size(): number {
    return this.#seen.size;
  }
}
