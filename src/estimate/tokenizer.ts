/**
 * Token counting for the two encodings OpenAI's current models use.
 *
 * Why not `Tiktoken#encode` from js-tiktoken: measured on this codebase's machines, its merge loop
 * re-joins byte arrays into strings for every candidate pair on every step, which is quadratic in a
 * piece's length (10 KB of "a" takes > 8 s), costs ~6 µs of fixed overhead per call (it builds two
 * RegExps and a Set each time) and its constructor takes ~1 s and ~100 MB of heap for o200k_base.
 * We only need counts, so we read the same rank files that js-tiktoken ships
 * (`js-tiktoken/ranks/*`), pre-tokenize with the same pattern (read by a scanner of the text's bytes
 * where it is ASCII, ascii-pieces.ts), and run the same byte-pair merge
 * (lowest rank first, leftmost on ties) with a heap: O(n log n) per piece, exact for every input,
 * ~2 MB of heap per encoding (the ranks live in typed arrays, rank-table.ts) and ~100 ms to load.
 * Tests compare every count with js-tiktoken's own `encode` on fuzzed and realistic text.
 */
import { Buffer } from 'node:buffer';
import { createRequire } from 'node:module';
import { asciiPieceScanner, type PieceScanner } from './ascii-pieces.js';
import { RankTable } from './rank-table.js';

/** The encodings we count with. */
export type EncodingName = 'o200k_base' | 'cl100k_base';

/** A loaded encoding: rank lookup by UTF-8 bytes (as a latin1 string) and the pre-tokenizer. */
export interface LoadedEncoding {
  readonly name: EncodingName;
  readonly ranks: RankTable;
  readonly pattern: RegExp;
  /** The same pattern, sticky: `test` at a position builds no match array (countTextTokens). */
  readonly sticky: RegExp;
  /** The pattern read without the regular expression in an ASCII text's bytes (ascii-pieces.ts). */
  readonly scan: PieceScanner | undefined;
  /** Counts of short pieces already merged; cleared when full (cheap, and hit rates stay high). */
  readonly pieceCache: Map<string, number>;
}

interface RankFile {
  pat_str: string;
  special_tokens: Record<string, number>;
  bpe_ranks: string;
}

const PIECE_CACHE_MAX_ENTRIES = 100_000;
const PIECE_CACHE_MAX_CHARS = 48;
/** Pieces up to this many bytes are merged with the simple quadratic loop (fewer allocations). */
const SMALL_PIECE_BYTES = 24;
/** Time slice for the incremental (async) load, so loading never blocks the event loop for long. */
const LOAD_SLICE_MS = 4;

const requireFromHere = createRequire(import.meta.url);
const loaded = new Map<EncodingName, LoadedEncoding>();
const loading = new Map<EncodingName, Promise<LoadedEncoding>>();

function readRankFile(name: EncodingName): RankFile {
  // The CommonJS build of the rank module loads synchronously, which estimateRequestSync needs.
  const mod: unknown = requireFromHere(`js-tiktoken/ranks/${name}`);
  const file = (mod as { default?: unknown }).default ?? mod;
  const candidate = file as Partial<RankFile>;
  if (typeof candidate.pat_str !== 'string' || typeof candidate.bpe_ranks !== 'string') {
    throw new Error(`js-tiktoken rank file ${name} has an unexpected shape`);
  }
  return candidate as RankFile;
}

/**
 * The rank file's tokens with their ranks. Format (shared with js-tiktoken): lines of
 * "<ignored> <first rank> <base64 token> <base64 token> …", ranks counting up along a line.
 */
