import fc from 'fast-check';
import cl100k from 'js-tiktoken/ranks/cl100k_base';
import o200k from 'js-tiktoken/ranks/o200k_base';
import { describe, expect, it } from 'vitest';
import { asciiPieceScanner, type PieceScanner } from '../../../src/estimate/ascii-pieces.js';

const patterns = { o200k_base: o200k.pat_str, cl100k_base: cl100k.pat_str };
const encodings = Object.keys(patterns) as Array<keyof typeof patterns>;

function scannerFor(encoding: keyof typeof patterns): PieceScanner {
  const scan = asciiPieceScanner(patterns[encoding]);
  if (scan === undefined) throw new Error(`no scanner for ${encoding}'s pattern`);
  return scan;
}

/** The pattern's pieces as [start, end) pairs, found by the regular expression alone. */
function regexPieces(text: string, pattern: string): Array<[number, number]> {
  const regex = new RegExp(pattern, 'gu');
  const pieces: Array<[number, number]> = [];
  for (const match of text.matchAll(regex)) pieces.push([match.index, match.index + match[0].length]);
  return pieces;
}

/** The bytes the tokenizer gives the scanner: one per UTF-16 unit, 0x80 for any unit above 0x7f. */
function unitBytes(text: string): Buffer {
  return Buffer.from(Array.from({ length: text.length }, (_, i) => Math.min(text.charCodeAt(i), 0x80)));
}

/**
 * The pieces as the tokenizer finds them, the scanner first and the regular expression where it
 * declines, with how many the scanner found.
 */
function scannedPieces(text: string, encoding: keyof typeof patterns): { pieces: Array<[number, number]>; scanned: number } {
  const scan = scannerFor(encoding);
  const sticky = new RegExp(patterns[encoding], 'uy');
  const bytes = unitBytes(text);
  const pieces: Array<[number, number]> = [];
  let scanned = 0;
  for (let at = 0; at < text.length;) {
    let end = scan(bytes, text.length, at);
    if (end === -1) {
      sticky.lastIndex = at;
      if (!sticky.test(text)) throw new Error(`the pattern matches nothing at ${at} of ${JSON.stringify(text)}`);
      end = sticky.lastIndex;
    } else {
      scanned += 1;
      if (end <= at) throw new Error(`the scanner made no progress at ${at} of ${JSON.stringify(text)}`);
    }
    pieces.push([at, end]);
    at = end;
  }
  return { pieces, scanned };
}

/** Chars beyond ASCII that each class of the pattern knows, next to the ASCII ones that decide. */
const tricky = [
  'é', // a lower-case letter
  'É', // an upper-case letter
  'ǅ', // a title-case letter (\p{Lt})
  'ª', // \p{Lo}
  '\u0301', // a combining mark (\p{M})
  '١', // an Arabic-Indic digit (\p{N})
  '½', // \p{N} too
  '\u00a0', // a space (\s) that is not ASCII
  '\u2028', // a line separator: \s, not [\r\n]
  '\ufeff', // \s in JavaScript
  '—', // punctuation
  '😀', // a surrogate pair
  '\ud800', // a lone surrogate
  'ſ', // long s: what a case-insensitive 's would also match
  '\u2020', // its low byte is a space
  '\u0161', // its low byte is 'a'
];
const asciiChar = fc.integer({ min: 0, max: 0x7f }).map((code) => String.fromCharCode(code));
const pieceLike = fc.constantFrom(' ', '  ', '\n', '\r\n', '\t', ' \n ', "'", "'s", "'RE", "'ll", "'x", '/', '\n/', ' (', 'A', 'a', 'Ab', '7', '123', '!!');
const asciiText = fc.array(fc.oneof(asciiChar, pieceLike), { maxLength: 40 }).map((parts) => parts.join(''));
const mixedText = fc.array(fc.oneof(asciiChar, pieceLike, fc.constantFrom(...tricky)), { maxLength: 40 }).map((parts) => parts.join(''));

