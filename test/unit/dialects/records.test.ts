import { describe, expect, it } from 'vitest';
import { DIALECTS, dialectOf } from '../../../src/dialects/index.js';
import { ENDPOINTS } from '../../../src/endpoints.js';
import { PROMPT_RULES } from '../../../src/estimate/prompt-rules.js';

describe('dialect records', () => {
  it('has one record for every endpoint, named by it, with its own path', () => {
    expect(Object.keys(DIALECTS).sort()).toEqual([...ENDPOINTS].sort());
    for (const endpoint of ENDPOINTS) expect(dialectOf(endpoint).endpoint).toBe(endpoint);
    const paths = Object.values(DIALECTS).map((dialect) => dialect.path);
    expect(new Set(paths).size).toBe(paths.length);
  });

  it('points each record to the prompt rules the estimate worker finds by name', () => {
    for (const endpoint of ENDPOINTS) expect(DIALECTS[endpoint].prompt).toBe(PROMPT_RULES[endpoint]);
  });

  it('gives each stream its own reader', () => {
    for (const dialect of Object.values(DIALECTS)) expect(dialect.newStreamReader()).not.toBe(dialect.newStreamReader());
  });

  it('limits the output of every dialect that generates, and of none that does not', () => {
    for (const dialect of Object.values(DIALECTS)) {
      const edits = dialect.outputLimitEdits({}, 100);
      expect(edits.length > 0).toBe(dialect.prompt.generates);
    }
  });
});
