import { Buffer } from 'node:buffer';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { RankTable } from '../../../src/estimate/rank-table.js';
import { loadEncodingSync } from '../../../src/estimate/tokenizer.js';

function tableOf(tokens: ReadonlyArray<readonly [string, number]>, sliceEvery = 2048): RankTable {
  const entries = tokens.map(([bytes, rank]) => [Buffer.from(bytes, 'latin1'), rank] as const);
  const build = RankTable.build(entries, 1 + entries.reduce((sum, [bytes]) => sum + bytes.length, 0), entries.length, sliceEvery);
  let step = build.next();
  while (!step.done) step = build.next();
  return step.value;
}

// Byte strings (latin1, one char per byte) including every byte value, so the table is not only
// exercised on ASCII.
const byteString = fc.array(fc.integer({ min: 0, max: 255 }), { minLength: 1, maxLength: 12 }).map((bytes) => String.fromCharCode(...bytes));

describe('RankTable', () => {
  it('finds what a Map finds, for tokens and for strings that are not tokens', () => {
    fc.assert(
      fc.property(fc.uniqueArray(byteString, { maxLength: 300 }), fc.array(byteString, { maxLength: 50 }), (tokens, probes) => {
        const map = new Map(tokens.map((bytes, i) => [bytes, i * 3 + 1] as const));
        const table = tableOf([...map], 7);
        expect(table.size).toBe(map.size);
        for (const bytes of [...tokens, ...probes]) {
          expect(table.rank(bytes, 0, bytes.length)).toBe(map.get(bytes) ?? -1);
          // The same lookup over a typed array of the bytes, inside a longer one (the tokenizer's buffer).
          expect(table.rankOfBytes(Buffer.from(`x${bytes}y`, 'latin1'), 1, bytes.length + 1)).toBe(map.get(bytes) ?? -1);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('looks up a range of a longer string without reading outside it', () => {
    const table = tableOf([
      ['ab', 0],
      ['abc', 1],
      ['bc', 2],
    ]);
    expect(table.rank('xabcx', 1, 3)).toBe(0);
    expect(table.rank('xabcx', 1, 4)).toBe(1);
    expect(table.rank('xabcx', 2, 4)).toBe(2);
    expect(table.rank('xabcx', 0, 2)).toBe(-1);
    expect(table.rank('xabcx', 1, 5)).toBe(-1);
    expect(table.rank('xabcx', 2, 2)).toBe(-1);
    const bytes = Buffer.from('xabcx', 'latin1');
    expect([table.rankOfBytes(bytes, 1, 3), table.rankOfBytes(bytes, 1, 4), table.rankOfBytes(bytes, 2, 4)]).toEqual([0, 1, 2]);
    expect([table.rankOfBytes(bytes, 0, 2), table.rankOfBytes(bytes, 1, 5), table.rankOfBytes(bytes, 2, 2)]).toEqual([-1, -1, -1]);
  });

  it('yields while it builds, so a loader can spread the work over event-loop turns', () => {
    const entries = Array.from({ length: 10 }, (_, i) => [Buffer.from(`t${i}`, 'latin1'), i] as const);
    const build = RankTable.build(entries, 100, 10, 3);
    let yields = 0;
    let step = build.next();
    while (!step.done) {
      yields += 1;
      step = build.next();
    }
    // 3 while copying 10 tokens, 3 while hashing them.
    expect(yields).toBe(6);
    expect(step.value.rank('t9', 0, 2)).toBe(9);
  });

  it('refuses more tokens or bytes than it was sized for', () => {
    const entries = [[Buffer.from('abc', 'latin1'), 0] as const, [Buffer.from('de', 'latin1'), 1] as const];
    const drain = (maxBytes: number, maxTokens: number): void => {
      const build = RankTable.build(entries, maxBytes, maxTokens);
      while (!build.next().done);
    };
    expect(() => drain(5, 1)).toThrow(RangeError);
    expect(() => drain(4, 2)).toThrow(RangeError);
    expect(() => drain(5, 2)).not.toThrow();
  });

  it("holds every token of o200k_base's rank file at its rank", async () => {
    const { default: file } = (await import('js-tiktoken/ranks/o200k_base')) as { default: { bpe_ranks: string } };
    const { ranks } = loadEncodingSync('o200k_base');
    let tokens = 0;
    for (const line of file.bpe_ranks.split('\n')) {
      const [, first, ...encoded] = line.split(' ');
      if (first === undefined) continue;
      encoded.forEach((base64, i) => {
        const bytes = Buffer.from(base64, 'base64').toString('latin1');
        expect(ranks.rank(bytes, 0, bytes.length)).toBe(Number(first) + i);
        tokens += 1;
      });
    }
    expect(ranks.size).toBe(tokens);
    expect(tokens).toBeGreaterThan(199_000);
  });
});
