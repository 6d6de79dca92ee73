/**
 * Tenant keys: `tg-` + 32 random bytes in base62 (43 characters). Only the
 * SHA-256 of the whole key and its first characters are ever stored.
 */
import { createHash, randomBytes } from 'node:crypto';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const KEY_PREFIX = 'tg-';
/** 32 bytes = 256 bits need 43 base62 digits (62^43 > 2^256). */
const KEY_DIGITS = 43;
/** Characters of the key shown to people: `tg-` and 6 more. */
const VISIBLE_PREFIX_LENGTH = KEY_PREFIX.length + 6;

function toBase62(bytes: Buffer, digits: number): string {
  let value = BigInt(`0x${bytes.toString('hex')}`);
  let out = '';
  for (let i = 0; i < digits; i += 1) {
    out = BASE62[Number(value % 62n)]! + out;
    value /= 62n;
  }
  return out;
}

/** A new secret key. */
export function generateKey(): string {
  return KEY_PREFIX + toBase62(randomBytes(32), KEY_DIGITS);
}

/** SHA-256 of the key, hex: what the database stores and lookups use. */
export function hashKey(key: string): string {
  return createHash('sha256').update(key).digest('hex');
}

/** The part of a key safe to show (`tg-AbC12x`). */
export function visiblePrefix(key: string): string {
  return key.slice(0, VISIBLE_PREFIX_LENGTH);
}

/** A short random id with a type prefix, e.g. `key_3kTf9Qa1Zx0p`. */
export function newId(type: 'key' | 'tn'): string {
  return `${type}_${toBase62(randomBytes(9), 12)}`;
}
