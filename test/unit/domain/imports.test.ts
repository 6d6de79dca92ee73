/**
 * src/domain/ is the ground floor (docs/architecture.md): the policy, the
 * caller, money and the calendar, which every other layer reads. It imports
 * only itself and zod, so nothing it defines can drag a store, a limiter or
 * Node's I/O into a module that only wanted a type.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

const DOMAIN = new URL('../../../src/domain/', import.meta.url);

function importsOf(source: string): string[] {
  return [...source.matchAll(/^\s*(?:import|export)\b[^'"]*?from\s+'([^']+)'/gm)].map((match) => match[1]!);
}

describe('the domain', () => {
  it('imports only itself and zod', () => {
    const files = readdirSync(DOMAIN).filter((name) => name.endsWith('.ts'));
    expect(files).toContain('policy.ts');
    const outside: string[] = [];
    for (const file of files) {
      for (const specifier of importsOf(readFileSync(new URL(file, DOMAIN), 'utf8'))) {
        if (!/^\.\/[a-z-]+\.js$/.test(specifier) && specifier !== 'zod') outside.push(`${file} imports ${specifier}`);
      }
    }
    expect(outside).toEqual([]);
  });
});
