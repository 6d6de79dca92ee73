import fc from 'fast-check';
import { Tiktoken } from 'js-tiktoken/lite';
import cl100k from 'js-tiktoken/ranks/cl100k_base';
import o200k from 'js-tiktoken/ranks/o200k_base';
import { describe, expect, it } from 'vitest';
import { countCompletionTokens } from '../../../src/estimate/index.js';
import { countTextTokens, loadEncoding, loadEncodingSync, type EncodingName } from '../../../src/estimate/tokenizer.js';

// The reference: js-tiktoken's own encoder, special tokens treated as text.
const references: Record<EncodingName, Tiktoken> = {
  o200k_base: new Tiktoken(o200k),
  cl100k_base: new Tiktoken(cl100k),
};
const encodings: EncodingName[] = ['o200k_base', 'cl100k_base'];

function referenceCount(text: string, encoding: EncodingName): number {
  return references[encoding].encode(text, [], []).length;
}

const fragments = [
  'the',
  ' quick',
  ' brown',
  ' fox',
  "don't",
  "I'LL",
  ' ',
  '  ',
  '\n',
  '\n\n',
  '\r\n',
  '\t',
  '    ',
  'function foo(x) {',
  ' return x * 2; }',
  'const a = [1, 2, 3];',
  '=>',
  '===',
  '//',
  '/* c */',
  '{"a": 1, "b": [true, null]}',
  '{"key":"value","n":12345.678}',
  '12345678901',
  '3.14159',
  '0x1F',
  '日本語のテキスト',
  '中文字符',
  '한국어',
  'Ελληνικά',
  'русский текст',
  'العربية',
  'ñandú',
  'e\u0301',
  '😀',
  '👩‍👩‍👧',
  '🇺🇸',
  '<|endoftext|>',
  '<|endofprompt|>',
  '<|fim_prefix|>',
  'HelloWorld',
  'camelCaseName',
  'SCREAMING_CASE',
  'https://example.com/a?b=c',
  'user@example.com',
  '$100.00',
  '100%',
  '...',
  '—',
  '\u00a0',
  '\u3000',
  '\ud83d',
  'x\udc00y',
];

const realisticText = fc.array(fc.constantFrom(...fragments), { maxLength: 60 }).map((parts) => parts.join(''));

describe('counting equals js-tiktoken encoding', () => {
  it.each(encodings)('matches on realistic text mixing prose, code, JSON, CJK and emoji (%s)', (encoding) => {
    const loaded = loadEncodingSync(encoding);
    fc.assert(
      fc.property(realisticText, (text) => countTextTokens(text, loaded) === referenceCount(text, encoding)),
      { numRuns: 400 },
    );
  });

  it.each(encodings)('matches on arbitrary unicode strings, lone surrogates included (%s)', (encoding) => {
    const loaded = loadEncodingSync(encoding);
    fc.assert(
      fc.property(
        fc.oneof(fc.string({ unit: 'grapheme', maxLength: 80 }), fc.string({ unit: 'binary', maxLength: 80 }), fc.string({ maxLength: 200 })),
        (text) => countTextTokens(text, loaded) === referenceCount(text, encoding),
      ),
      { numRuns: 400 },
    );
  });

  it.each(encodings)('stays exact on pathological runs without spaces (%s)', (encoding) => {
    const loaded = loadEncodingSync(encoding);
    // The reference is quadratic on long pieces, so runs stay under ~400 bytes here; the
    // benchmark covers megabyte runs for speed.
    const run = fc
      .tuple(fc.constantFrom('a', 'ab', 'xyz', '😀', ' ', '\n', '0', '=', 'A', 'é', 'base64+/'), fc.integer({ min: 1, max: 120 }))
      .map(([unit, times]) => unit.repeat(times));
    fc.assert(
      fc.property(run, (text) => countTextTokens(text, loaded) === referenceCount(text, encoding)),
      { numRuns: 120 },
    );
  });

  it('matches on a long realistic document', () => {
    const loaded = loadEncodingSync('o200k_base');
    const text = fc.sample(realisticText, { numRuns: 2000, seed: 42 }).join(' ');
    expect(countTextTokens(text, loaded)).toBe(referenceCount(text, 'o200k_base'));
  });

  // ASCII texts are counted from their bytes in one buffer reused from call to call (ascii-pieces.ts).
  it('counts a short ASCII text right after a longer one, and one longer than the reused buffer', () => {
    const loaded = loadEncodingSync('o200k_base');
    for (const text of ["you'll see: don'tStop 1234567 //\n/x", 'do', "x   don't 123", 'x ', `${'word '.repeat(20_000)}end`]) {
      expect(countTextTokens(text, loaded)).toBe(referenceCount(text, 'o200k_base'));
    }
  });

  it('counts special-token text as plain text instead of throwing', () => {
    expect(countCompletionTokens('<|endoftext|>', 'gpt-4o')).toBe(referenceCount('<|endoftext|>', 'o200k_base'));
    expect(countCompletionTokens('<|endoftext|>', 'gpt-4o')).toBeGreaterThan(1);
  });

  // How fast is measured in bench/estimate.ts ("1 MB of \"a\""), not asserted here.
  it('counts a megabyte of one repeated letter exactly by construction', () => {
    const loaded = loadEncodingSync('o200k_base');
    // o200k_base merges runs of "a" into 8-letter tokens.
    expect(countTextTokens('a'.repeat(1_000_000), loaded)).toBe(125_000);
  });

  // tiktoken's own patterns match every character; a pattern that skips some must count only its pieces, as exec did.
  it('counts only the pieces of a pattern that skips text', () => {
    const loaded = loadEncodingSync('o200k_base');
    const lettersOnly = { ...loaded, pattern: /[a-z]+/gu, sticky: /[a-z]+/uy, scan: undefined };
    const pieces = ['hello', 'world', 'tokens'];
    const expected = pieces.reduce((sum, piece) => sum + referenceCount(piece, 'o200k_base'), 0);
    expect(countTextTokens('  hello, WORLD world!! 42 tokens', lettersOnly)).toBe(expected);
    expect(countTextTokens('!!! ???', lettersOnly)).toBe(0);
  });

  it('loads asynchronously to the same encoding instance', async () => {
    expect(await loadEncoding('cl100k_base')).toBe(loadEncodingSync('cl100k_base'));
  });
});
