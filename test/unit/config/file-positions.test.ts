/** A bad config file is located by line and column, as an editor shows it, not by byte offset. */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config/index.js';
import { lineAndColumn, offsetOfPath } from '../../../src/config/json-position.js';

const dir = mkdtempSync(join(tmpdir(), 'tollgate-config-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function problemsOf(name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  try {
    loadConfig({ TOLLGATE_CONFIG: path });
  } catch (error) {
    return (error as Error).message.replaceAll(path, name);
  }
  throw new Error('the config was accepted');
}

describe('config file positions', () => {
  it('names the line and column of a JSON syntax error', () => {
    const text = '{\n  "prices": {\n    "models": {}\n  }\n  "globalLimits": []\n}\n';
    const message = problemsOf('tollgate.json', text);
    expect(message).toContain('tollgate.json:5:3: not valid JSON:');
    expect(message).not.toMatch(/position \d+/);
  });

  it('names the end of a file cut short', () => {
    expect(problemsOf('short.json', '{\n  "prices": {')).toContain('short.json:2:14: not valid JSON:');
  });

  it('names the line of a bad entry and of an unknown key', () => {
    const text = [
      '{',
      '  "prices": {',
      '    "models": {',
      '      "my-model": {"input": "x", "output": 2}',
      '    }',
      '  },',
      '  "globalLimts": []',
      '}',
      '',
    ].join('\n');
    const message = problemsOf('entries.json', text);
    expect(message).toContain('entries.json:4:20: prices.models.my-model.input:');
    expect(message).toContain('entries.json:7:3: (root): Unrecognized key: "globalLimts"');
  });

  it('maps offsets and paths to positions', () => {
    const text = '{"a": [1, {"b": "x\\"y"}], "c": 2}';
    expect(lineAndColumn('ab\ncd', 4)).toEqual({ line: 2, column: 2 });
    expect(offsetOfPath(text, ['c'])).toBe(text.indexOf('"c"'));
    expect(offsetOfPath(text, ['a', 1, 'b'])).toBe(text.indexOf('"b"'));
    // A path that goes further than the text: the deepest entry found.
    expect(offsetOfPath(text, ['a', 5])).toBe(text.indexOf('"a"'));
    expect(offsetOfPath('not json', ['a'])).toBe(0);
  });
});
