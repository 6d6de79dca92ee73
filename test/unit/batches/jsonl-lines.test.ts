import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { JsonlSplitter, jsonlLines, type JsonlLine } from '../../../src/batches/jsonl-lines.js';

const encode = (text: string): Uint8Array => new TextEncoder().encode(text);

/** Every line of `bytes` fed in the pieces that `cuts` (offsets) make. */
function splitAt(bytes: Uint8Array, cuts: readonly number[], maxLineBytes: number): JsonlLine[] {
  const splitter = new JsonlSplitter(maxLineBytes);
  const offsets = [...new Set(cuts.map((cut) => cut % (bytes.length + 1)))].sort((a, b) => a - b);
  const lines: JsonlLine[] = [];
  let start = 0;
  for (const offset of [...offsets, bytes.length]) {
    lines.push(...splitter.feed(bytes.subarray(start, offset)));
    start = offset;
  }
  lines.push(...splitter.end());
  return lines;
}

const texts = (lines: readonly JsonlLine[]): Array<string | JsonlLine['kind']> => lines.map((line) => (line.kind === 'line' ? line.text : line.kind));

describe('splitting a JSONL upload into lines', () => {
  it('reads LF and CRLF lines alike and a last line without a newline', () => {
    const lines = splitAt(encode('{"a":1}\r\n{"b":2}\n{"c":3}'), [], 1_000);
    expect(texts(lines)).toEqual(['{"a":1}', '{"b":2}', '{"c":3}']);
    expect(lines.map((line) => line.number)).toEqual([1, 2, 3]);
    // Terminators count toward the file's bytes; the last line has none.
    expect(lines.map((line) => (line.kind === 'too_long' ? 0 : line.bytes))).toEqual([9, 8, 7]);
  });

  it('has no empty line after a final newline, and reports blank lines by number', () => {
    expect(texts(splitAt(encode('{}\n'), [], 100))).toEqual(['{}']);
    const lines = splitAt(encode('{}\n\n  \t\r\n{}\n'), [], 100);
    expect(texts(lines)).toEqual(['{}', 'blank', 'blank', '{}']);
    expect(lines.map((line) => line.number)).toEqual([1, 2, 3, 4]);
  });

  it('decodes a character split across chunks', () => {
    const bytes = encode('{"t":"héllo 😀 ünï"}\n');
    for (let cut = 0; cut <= bytes.length; cut += 1) {
      expect(texts(splitAt(bytes, [cut], 100))).toEqual(['{"t":"héllo 😀 ünï"}']);
    }
  });

  it('reports a line that is not UTF-8 instead of guessing its characters', () => {
    const bytes = new Uint8Array([...encode('{"a":"'), 0xc3, 0x28, ...encode('"}\n{}\n')]);
    expect(texts(splitAt(bytes, [], 100))).toEqual(['invalid_utf8', '{}']);
  });

  it('reports a line over the limit by its 1-based number as soon as it passes the limit', () => {
    const splitter = new JsonlSplitter(10);
    expect(splitter.feed(encode('{}\n0123456789'))).toEqual([{ kind: 'line', number: 1, text: '{}', bytes: 3 }]);
    // The 12th byte of line 2 settles it (the 11th could still have been a CRLF's \r).
    expect(splitter.feed(encode('AB'))).toEqual([{ kind: 'too_long', number: 2, maxLineBytes: 10 }]);
    // The rest of that line is skipped; the next line reads normally.
    expect(splitter.feed(encode('x'.repeat(1_000)))).toEqual([]);
    expect(splitter.feed(encode('yyy\n{"ok":1}\n'))).toEqual([{ kind: 'line', number: 3, text: '{"ok":1}', bytes: 9 }]);
    expect(splitter.end()).toEqual([]);
  });

  it('takes a line of exactly the limit, with or without CRLF', () => {
    const line = `"${'x'.repeat(8)}"`; // 10 bytes
    expect(texts(splitAt(encode(`${line}\r\n${line}\n${line}`), [], 10))).toEqual([line, line, line]);
    expect(texts(splitAt(encode(`${line}x\n`), [], 10))).toEqual(['too_long']);
    expect(texts(splitAt(encode(`${line}\r`), [], 10))).toEqual(['too_long']);
  });

  it('yields the same lines however the bytes are chunked', () => {
    const line = fc.oneof(fc.string({ unit: 'grapheme', maxLength: 30 }), fc.constantFrom('', ' ', '\r', '{"a":"é😀"}', 'x'.repeat(40)));
    fc.assert(
      fc.property(
        fc.array(line, { maxLength: 12 }),
        fc.constantFrom('\n', '\r\n'),
        fc.boolean(),
        fc.array(fc.nat(), { maxLength: 20 }),
        (lines, newline, trailing, cuts) => {
          const bytes = encode(lines.join(newline) + (trailing ? newline : ''));
          expect(splitAt(bytes, cuts, 32)).toEqual(splitAt(bytes, [], 32));
          // One byte at a time too.
          expect(
            splitAt(
              bytes,
              Array.from(bytes, (_, i) => i),
              32,
            ),
          ).toEqual(splitAt(bytes, [], 32));
        },
      ),
      { numRuns: 300 },
    );
  });

  it('reads an async stream of chunks', async () => {
    async function* chunks(): AsyncGenerator<Uint8Array> {
      yield encode('{"a":');
      yield encode('1}\n{"b"');
      yield encode(':2}');
    }
    const lines: JsonlLine[] = [];
    for await (const line of jsonlLines(chunks(), 100)) lines.push(line);
    expect(texts(lines)).toEqual(['{"a":1}', '{"b":2}']);
  });
});
