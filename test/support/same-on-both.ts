/**
 * For the storage contracts: what the first backend answered, for the second
 * to answer the same (describeBackends runs SQLite first, then PostgreSQL,
 * in one file). Each backend has its own keys, so ids are named (`ids`: id →
 * label) and key prefixes and the ids of refusals recorded by
 * test/support/dashboard.ts blanked before comparing, inside cursors too.
 */
import { expect } from 'vitest';

export function sameOnBoth(answers: Map<string, unknown>): (backend: string, name: string, value: unknown, ids: Readonly<Record<string, string>>) => void {
  return (backend, name, value, ids) => {
    const named = (text: string): string => {
      if (/^[A-Za-z0-9_-]{40,}$/.test(text)) {
        const decoded = Buffer.from(text, 'base64url').toString('utf8');
        if (decoded.startsWith('{"v":1')) return `cursor:${named(decoded)}`;
      }
      let out = text;
      for (const [id, label] of Object.entries(ids)) out = out.split(id).join(label);
      return out.replace(/tg-[A-Za-z0-9_-]+/g, 'tg-…').replace(/req_rejected_[a-z0-9]+_\d+/g, 'req_rejected_…');
    };
    const walk = (item: unknown): unknown =>
      typeof item === 'string'
        ? named(item)
        : Array.isArray(item)
          ? item.map(walk)
          : item !== null && typeof item === 'object'
            ? Object.fromEntries(Object.entries(item).map(([k, v]) => [k, walk(v)]))
            : item;
    const normal = walk(value);
    if (backend === 'sqlite') answers.set(name, normal);
    else if (answers.has(name)) expect(normal, name).toEqual(answers.get(name));
  };
}
