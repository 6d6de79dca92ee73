/**
 * The pre-tokenizer's pattern, read without the regular expression where the text is ASCII.
 *
 * Why: counting a unique 1 KB prompt spent about 80,000 instructions in the pattern's regular
 * expression (its `\p{…}` classes, tried alternative by alternative at every piece) and about as
 * many again reading the text's chars one `charCodeAt` at a time (about 20 instructions a char, against
 * 4 for a byte of a typed array; docs/performance.md, "The tokenizer reads bytes"). Over ASCII both
 * patterns, o200k_base's and cl100k_base's, reduce to a few character classes, so the scanner reads
 * the text's bytes (one per UTF-16 unit, every unit above 0x7f written as 0x80) and decides each
 * piece looking at each byte once. Where the decision would depend on a char above 0x7f (a letter,
 * digit, mark or space the `\p{…}` classes know), the scanner answers -1 and the caller asks the
 * regular expression. The pieces are exactly the pattern's (tests walk both over fuzzed text): the
 * pattern has no look-behind, so a piece depends only on where it starts, whichever of the two found
 * the pieces before it.
 */

/**
 * End of the piece that starts at `at` (< `length`) in the bytes [0, length) of `bytes`, or -1 when
 * a byte above 0x7f would decide it.
 */
export type PieceScanner = (bytes: Uint8Array, length: number, at: number) => number;

const UPPER = 1;
const LOWER = 2;
const LETTER = UPPER | LOWER;
const DIGIT = 4;
/** JavaScript's `\s` within ASCII: tab, line feed, vertical tab, form feed, carriage return, space. */
const SPACE = 8;
/** `\r` and `\n`, which are also SPACE. */
const NEWLINE = 16;
/** Neither letter, digit nor space: `[^\s\p{L}\p{N}]` within ASCII (punctuation, symbols, controls). */
const OTHER = 32;
/** A byte above 0x7f: a char the scanner cannot classify. */
const NON_ASCII = 64;
/** Past the end of the text: no class. */
const END = 0;

const CLASSES = new Uint8Array(256).map((_, code) => {
  if (code >= 0x80) return NON_ASCII;
  if (code >= 0x41 && code <= 0x5a) return UPPER;
  if (code >= 0x61 && code <= 0x7a) return LOWER;
  if (code >= 0x30 && code <= 0x39) return DIGIT;
  if (code === 0x0a || code === 0x0d) return SPACE | NEWLINE;
  if (code === 0x09 || code === 0x0b || code === 0x0c || code === 0x20) return SPACE;
  return OTHER;
});

function kind(bytes: Uint8Array, length: number, i: number): number {
  return i < length ? (CLASSES[bytes[i] as number] as number) : END;
}

function byteAt(bytes: Uint8Array, length: number, i: number): number {
  return i < length ? (bytes[i] as number) : -1;
}

/** End of `'s|'t|'re|'ve|'m|'ll|'d` in either case at `at`, or `at` when there is none. */
function contractionEnd(bytes: Uint8Array, length: number, at: number): number {
  if (byteAt(bytes, length, at) !== 0x27) return at;
  // `| 0x20` lower-cases an ASCII letter and maps nothing else onto one.
  const second = byteAt(bytes, length, at + 1) | 0x20;
  if (second === 0x73 || second === 0x74 || second === 0x6d || second === 0x64) return at + 2; // s t m d
  const third = byteAt(bytes, length, at + 2) | 0x20;
  if ((second === 0x72 || second === 0x76) && third === 0x65) return at + 3; // re ve
  if (second === 0x6c && third === 0x6c) return at + 3; // ll
  return at;
}

interface Flavor {
  /** cl100k_base: a contraction is a piece of its own, tried first. */
  readonly contractionFirst: boolean;
  /** o200k_base: a word is upper case then lower case, with a contraction after it. */
  readonly caseSplit: boolean;
  /** o200k_base: punctuation takes slashes along with the line breaks after it (`[\r\n/]*`). */
  readonly slashAfterPunctuation: boolean;
}

