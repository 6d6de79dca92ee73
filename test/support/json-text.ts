/**
 * JSON texts the way clients write them — any whitespace, names and strings
 * spelled with or without `\u` escapes — for property tests of code that
 * reads a body's bytes (src/http/json-scan.ts, src/http/body-splice.ts); and
 * the same texts with one duplicate name injected into one object.
 */
import fc from 'fast-check';

/** A JSON object body and the choices that spell it. */
export interface SpelledObject {
  readonly value: Record<string, unknown>;
  /** Drawn in turn for every whitespace and spelling decision. */
  readonly choices: readonly number[];
}

export const spelledObject: fc.Arbitrary<SpelledObject> = fc.record({
  // Through JSON and back: -0 has no JSON spelling.
  value: fc
    .dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 4 }), { maxKeys: 12 })
    .map((value) => JSON.parse(JSON.stringify(value)) as Record<string, unknown>),
  choices: fc.array(fc.nat({ max: 1000 }), { minLength: 1, maxLength: 64 }),
});

type Segment = string | number;

/** The spelling of `value`; with `inject`, the `inject`-th object with a name (depth first) repeats its first name. */
export function spell(value: unknown, choices: readonly number[], inject?: number): { text: string; duplicate: Segment[] | undefined } {
  let turn = 0;
  const choose = (): number => choices[turn++ % choices.length]!;
  const space = (): string => ['', '', ' ', '\n  ', '\t', ' \r\n '][choose() % 6]!;
  const string = (text: string): string => {
    // Escape the first character one time in three: "\u0061bc" is "abc".
    if (text === '' || choose() % 3 !== 0) return JSON.stringify(text);
    const code = text.charCodeAt(0).toString(16).padStart(4, '0');
    return `"\\u${code}${JSON.stringify(text.slice(1)).slice(1)}`;
  };
  let objects = 0;
  let duplicate: Segment[] | undefined;
  const write = (node: unknown, path: Segment[]): string => {
    if (Array.isArray(node)) {
      const items = node.map((item, i) => space() + write(item, [...path, i]) + space());
      return `[${items.join(',') || space()}]`;
    }
    if (node !== null && typeof node === 'object') {
      const names = Object.keys(node);
      if (names.length === 0) return `{${space()}}`;
      const index = objects++;
      const members = names.map(
        (name) => `${space()}${string(name)}${space()}:${space()}${write((node as Record<string, unknown>)[name], [...path, name])}${space()}`,
      );
      if (index === inject) {
        members.push(`${space()}${string(names[0]!)}:${space()}${JSON.stringify(choose())}`);
        duplicate = [...path, names[0]!];
      }
      return `{${members.join(',')}}`;
    }
    return typeof node === 'string' ? string(node) : JSON.stringify(node);
  };
  const text = space() + write(value, []) + space();
  return { text, duplicate };
}

/** Objects with at least one name in `value` (the places a duplicate can be injected). */
export function countNamedObjects(value: unknown): number {
  if (Array.isArray(value)) return value.reduce((sum: number, item) => sum + countNamedObjects(item), 0);
  if (value === null || typeof value !== 'object') return 0;
  const children = Object.values(value).reduce((sum: number, item) => sum + countNamedObjects(item), 0);
  return children + (Object.keys(value).length > 0 ? 1 : 0);
}

/** A path as the scanner names it: `messages[3].content`, odd names as `["a b"]` (long ones cut at 64 characters). */
export function pathName(segments: readonly Segment[]): string {
  let path = '';
  for (const segment of segments) {
    if (typeof segment === 'number') {
      path += `[${segment}]`;
      continue;
    }
    const shown = segment.length > 64 ? `${segment.slice(0, 64)}…` : segment;
    path += /^[A-Za-z_$][\w$-]*$/.test(shown) ? (path === '' ? shown : `.${shown}`) : `[${JSON.stringify(shown)}]`;
  }
  return path.length > 256 ? `${path.slice(0, 256)}…` : path;
}
