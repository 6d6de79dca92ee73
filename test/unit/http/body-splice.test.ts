/**
 * Changes spliced into a body's bytes (src/http/body-splice.ts): the result
 * parses to the client's body plus exactly the changes, and every member not
 * changed goes on byte for byte.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { spliceMembers, type BodyEdit } from '../../../src/http/body-splice.js';
import { scanJsonObject, type BodyLayout } from '../../../src/http/json-scan.js';
import { spell } from '../../support/json-text.js';

const EDITABLE = ['model', 'max_tokens', 'max_completion_tokens', 'stream_options', 'user', 'n'] as const;

function layoutOf(bytes: Buffer, keep: Iterable<string>): BodyLayout {
  const result = scanJsonObject(bytes, new Set(keep));
  if (!result.ok) throw new Error(`duplicate ${result.duplicatePath}`);
  return result.layout;
}

const body = fc.record({
  value: fc
    .dictionary(fc.oneof(fc.constantFrom(...EDITABLE), fc.string({ maxLength: 6 })), fc.jsonValue({ maxDepth: 3 }), { maxKeys: 10 })
    .map((value) => JSON.parse(JSON.stringify(value)) as Record<string, unknown>),
  choices: fc.array(fc.nat({ max: 1000 }), { minLength: 1, maxLength: 32 }),
});

const edits = fc.array(
  fc.record({
    key: fc.constantFrom(...EDITABLE),
    value: fc.option(
      fc.jsonValue({ maxDepth: 2 }).map((value) => JSON.parse(JSON.stringify(value)) as unknown),
      { nil: undefined },
    ),
  }),
  { maxLength: 6 },
);

describe('spliceMembers', () => {
  it('gives the client’s body plus exactly the changes, for any body and any changes', () => {
    fc.assert(
      fc.property(body, edits, ({ value, choices }, changes) => {
        const bytes = Buffer.from(spell(value, choices).text);
        const expected: Record<string, unknown> = JSON.parse(bytes.toString()) as Record<string, unknown>;
        for (const { key, value: changed } of changes) {
          if (changed === undefined) delete expected[key];
          else Object.defineProperty(expected, key, { value: changed, enumerable: true, writable: true, configurable: true });
        }
        const spliced = spliceMembers(
          bytes,
          layoutOf(bytes, EDITABLE),
          changes.map((change): BodyEdit => ({ key: change.key, json: change.value === undefined ? undefined : JSON.stringify(change.value) })),
        );
        const text = spliced.toString();
        expect(JSON.parse(text)).toEqual(expected);
        // Still one of each name: a change never adds a second.
        expect(scanJsonObject(spliced, new Set()).ok).toBe(true);
        // Every member not changed is still there, spelled as the client spelled it.
        const all = layoutOf(bytes, Object.keys(value));
        const changed = new Set<string>(changes.map((change) => change.key));
        for (const name of Object.keys(value)) {
          if (changed.has(name)) continue;
          const span = all.members[name]!;
          expect(text).toContain(bytes.toString('utf8', span.keyStart, span.valueEnd));
        }
      }),
      { numRuns: 1000 },
    );
  });

  it('returns the very same bytes when nothing changes', () => {
    const bytes = Buffer.from('{ "model" : "gpt-4o" }');
    expect(spliceMembers(bytes, layoutOf(bytes, EDITABLE), [])).toBe(bytes);
  });

  it('keeps the client’s spacing around what it does not touch', () => {
    const bytes = Buffer.from('{\n  "model" : "gpt-4o",\n  "max_tokens": 5000,\n  "messages": []\n}');
    const layout = layoutOf(bytes, EDITABLE);
    expect(spliceMembers(bytes, layout, [{ key: 'max_tokens', json: '900' }]).toString()).toBe(
      '{\n  "model" : "gpt-4o",\n  "max_tokens": 900,\n  "messages": []\n}',
    );
    expect(spliceMembers(bytes, layout, [{ key: 'max_tokens', json: undefined }]).toString()).toBe('{\n  "model" : "gpt-4o",\n  "messages": []\n}');
    expect(spliceMembers(bytes, layout, [{ key: 'user', json: '"u1"' }]).toString()).toBe(
      '{"user":"u1",\n  "model" : "gpt-4o",\n  "max_tokens": 5000,\n  "messages": []\n}',
    );
  });

  it('removes the last members with the comma before them, and fills an object it emptied', () => {
    const bytes = Buffer.from('{"messages":[],"max_tokens":5,"max_completion_tokens":6}');
    const layout = layoutOf(bytes, EDITABLE);
    const both = [
      { key: 'max_tokens', json: undefined },
      { key: 'max_completion_tokens', json: undefined },
    ];
    expect(spliceMembers(bytes, layout, both).toString()).toBe('{"messages":[]}');
    const only = Buffer.from('{"max_tokens":5}');
    expect(
      spliceMembers(only, layoutOf(only, EDITABLE), [
        { key: 'max_tokens', json: undefined },
        { key: 'n', json: '1' },
      ]).toString(),
    ).toBe('{"n":1}');
  });

  it('refuses to change a member the layout has no span for (it could be in the body unseen)', () => {
    const bytes = Buffer.from('{"messages":[]}');
    expect(() => spliceMembers(bytes, layoutOf(bytes, ['model']), [{ key: 'messages', json: 'null' }])).toThrow(RangeError);
  });
});