function* rankFileTokens(file: RankFile): Generator<readonly [Uint8Array, number], void, void> {
  const text = file.bpe_ranks;
  let lineStart = 0;
  while (lineStart < text.length) {
    let lineEnd = text.indexOf('\n', lineStart);
    if (lineEnd === -1) lineEnd = text.length;
    const firstSpace = text.indexOf(' ', lineStart);
    const secondSpace = firstSpace === -1 ? -1 : text.indexOf(' ', firstSpace + 1);
    if (firstSpace !== -1 && firstSpace < lineEnd) {
      const offsetEnd = secondSpace === -1 || secondSpace > lineEnd ? lineEnd : secondSpace;
      let rank = Number.parseInt(text.slice(firstSpace + 1, offsetEnd), 10);
      let pos = offsetEnd + 1;
      while (pos < lineEnd) {
        let next = text.indexOf(' ', pos);
        if (next === -1 || next > lineEnd) next = lineEnd;
        yield [Buffer.from(text.slice(pos, next), 'base64'), rank];
        rank += 1;
        pos = next + 1;
      }
    }
    lineStart = lineEnd + 1;
  }
}

/** Builds an encoding from its rank file, yielding every 2048 tokens so the async loader can slice it. */
function* buildEncoding(name: EncodingName, file: RankFile): Generator<void, LoadedEncoding, void> {
  // Base64 never decodes to more bytes than it has chars, and a token takes at least 4 chars and a
  // separator, so the file's length bounds both the bytes and the number of tokens.
  const text = file.bpe_ranks;
  const ranks = yield* RankTable.build(rankFileTokens(file), text.length, Math.ceil(text.length / 5) + 1);
  return {
    name,
    ranks,
    pattern: new RegExp(file.pat_str, 'gu'),
    sticky: new RegExp(file.pat_str, 'uy'),
    scan: asciiPieceScanner(file.pat_str),
    pieceCache: new Map(),
  };
}

/** Loads an encoding synchronously (≈0.3 s for o200k_base, once per process). */
export function loadEncodingSync(name: EncodingName): LoadedEncoding {
  const existing = loaded.get(name);
  if (existing) return existing;
  const steps = buildEncoding(name, readRankFile(name));
  let step = steps.next();
  while (!step.done) step = steps.next();
  const encoding = step.value;
  loaded.set(name, encoding);
  return encoding;
}

/**
 * Loads an encoding in slices of a few ms, yielding to the event loop between slices, so the first
 * request of a proxy does not stall every other request for the whole load.
 */
export function loadEncoding(name: EncodingName): Promise<LoadedEncoding> {
  const existing = loaded.get(name);
  if (existing) return Promise.resolve(existing);
  const pending = loading.get(name);
  if (pending) return pending;
  const promise = (async () => {
    const steps = buildEncoding(name, readRankFile(name));
    let sliceStart = performance.now();
    let step = steps.next();
    while (!step.done) {
      if (performance.now() - sliceStart > LOAD_SLICE_MS) {
        await new Promise<void>((resolve) => setImmediate(resolve));
        // A synchronous load may have finished meanwhile; keep one instance per process.
        const raced = loaded.get(name);
        if (raced) return raced;
        sliceStart = performance.now();
      }
      step = steps.next();
    }
    const raced = loaded.get(name);
    if (raced) return raced;
    const encoding = step.value;
    loaded.set(name, encoding);
    return encoding;
  })().finally(() => loading.delete(name));
  loading.set(name, promise);
  return promise;
}

/** The encoding if it is already loaded (no loading side effect). */
export function peekEncoding(name: EncodingName): LoadedEncoding | undefined {
  return loaded.get(name);
}

/** UTF-8 bytes of a string as a latin1 string (one char per byte), the key of the rank map. */
function toByteString(piece: string): string {
  for (let i = 0; i < piece.length; i++) {
    if (piece.charCodeAt(i) >= 0x80) return Buffer.from(piece, 'utf8').toString('latin1');
  }
  return piece;
}

function isAsciiRange(text: string, start: number, end: number): boolean {
  for (let i = start; i < end; i++) if (text.charCodeAt(i) >= 0x80) return false;
  return true;
}

