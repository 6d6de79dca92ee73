/**
 * src/limits/algorithm/ is the pure half of the limiter (src/limits/README.md):
 * it may import only itself, the Limiter types and the domain (src/domain/:
 * the policy, money, the calendar, which import nothing else of Tollgate's),
 * never a store or a Node module, so it stays testable with a virtual clock
 * and no Redis.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

const PURE = new Set(['../limiter.js', 'zod']);

const ALGORITHM = new URL('../../../../src/limits/algorithm/', import.meta.url);

function importsOf(source: string): string[] {
  return [...source.matchAll(/^\s*(?:import|export)\b[^'"]*?from\s+'([^']+)'/gm)].map((match) => match[1]!);
}

describe('algorithm modules', () => {
  it('import only each other, limiter.ts and pure modules', () => {
    const files = readdirSync(ALGORITHM).filter((name) => name.endsWith('.ts'));
    expect(files.length).toBeGreaterThan(0);
    const outside: string[] = [];
    for (const file of files) {
      for (const specifier of importsOf(readFileSync(new URL(file, ALGORITHM), 'utf8'))) {
        const allowed = /^\.\/[a-z-]+\.js$/.test(specifier) || /^\.\.\/\.\.\/domain\/[a-z-]+\.js$/.test(specifier) || PURE.has(specifier);
        if (!allowed) outside.push(`${file} imports ${specifier}`);
      }
    }
    expect(outside).toEqual([]);
  });
});
