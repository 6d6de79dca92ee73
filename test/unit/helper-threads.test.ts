import { describe, expect, it } from 'vitest';
import { CONFINED_HELPER_NICE, helperNiceFor } from '../../src/helper-threads.js';

describe('helperNiceFor', () => {
  it('auto: the helpers yield the core only while the process may use one CPU', () => {
    expect(helperNiceFor('auto', 1)).toBe(CONFINED_HELPER_NICE);
    expect(CONFINED_HELPER_NICE).toBe(19);
    for (const cpus of [2, 4, 64]) expect(helperNiceFor('auto', cpus)).toBe(0);
  });

  it('a number is the nice value whatever the CPUs, 0 leaving the threads alone', () => {
    for (const cpus of [1, 2, 64]) {
      expect(helperNiceFor(7, cpus)).toBe(7);
      expect(helperNiceFor(0, cpus)).toBe(0);
    }
  });
});
