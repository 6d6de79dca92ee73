/**
 * The scan of a body's bytes (src/http/json-scan.ts): it finds a duplicate
 * name in any object, however the names are spelled, names its path, and
 * maps where each top-level member sits.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { scanJsonObject } from '../../../src/http/json-scan.js';
import { countNamedObjects, pathName, spell, spelledObject } from '../../support/json-text.js';

const scan = (text: string, keep: readonly string[] = []) => scanJsonObject(Buffer.from(text), new Set(keep));

describe('duplicate keys', () => {
  it('passes every object without one, however it is spelled', () => {
    fc.assert(
      fc.property(spelledObject, ({ value, choices }) => {
        const { text } = spell(value, choices);
        expect(JSON.parse(text)).toEqual(value);
        expect(scan(text).ok).toBe(true);
      }),
      { numRuns: 500 },
    );
  });

  it('finds a duplicate injected into any object, and names its path', () => {
    const withTarget = spelledObject
      .filter(({ value }) => countNamedObjects(value) > 0)
      .chain((spelled) => fc.record({ spelled: fc.constant(spelled), target: fc.nat({ max: countNamedObjects(spelled.value) - 1 }) }));
    fc.assert(
      fc.property(withTarget, ({ spelled, target }) => {
        const { text, duplicate } = spell(spelled.value, spelled.choices, target);
        const result = scan(text);
        expect(result).toEqual({ ok: false, duplicatePath: pathName(duplicate!) });
      }),
      { numRuns: 500 },
    );
  });

  it('compares names as decoded strings', () => {
    expect(scan('{"model":"a","\\u006dodel":"b"}')).toEqual({ ok: false, duplicatePath: 'model' });
    expect(scan('{"caf\u00e9":1,"caf\\u00e9":2}')).toEqual({ ok: false, duplicatePath: '["café"]' });
    expect(scan('{"a\\"b":1,"a\\u0022b":2}')).toEqual({ ok: false, duplicatePath: '["a\\"b"]' });
    expect(scan('{"a":1,"A":2,"a ":3,"\\u0061\\u0062":4,"b":{"a":5}}').ok).toBe(true);
  });

  it('finds one among many names, and deep inside arrays', () => {
    const names = Array.from({ length: 40 }, (_, i) => `"k${i}":${i}`).join(',');
    expect(scan(`{${names},"k17":0}`)).toEqual({ ok: false, duplicatePath: 'k17' });
    expect(scan(`{"messages":[{"role":"user","content":"x"},{"role":"user","content":"y","role":"system"}]}`)).toEqual({
      ok: false,
      duplicatePath: 'messages[1].role',
    });
    expect(scan('{"a":[[[{"b":{"c":1,"c":2}}]]]}')).toEqual({ ok: false, duplicatePath: 'a[0][0][0].b.c' });
  });

  it('never echoes a long name whole', () => {
    const name = 'n'.repeat(10_000);
    const result = scan(`{"${name}":1,"${name}":2}`);
    expect(result.ok).toBe(false);
    expect((result as { duplicatePath: string }).duplicatePath.length).toBeLessThanOrEqual(257);
  });

  it('walks nesting of any depth without recursion', () => {
    const deep = `{"a":${'['.repeat(200_000)}${']'.repeat(200_000)},"a":1}`;
    expect(scan(deep)).toEqual({ ok: false, duplicatePath: 'a' });
  });
});

describe('the top-level layout', () => {
  it('gives each kept member the exact bytes of its name and value, and its neighbours', () => {
    fc.assert(
      fc.property(spelledObject, ({ value, choices }) => {
        const { text } = spell(value, choices);
        const bytes = Buffer.from(text);
        const names = Object.keys(value);
        const result = scanJsonObject(bytes, new Set(names));
        if (!result.ok) throw new Error('no duplicate was injected');
        const { layout } = result;
        expect(layout.memberCount).toBe(names.length);
        expect(bytes[layout.open]).toBe(0x7b);
        const spans = names.map((name) => layout.members[name]!).sort((a, b) => a.keyStart - b.keyStart);
        spans.forEach((span, i) => {
          expect(JSON.parse(bytes.toString('utf8', span.valueStart, span.valueEnd))).toEqual(value[keyAt(bytes, span.keyStart)]);
          expect(span.prevValueEnd).toBe(i === 0 ? -1 : spans[i - 1]!.valueEnd);
          expect(span.nextKeyStart).toBe(i === spans.length - 1 ? -1 : spans[i + 1]!.keyStart);
        });
      }),
      { numRuns: 500 },
    );
  });

  it('keeps spans only of the names asked for, and skips a byte order mark', () => {
    const result = scanJsonObject(Buffer.from('\ufeff {"model":"gpt-4o", "messages":[],"n":2}'), new Set(['model', 'n', 'user']));
    expect(result.ok).toBe(true);
    const { layout } = result as Extract<typeof result, { ok: true }>;
    expect(Object.keys(layout.members).sort()).toEqual(['model', 'n']);
    expect(layout.open).toBe(4);
    expect(layout.memberCount).toBe(3);
  });
});

/** The decoded name whose quoted spelling starts at `start`. */
function keyAt(bytes: Buffer, start: number): string {
  for (let end = start + 1; end < bytes.length; end++) {
    if (bytes[end] !== 0x22) continue;
    let slashes = 0;
    for (let i = end - 1; bytes[i] === 0x5c; i--) slashes += 1;
    if (slashes % 2 === 0) return JSON.parse(bytes.toString('utf8', start, end + 1)) as string;
  }
  throw new Error('unterminated name');
}
