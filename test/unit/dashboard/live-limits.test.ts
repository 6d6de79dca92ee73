import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { LiveLimits } from '../../../src/dashboard/live-limits.js';
import { createLocalLimiter } from '../../../src/limits/index.js';
import { parseLimit, type Policy } from '../../../src/domain/policy.js';
import type { AuthKey } from '../../../src/domain/keys.js';
import type { Caller } from '../../../src/domain/caller.js';
import type { KeyCache } from '../../../src/keys/cache.js';

const policy = { limits: [parseLimit('requests:10/min')] } as unknown as Policy;

function callerOf(id: string): Caller {
  return { key: { id } as AuthKey, policy, tenant: undefined, tenantPolicy: undefined };
}

/** The keys the gauge samples, in its order. */
function sampledKeys(live: LiveLimits): string[] {
  return [...live.samples((key) => key.id)].map((sample) => sample.key);
}

describe('the keys the bucket gauge samples', () => {
  it('are the 200 noted most recently, oldest first, however often each is noted in a row (property)', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 260 }), { maxLength: 900 }), fc.integer({ min: 1, max: 4 }), (ids, repeat) => {
        const live = new LiveLimits(createLocalLimiter({ now: () => 0 }), [], undefined as unknown as KeyCache, () => undefined);
        const order: string[] = [];
        for (const n of ids) {
          const id = `k${n}`;
          for (let i = 0; i < repeat; i += 1) live.noteCaller(callerOf(id));
          const at = order.indexOf(id);
          if (at !== -1) order.splice(at, 1);
          order.push(id);
        }
        expect(sampledKeys(live)).toEqual(order.slice(-200));
      }),
      { numRuns: 100 },
    );
  });
});
