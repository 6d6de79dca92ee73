/**
 * Who a request was made for, and under which tags: read from the request,
 * bounded and validated (like the model name, src/http/client-strings.ts:
 * these strings become ledger fields, rollup keys, Redis keys and bucket ids,
 * so an unbounded or odd one would grow all of them). Pure.
 *
 * - The end user: the `x-tollgate-user` header, else the body's `user` (chat,
 *   completions, responses, embeddings), else its `safety_identifier` (the
 *   field OpenAI introduced in place of `user`). The header wins so an app's
 *   server can name the user without changing bodies it forwards.
 * - Tags: the `x-tollgate-tags: a,b` header, else `metadata.tags` in the body
 *   (`"a,b"`: OpenAI's `metadata` values are strings).
 *
 * A bad header or tag is a 400 `invalid_value` naming the field, never
 * truncated silently: a user cut to its first 128 characters would share
 * another's budget. The body's `user` is different: OpenAI accepts any string
 * there and SDKs fill it from app data, so refusing one OpenAI takes would
 * break clients; an odd or long one is recorded as its digest instead
 * (`sha256:` and 32 hex digits: bounded, stable, distinct per user).
 */
import { createHash } from 'node:crypto';
import { TollgateError } from '../domain/errors.js';
import { TAG_PATTERN } from '../domain/policy.js';
import { readSession } from './session.js';

/** Longest end-user id accepted (OpenAI's `safety_identifier` is at most 64; hashed emails fit). */
export const MAX_END_USER_CHARS = 128;
/** Most tags one request may carry. */
export const MAX_TAGS = 10;

/**
 * End-user ids: letters, digits and `. _ : / @ + = -` (emails, UUIDs,
 * hashes, `org/user`), starting with a letter or digit. No spaces, commas, `|`,
 * braces (Redis hash tags) or control characters.
 */
const END_USER = /^[A-Za-z0-9][A-Za-z0-9._:/@+=-]*$/;

const USER_HEADER = 'x-tollgate-user';
const TAGS_HEADER = 'x-tollgate-tags';

export interface Attribution {
  /** The end user, or undefined when the request names none. */
  readonly endUser: string | undefined;
  /** Distinct tags, in the order given. */
  readonly tags: readonly string[];
  /** The agent session (session.ts), or undefined when the request names none. */
  readonly session?: string | undefined;
}

const NO_ATTRIBUTION: Attribution = Object.freeze({ endUser: undefined, tags: Object.freeze([]) as readonly string[] });

type HeaderValue = string | string[] | undefined;

/** The request's end user, tags and session; throws TollgateError 400 for malformed ones. */
export function readAttribution(body: Record<string, unknown>, headers: Readonly<Record<string, HeaderValue>>): Attribution {
  const endUser = readEndUser(body, headers[USER_HEADER]);
  const tags = readTags(body, headers[TAGS_HEADER]);
  const session = readSession(headers);
  if (endUser === undefined && tags.length === 0 && session === undefined) return NO_ATTRIBUTION;
  return session === undefined ? { endUser, tags } : { endUser, tags, session };
}

function readEndUser(body: Record<string, unknown>, header: HeaderValue): string | undefined {
  if (header !== undefined) return checkEndUser(single(header, USER_HEADER).trim(), USER_HEADER);
  for (const field of ['user', 'safety_identifier'] as const) {
    const value = body[field];
    if (value === undefined || value === null) continue;
    if (typeof value !== 'string') throw new TollgateError('invalid_type', `${field} must be a string.`, { param: field });
    if (value === '') continue; // an empty user is no user, as OpenAI treats it
    return endUserProblem(value) === undefined ? value : endUserDigest(value);
  }
  return undefined;
}

/** Why an end-user id is refused, or undefined when it is acceptable. */
function endUserProblem(value: string): string | undefined {
  if (value.length > MAX_END_USER_CHARS) return `must be at most ${MAX_END_USER_CHARS} characters`;
  if (!END_USER.test(value)) return 'may contain only letters, digits and . _ : / @ + = - (starting with a letter or digit)';
  return undefined;
}

/** The id recorded for a body `user` outside the alphabet or length. */
function endUserDigest(value: string): string {
  return `sha256:${createHash('sha256').update(value).digest('hex').slice(0, 32)}`;
}

function checkEndUser(value: string, param: string): string {
  const problem = endUserProblem(value);
  if (problem !== undefined) throw new TollgateError('invalid_value', `${param} ${problem}.`, { param });
  return value;
}

function readTags(body: Record<string, unknown>, header: HeaderValue): string[] {
  if (header !== undefined) return parseTags(single(header, TAGS_HEADER), TAGS_HEADER);
  const metadata = body.metadata;
  if (metadata === undefined || metadata === null || typeof metadata !== 'object' || Array.isArray(metadata)) return [];
  const tags = (metadata as Record<string, unknown>).tags;
  if (tags === undefined || tags === null) return [];
  if (typeof tags !== 'string') throw new TollgateError('invalid_type', 'metadata.tags must be a string of comma-separated tags.', { param: 'metadata.tags' });
  return parseTags(tags, 'metadata.tags');
}

/** `a, b,a` → [a, b]: trimmed, empty parts skipped, duplicates dropped; throws for bad tags or too many. */
function parseTags(text: string, param: string): string[] {
  const tags: string[] = [];
  for (const part of text.split(',')) {
    const tag = part.trim();
    if (tag === '' || tags.includes(tag)) continue;
    if (!TAG_PATTERN.test(tag)) {
      const shown = tag.length > 32 ? `${tag.slice(0, 32)}…` : tag;
      throw new TollgateError(
        'invalid_value',
        `${param}: tag ${JSON.stringify(shown)} may contain only letters, digits and . _ : / @ + = - (starting with a letter or digit, at most 64 characters).`,
        { param },
      );
    }
    tags.push(tag);
    if (tags.length > MAX_TAGS) throw new TollgateError('invalid_value', `${param}: at most ${MAX_TAGS} tags per request.`, { param });
  }
  return tags;
}

function single(value: string | string[], param: string): string {
  if (!Array.isArray(value)) return value;
  if (value.length === 1) return value[0]!;
  throw new TollgateError('invalid_value', `Send the ${param} header once.`, { param });
}
