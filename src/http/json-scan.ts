/**
 * One pass over a JSON object's bytes, after JSON.parse has accepted them:
 *
 * - **Duplicate keys.** RFC 8259 leaves an object with a repeated name
 *   undefined: JSON.parse keeps the last value, other parsers the first or
 *   both. Tollgate would price one request and the upstream might run
 *   another, so a body with a duplicate key in any object is refused; the
 *   scan names the first one's path. Names compare as decoded strings
 *   (`"a"` and `"\u0061"` are one name).
 * - **The layout of the top level.** Where each member the proxy may read
 *   or change sits, so that every change Tollgate makes before forwarding
 *   splices bytes (src/http/body-splice.ts) instead of re-serialising a
 *   parsed body.
 *
 * Pure and iterative (an explicit stack: no recursion, whatever the
 * nesting). Its input must be valid JSON; what it does with anything else
 * is unspecified.
 */

/** Where one top-level member sits, as byte offsets into the body. */
export interface MemberSpan {
  /** The key's opening quote. */
  readonly keyStart: number;
  /** The value's first byte. */
  readonly valueStart: number;
  /** One past the value's last byte. */
  readonly valueEnd: number;
  /** The previous member's `valueEnd`, or -1 for the first member. */
  readonly prevValueEnd: number;
  /** The next member's `keyStart`, or -1 for the last member. */
  readonly nextKeyStart: number;
}

/** The top level of a JSON object body. */
export interface BodyLayout {
  /** The opening brace. */
  readonly open: number;
  /** Members at the top level. */
  readonly memberCount: number;
  /** The names spans were asked for: the members the proxy may read or change. */
  readonly keys: readonly string[];
  /** Spans of those of them the body has (by decoded name; no prototype). */
  readonly members: Readonly<Record<string, MemberSpan>>;
}

export type JsonScan = { readonly ok: true; readonly layout: BodyLayout } | { readonly ok: false; readonly duplicatePath: string };

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const COMMA = 0x2c;
const COLON = 0x3a;

/**
 * Names of one object are compared as raw bytes (exact for names without
 * escapes: valid UTF-8 spells a string one way) until the object has this
 * many or one name has an escape; from then on as decoded strings in a set.
 */
const RAW_KEYS = 16;

/** One open container. Frames are reused by depth: a body of a million small objects allocates a handful. */
interface Frame {
  object: boolean;
  /** Array: the index of the current element. */
  index: number;
  /** Object: names seen so far, as [start, end) of their quoted bytes, while `set` is undefined. */
  readonly starts: number[];
  readonly ends: number[];
  count: number;
  /** Object: decoded names, once compared that way. */
  set: Set<string> | undefined;
  /** Object: the current member's key, quotes included (for error paths). */
  keyStart: number;
  keyEnd: number;
}

function isSpace(byte: number): boolean {
  return byte === 0x20 || byte === 0x0a || byte === 0x0d || byte === 0x09;
}

/** One past the closing quote of the string whose opening quote is at `start`. */
function stringEnd(bytes: Buffer, start: number): number {
  let at = start + 1;
  for (;;) {
    const quote = bytes.indexOf(QUOTE, at);
    if (quote === -1) return bytes.length; // not valid JSON; unspecified
    let slashes = 0;
    for (let i = quote - 1; i > start && bytes[i] === BACKSLASH; i--) slashes += 1;
    if (slashes % 2 === 0) return quote + 1;
    at = quote + 1;
  }
}

function hasEscape(bytes: Buffer, start: number, end: number): boolean {
  // (A bounded loop: indexOf would search the rest of the body for every name.)
  for (let i = start + 1; i < end - 1; i++) if (bytes[i] === BACKSLASH) return true;
  return false;
}

/** The decoded name of the string at [start, end) (quotes included). */
function decodeName(bytes: Buffer, start: number, end: number): string {
  if (hasEscape(bytes, start, end)) return JSON.parse(bytes.toString('utf8', start, end)) as string;
  return bytes.toString('utf8', start + 1, end - 1);
}

function sameBytes(bytes: Buffer, a: number, b: number, length: number): boolean {
  for (let i = 0; i < length; i++) if (bytes[a + i] !== bytes[b + i]) return false;
  return true;
}

/** Adds the name at [start, end) to the object's; false when it was there already. */
function addName(bytes: Buffer, frame: Frame, start: number, end: number): boolean {
  if (frame.set === undefined && frame.count < RAW_KEYS && !hasEscape(bytes, start, end)) {
    const length = end - start;
    for (let j = 0; j < frame.count; j++) {
      if (frame.ends[j]! - frame.starts[j]! === length && sameBytes(bytes, frame.starts[j]!, start, length)) return false;
    }
    frame.starts[frame.count] = start;
    frame.ends[frame.count] = end;
    frame.count += 1;
    return true;
  }
  if (frame.set === undefined) {
    frame.set = new Set<string>();
    for (let j = 0; j < frame.count; j++) frame.set.add(decodeName(bytes, frame.starts[j]!, frame.ends[j]!));
  }
  const name = decodeName(bytes, start, end);
  if (frame.set.has(name)) return false;
  frame.set.add(name);
  return true;
}