describe('the ASCII piece scanner', () => {
  it.each(encodings)('implements the rank file pattern of %s and no other', (encoding) => {
    expect(asciiPieceScanner(patterns[encoding])).toBeTypeOf('function');
    expect(asciiPieceScanner(`${patterns[encoding]}|x`)).toBeUndefined();
  });

  it.each(encodings)('finds every piece of an ASCII text where the pattern does, never declining (%s)', (encoding) => {
    fc.assert(
      fc.property(asciiText, (text) => {
        const { pieces, scanned } = scannedPieces(text, encoding);
        expect(pieces).toEqual(regexPieces(text, patterns[encoding]));
        expect(scanned).toBe(pieces.length);
      }),
      { numRuns: 5000 },
    );
  });

  it.each(encodings)("finds the pattern's pieces next to letters, digits and spaces beyond ASCII, declining where they decide (%s)", (encoding) => {
    fc.assert(
      fc.property(mixedText, (text) => {
        expect(scannedPieces(text, encoding).pieces).toEqual(regexPieces(text, patterns[encoding]));
      }),
      { numRuns: 5000 },
    );
  });

  it('declines exactly where a char beyond ASCII decides the piece', () => {
    const scan = (text: string, at: number) => scannerFor('o200k_base')(unitBytes(text), text.length, at);
    expect(scan('caféx', 0)).toBe(-1); // the word goes on
    expect(scan('cat é', 0)).toBe(3); // a space ends it first
    expect(scan(' é', 0)).toBe(-1); // a letter may follow the space
    expect(scan('12١', 0)).toBe(-1); // a third digit
    expect(scan('123١', 0)).toBe(3); // three digits end the piece
    expect(scan('  \u00a0x', 0)).toBe(-1); // the run of spaces may go on
    expect(scan('!!—', 0)).toBe(-1); // the punctuation may go on
    expect(scan('!!\n—', 0)).toBe(3); // but not past its line breaks
    expect(scan('é', 0)).toBe(-1);
  });

  it.each(encodings)('reads only the bytes it is given, not what follows them in the buffer (%s)', (encoding) => {
    const scan = scannerFor(encoding);
    // A reused buffer holds an earlier, longer text past this one's end.
    const bytes = Buffer.from("x   don't 123", 'latin1');
    expect(scan(bytes, 4, 1)).toBe(4); // three spaces ending the text: all of them
    expect(scan(bytes, 7, 4)).toBe(7); // "don" ends with the text, no contraction after it
    expect(scan(bytes, 11, 10)).toBe(11); // one digit
  });

  it('splits as each encoding does where the two patterns differ', () => {
    const o200kPieces = (text: string) => regexPieces(text, patterns.o200k_base).map(([s, e]) => text.slice(s, e));
    const o200kScan = (text: string, at: number) => scannerFor('o200k_base')(unitBytes(text), text.length, at);
    const cl100kScan = (text: string, at: number) => scannerFor('cl100k_base')(unitBytes(text), text.length, at);
    expect(o200kPieces("HelloWorld don't")).toEqual(['Hello', 'World', " don't"]);
    expect(o200kScan('HelloWorld', 0)).toBe(5);
    expect(cl100kScan('HelloWorld', 0)).toBe(10);
    expect(o200kScan("I'LL go", 0)).toBe(4); // the contraction ends the word
    expect(cl100kScan("I'LL go", 0)).toBe(1); // the contraction is a piece of its own
    expect(cl100kScan("I'LL go", 1)).toBe(4);
    expect(o200kScan('a/\n\nb', 1)).toBe(4); // punctuation takes the line breaks after it
    expect(o200kScan('a.\n/\nb', 1)).toBe(5); // and slashes among them, in o200k_base
    expect(cl100kScan('a.\n/\nb', 1)).toBe(3);
    expect(o200kScan('x  \n  y', 1)).toBe(4); // spaces through the last line break
    expect(o200kScan('x   y', 1)).toBe(3); // all but the last space before a word
    expect(o200kScan('x   ', 1)).toBe(4); // all of them at the end
  });
});
