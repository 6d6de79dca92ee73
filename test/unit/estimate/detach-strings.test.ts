import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { detachLargeStrings, reattachStrings } from '../../../src/estimate/detach-strings.js';

describe('large strings travel to the worker apart from the body', () => {
  it('puts every detached string back where it was, leaving the original body untouched', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 6 }), (body) => {
        const before = JSON.stringify(body);
        const { skeleton, strings } = detachLargeStrings(body, 3);
        const cloned = structuredClone({ skeleton, strings: strings.map((s) => ({ path: s.path, value: s.value })) });
        const restored = reattachStrings(cloned.skeleton, cloned.strings);
        return JSON.stringify(body) === before && JSON.stringify(restored) === before;
      }),
      { numRuns: 500 },
    );
  });

  it('replaces large strings with null in a copy and shares everything else', () => {
    const big = 'x'.repeat(100);
    const untouched = { deep: ['small'] };
    const body = { model: 'm', messages: [{ role: 'user', content: big }], other: untouched, __proto__field: big };
    const { skeleton, strings } = detachLargeStrings(body, 50);
    expect(strings.map((s) => s.path)).toEqual(expect.arrayContaining([['messages', 0, 'content'], ['__proto__field']]));
    expect((skeleton as typeof body).messages[0]?.content).toBeNull();
    expect((skeleton as typeof body).other).toBe(untouched);
    expect(body.messages[0]?.content).toBe(big);
  });

  it('keeps a "__proto__" key an own property when putting strings back', () => {
    const body = JSON.parse(`{"__proto__": {"text": "${'y'.repeat(64)}"}}`) as Record<string, unknown>;
    const { skeleton, strings } = detachLargeStrings(body, 10);
    const restored = reattachStrings(structuredClone(skeleton), strings) as Record<string, unknown>;
    expect(Object.getPrototypeOf(restored)).toBe(Object.prototype);
    expect(JSON.stringify(restored)).toBe(JSON.stringify(body));
  });
});