/** Quadratic merge for short pieces: the same rule as tiktoken, fewer allocations than the heap. */
function countSmallPiece(bytes: string, ranks: RankTable): number {
  const bounds: number[] = [];
  for (let i = 0; i <= bytes.length; i++) bounds.push(i);
  for (;;) {
    let bestRank = Infinity;
    let bestIndex = -1;
    for (let i = 0; i < bounds.length - 2; i++) {
      const rank = ranks.rank(bytes, bounds[i] as number, bounds[i + 2] as number);
      if (rank >= 0 && rank < bestRank) {
        bestRank = rank;
        bestIndex = i;
      }
    }
    if (bestIndex === -1) return bounds.length - 1;
    bounds.splice(bestIndex + 1, 1);
  }
}

function pushHeap(heap: number[], key: number): void {
  let i = heap.length;
  heap.push(key);
  while (i > 0) {
    const parent = (i - 1) >> 1;
    const parentKey = heap[parent] as number;
    if (parentKey <= key) break;
    heap[i] = parentKey;
    i = parent;
  }
  heap[i] = key;
}

function popHeap(heap: number[]): number {
  const top = heap[0] as number;
  const last = heap.pop() as number;
  const size = heap.length;
  if (size === 0) return top;
  let i = 0;
  for (;;) {
    const left = 2 * i + 1;
    if (left >= size) break;
    const right = left + 1;
    let child = left;
    if (right < size && (heap[right] as number) < (heap[left] as number)) child = right;
    if ((heap[child] as number) >= last) break;
    heap[i] = heap[child] as number;
    i = child;
  }
  heap[i] = last;
  return top;
}

/**
 * Byte-pair merge with a min-heap of candidate pairs keyed by (rank, start): popping the smallest
 * key is exactly tiktoken's "lowest rank, leftmost first" rule. Stale entries are detected by
 * recomputing the pair's rank: ranks are unique per byte string, so an equal rank means the same
 * bytes and the same merge.
 */
function countLargePiece(bytes: string, ranks: RankTable): number {
  const n = bytes.length;
  const ends = new Int32Array(n);
  const prevs = new Int32Array(n);
  for (let i = 0; i < n; i++) {
    ends[i] = i + 1;
    prevs[i] = i - 1;
  }
  // Key = rank * scale + start; scale is a power of two above n so keys stay exact doubles.
  let scale = 1;
  while (scale <= n) scale *= 2;
  const pairRank = (start: number): number => {
    const mid = ends[start] as number;
    if (mid >= n) return -1;
    const end = ends[mid] as number;
    if (end - start > ranks.maxTokenBytes) return -1;
    return ranks.rank(bytes, start, end);
  };
  const heap: number[] = [];
  for (let start = 0; start < n - 1; start++) {
    const rank = pairRank(start);
    if (rank >= 0) pushHeap(heap, rank * scale + start);
  }
  let parts = n;
  while (heap.length > 0) {
    const key = popHeap(heap);
    const rank = Math.floor(key / scale);
    const start = key - rank * scale;
    if ((ends[start] as number) < 0 || pairRank(start) !== rank) continue;
    const mid = ends[start] as number;
    const end = ends[mid] as number;
    ends[start] = end;
    ends[mid] = -1;
    parts -= 1;
    if (end < n) prevs[end] = start;
    const before = prevs[start] as number;
    if (before >= 0) {
      const beforeRank = pairRank(before);
      if (beforeRank >= 0) pushHeap(heap, beforeRank * scale + before);
    }
    const nextRank = pairRank(start);
    if (nextRank >= 0) pushHeap(heap, nextRank * scale + start);
  }
  return parts;
}

function countPiece(piece: string, encoding: LoadedEncoding): number {
  const cached = encoding.pieceCache.get(piece);
  if (cached !== undefined) return cached;
  const bytes = toByteString(piece);
  let count: number;
  if (encoding.ranks.rank(bytes, 0, bytes.length) >= 0) count = 1;
  else if (bytes.length <= SMALL_PIECE_BYTES) count = countSmallPiece(bytes, encoding.ranks);
  else count = countLargePiece(bytes, encoding.ranks);
  if (piece.length <= PIECE_CACHE_MAX_CHARS) {
    if (encoding.pieceCache.size >= PIECE_CACHE_MAX_ENTRIES) encoding.pieceCache.clear();
    encoding.pieceCache.set(piece, count);
  }
  return count;
}