/** Longest key text shown in a duplicate's path, and the whole path. */
const MAX_PATH_KEY = 64;
const MAX_PATH = 256;

function pathOf(frames: readonly Frame[], depth: number, bytes: Buffer): string {
  let path = '';
  for (let d = 0; d <= depth; d++) {
    const frame = frames[d]!;
    if (frame.object) path += segment(decodeName(bytes, frame.keyStart, frame.keyEnd), path === '');
    else path += `[${frame.index}]`;
  }
  return path.length > MAX_PATH ? `${path.slice(0, MAX_PATH)}…` : path;
}

function segment(name: string, first: boolean): string {
  const shown = name.length > MAX_PATH_KEY ? `${name.slice(0, MAX_PATH_KEY)}…` : name;
  if (/^[A-Za-z_$][\w$-]*$/.test(shown)) return first ? shown : `.${shown}`;
  return `[${JSON.stringify(shown)}]`;
}

/**
 * Scans a JSON object body (already accepted by JSON.parse): refuses the
 * first duplicate key, else returns the spans of the top-level members named
 * in `keep`.
 */
export function scanJsonObject(bytes: Buffer, keep: ReadonlySet<string>): JsonScan {
  const length = bytes.length;
  let at = 0;
  // A UTF-8 byte order mark (TextDecoder drops it before JSON.parse).
  if (bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) at = 3;
  while (at < length && isSpace(bytes[at]!)) at++;
  const open = at;
  const members = Object.create(null) as Record<string, MemberSpan>;
  let memberCount = 0;
  // The top-level member being read, and the last one (to give a kept one its `nextKeyStart`).
  let topKeyStart = -1;
  let topKeyEnd = -1;
  let topValueStart = -1;
  let lastKept: { -readonly [K in keyof MemberSpan]: MemberSpan[K] } | undefined;
  let lastValueEnd = -1;
  const endTopMember = (valueEnd: number): void => {
    if (lastKept !== undefined) lastKept.nextKeyStart = topKeyStart;
    const name = decodeName(bytes, topKeyStart, topKeyEnd);
    if (keep.has(name)) {
      lastKept = { keyStart: topKeyStart, valueStart: topValueStart, valueEnd, prevValueEnd: lastValueEnd, nextKeyStart: -1 };
      members[name] = lastKept;
    } else {
      lastKept = undefined;
    }
    lastValueEnd = valueEnd;
  };

  const frames: Frame[] = [];
  let depth = -1;
  const push = (object: boolean): void => {
    depth += 1;
    let frame = frames[depth];
    if (frame === undefined) {
      frame = { object, index: 0, starts: [], ends: [], count: 0, set: undefined, keyStart: -1, keyEnd: -1 };
      frames.push(frame);
    } else {
      frame.object = object;
      frame.index = 0;
      frame.count = 0;
      frame.set = undefined;
    }
  };
  // True right after `{` or an object's `,`: the next token is a name (or the `}` of an empty object).
  let expectKey = false;
  while (at < length) {
    const byte = bytes[at]!;
    if (isSpace(byte)) {
      at++;
      continue;
    }
    if (expectKey && byte === QUOTE) {
      const frame = frames[depth]!;
      const end = stringEnd(bytes, at);
      frame.keyStart = at;
      frame.keyEnd = end;
      if (!addName(bytes, frame, at, end)) return { ok: false, duplicatePath: pathOf(frames, depth, bytes) };
      if (depth === 0) {
        memberCount += 1;
        topKeyStart = at;
        topKeyEnd = end;
      }
      at = end;
      while (at < length && bytes[at] !== COLON) at++;
      at++;
      while (at < length && isSpace(bytes[at]!)) at++;
      if (depth === 0) topValueStart = at;
      expectKey = false;
      continue;
    }
    expectKey = false;
    if (byte === OPEN_BRACE || byte === OPEN_BRACKET) {
      push(byte === OPEN_BRACE);
      expectKey = byte === OPEN_BRACE;
      at++;
      continue;
    }
    if (byte === CLOSE_BRACE || byte === CLOSE_BRACKET) {
      depth -= 1;
      at++;
      if (depth < 0) break; // the body's own closing brace
      if (depth === 0) endTopMember(at);
      continue;
    }
    if (byte === COMMA) {
      const frame = frames[depth]!;
      if (frame.object) expectKey = true;
      else frame.index += 1;
      at++;
      continue;
    }
    // A scalar: a string, a number, true, false or null.
    if (byte === QUOTE) at = stringEnd(bytes, at);
    else while (at < length && !isDelimiter(bytes[at]!)) at++;
    if (depth === 0) endTopMember(at);
  }
  return { ok: true, layout: { open, memberCount, keys: keysOf(keep), members } };
}

const keyLists = new WeakMap<ReadonlySet<string>, readonly string[]>();

/** The names of `keep` as a list, made once per set (the set is the caller's constant). */
function keysOf(keep: ReadonlySet<string>): readonly string[] {
  let keys = keyLists.get(keep);
  if (keys === undefined) {
    keys = Object.freeze([...keep]);
    keyLists.set(keep, keys);
  }
  return keys;
}

function isDelimiter(byte: number): boolean {
  return byte === COMMA || byte === CLOSE_BRACE || byte === CLOSE_BRACKET || isSpace(byte);
}