function scanner({ contractionFirst, caseSplit, slashAfterPunctuation }: Flavor): PieceScanner {
  return (bytes, length, at) => {
    const first = kind(bytes, length, at);
    if (first & NON_ASCII) return -1;
    if (contractionFirst) {
      const end = contractionEnd(bytes, length, at);
      if (end > at) return end;
    }
    // A word, after at most one char that is neither letter, digit nor line break.
    let start = at;
    if ((first & (LETTER | DIGIT | NEWLINE)) === 0) {
      const second = kind(bytes, length, at + 1);
      if (second & NON_ASCII) return -1;
      if (second & LETTER) start = at + 1;
    }
    if (start > at || first & LETTER) {
      let i = start;
      let next: number;
      if (caseSplit) {
        while ((next = kind(bytes, length, i)) & UPPER) i++;
        if (next & NON_ASCII) return -1;
        while ((next = kind(bytes, length, i)) & LOWER) i++;
        // The contraction after the word is ASCII or absent: it needs no class.
        return next & NON_ASCII ? -1 : contractionEnd(bytes, length, i);
      }
      while ((next = kind(bytes, length, i)) & LETTER) i++;
      return next & NON_ASCII ? -1 : i;
    }
    // One to three digits.
    if (first & DIGIT) {
      let i = at + 1;
      let next = END;
      while (i < at + 3 && (next = kind(bytes, length, i)) & DIGIT) i++;
      return i < at + 3 && next & NON_ASCII ? -1 : i;
    }
    // Punctuation, after at most one space, then any line breaks (and, for o200k_base, slashes).
    let punctuation = at;
    if (bytes[at] === 0x20) {
      const second = kind(bytes, length, at + 1);
      if (second & NON_ASCII) return -1;
      if (second & OTHER) punctuation = at + 1;
    }
    if (kind(bytes, length, punctuation) & OTHER) {
      let i = punctuation + 1;
      let next: number;
      while ((next = kind(bytes, length, i)) & OTHER) i++;
      if (next & NON_ASCII) return -1;
      // A char above 0x7f simply ends the line breaks and slashes.
      for (;;) {
        const code = byteAt(bytes, length, i);
        if (code === 0x0a || code === 0x0d || (slashAfterPunctuation && code === 0x2f)) i++;
        else return i;
      }
    }
    // Spaces: through the last line break of the run (`\s*[\r\n]+`), else all of a run that ends
    // the text or is one char long (`\s+`), else all but its last (`\s+(?!\S)`).
    let i = at;
    let afterBreak = -1;
    let next: number;
    while ((next = kind(bytes, length, i)) & SPACE) {
      i++;
      if (next & NEWLINE) afterBreak = i;
    }
    if (next & NON_ASCII) return -1;
    if (afterBreak !== -1) return afterBreak;
    return next === END || i - at === 1 ? i : i - 1;
  };
}

/** The patterns the scanners implement, as the rank files spell them (js-tiktoken's `pat_str`). */
const CONTRACTIONS = "('s|'S|'t|'T|'re|'rE|'Re|'RE|'ve|'vE|'Ve|'VE|'m|'M|'ll|'lL|'Ll|'LL|'d|'D)";
const TAIL = '|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n%s]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+';
const UPPER_CLASS = '[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]';
const LOWER_CLASS = '[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]';
const PREFIX = '[^\\r\\n\\p{L}\\p{N}]?';
const SCANNERS = new Map<string, PieceScanner>([
  [
    `${PREFIX}${UPPER_CLASS}*${LOWER_CLASS}+${CONTRACTIONS}?|${PREFIX}${UPPER_CLASS}+${LOWER_CLASS}*${CONTRACTIONS}?${TAIL.replace('%s', '/')}`,
    scanner({ contractionFirst: false, caseSplit: true, slashAfterPunctuation: true }),
  ],
  [`${CONTRACTIONS}|${PREFIX}\\p{L}+${TAIL.replace('%s', '')}`, scanner({ contractionFirst: true, caseSplit: false, slashAfterPunctuation: false })],
]);

/**
 * The scanner for a rank file's pattern, or undefined for a pattern it does not implement (a newer
 * rank file's): the regular expression then finds every piece, as before.
 */
export function asciiPieceScanner(pattern: string): PieceScanner | undefined {
  return SCANNERS.get(pattern);
}