/**
 * Number of tokens of `text`, with special-token text such as "<|endoftext|>" counted as plain
 * text (what the API does with user content). Exact: equals
 * `new Tiktoken(ranks).encode(text, [], []).length`.
 */
export function countTextTokens(text: string, encoding: LoadedEncoding): number {
  if (text.length === 0) return 0;
  const { pattern, sticky, scan, ranks } = encoding;
  const bytes = scan === undefined ? undefined : unitBytes(text);
  let count = 0;
  let at = 0;
  while (at < text.length) {
    // Most pieces of most prompts are ASCII, which the scanner reads in the bytes. Elsewhere the
    // pieces almost always follow each other, so a sticky `test` finds each without the match array
    // `exec` builds (a fifth of a unique 1 KB request's allocations, docs/performance.md); where the
    // pattern skips text it cannot match, `exec` finds the next piece as before.
    let end = bytes === undefined || scan === undefined ? -1 : scan(bytes, text.length, at);
    let ascii = end !== -1;
    if (!ascii) {
      sticky.lastIndex = at;
      if (!sticky.test(text) || sticky.lastIndex === at) {
        pattern.lastIndex = at;
        const match = pattern.exec(text);
        if (match === null || match[0].length === 0) break;
        count += countPiece(match[0], encoding);
        at = pattern.lastIndex;
        continue;
      }
      end = sticky.lastIndex;
      ascii = bytes === undefined ? isAsciiRange(text, at, end) : isAsciiBytes(bytes, at, end);
    }
    // Most pieces are one token; an ASCII one is its own UTF-8 bytes, so its rank is looked up in
    // place, with no slice and no cache entry (the cache keeps pieces that need a merge).
    const oneToken = ascii && end - at <= ranks.maxTokenBytes && (bytes === undefined ? ranks.rank(text, at, end) : ranks.rankOfBytes(bytes, at, end)) >= 0;
    count += oneToken ? 1 : countPiece(text.slice(at, end), encoding);
    at = end;
  }
  return count;
}

/** Texts up to this long are written into one reused buffer; a longer one gets a buffer of its own. */
const SCRATCH_BYTES = 64 * 1024;
let scratch: Buffer | undefined;
/** Runs of chars above 0x7f, to mark in the bytes. */
const NON_ASCII_RUN = /[^\p{ASCII}]+/gu;
/** A text with more such runs than one per this many chars is counted from its chars (CJK, say). */
const CHARS_PER_NON_ASCII_RUN = 16;

/**
 * One byte per UTF-16 unit of `text`, at the unit's index: the unit itself when ASCII, else 0x80
 * (what the scanner declines). Undefined for a text with too many runs of other chars to be worth
 * it. Native passes only (a `charCodeAt` loop costs about five times a typed array's); the bytes stay
 * valid until the next call.
 */
function unitBytes(text: string): Uint8Array | undefined {
  const bytes = text.length > SCRATCH_BYTES ? Buffer.allocUnsafe(text.length) : (scratch ??= Buffer.allocUnsafe(SCRATCH_BYTES));
  bytes.write(text, 0, text.length, 'latin1');
  if (Buffer.byteLength(text, 'utf8') === text.length) return bytes;
  // latin1 keeps only a unit's low byte, which may look like ASCII: mark every other unit.
  const maxRuns = Math.ceil(text.length / CHARS_PER_NON_ASCII_RUN);
  let runs = 0;
  NON_ASCII_RUN.lastIndex = 0;
  for (let run = NON_ASCII_RUN.exec(text); run !== null; run = NON_ASCII_RUN.exec(text)) {
    if (++runs > maxRuns) return undefined;
    bytes.fill(0x80, run.index, run.index + run[0].length);
  }
  return bytes;
}

function isAsciiBytes(bytes: Uint8Array, start: number, end: number): boolean {
  for (let i = start; i < end; i++) if ((bytes[i] as number) >= 0x80) return false;
  return true;
}
