/**
 * Posting a body to a worker copies it on the main thread (~2 ns per character). To keep that
 * copy from blocking the event loop on multi-megabyte bodies, large strings are taken out of the
 * body and sent separately in slices, one slice per event-loop turn; the worker puts them back.
 */
import { isJsonObject, MAX_NESTING_DEPTH } from './read-body.js';

/** Where a detached string sat in the body: keys and indices from the root. */
export type BodyPath = ReadonlyArray<string | number>;

/** A body with its large strings replaced by null, and those strings with their paths. */
export interface DetachedBody {
  readonly skeleton: unknown;
  readonly strings: ReadonlyArray<{ readonly path: BodyPath; readonly value: string }>;
}

/** Most nodes inspected; past this the rest of the body is simply cloned as it is. */
const MAX_VISITED_NODES = 200_000;

function copyContainer(value: unknown): unknown {
  if (Array.isArray(value)) return value.slice();
  return { ...(value as Record<string, unknown>) };
}

function getChild(container: unknown, key: string | number): unknown {
  if (Array.isArray(container)) return container[key as number];
  const record = container as Record<string, unknown>;
  return Object.hasOwn(record, key) ? record[key as string] : undefined;
}

/** Sets an own property even for keys like "__proto__" (plain assignment would not). */
function setChild(container: unknown, key: string | number, value: unknown): void {
  if (Array.isArray(container)) container[key as number] = value;
  else Object.defineProperty(container, key, { value, writable: true, enumerable: true, configurable: true });
}

/** Takes strings of at least `minChars` out of `body` (which is left untouched). */
export function detachLargeStrings(body: unknown, minChars: number): DetachedBody {
  const strings: Array<{ path: BodyPath; value: string }> = [];
  const stack: Array<{ value: unknown; path: BodyPath }> = [{ value: body, path: [] }];
  let visited = 0;
  while (stack.length > 0 && visited < MAX_VISITED_NODES) {
    const { value, path } = stack.pop() as { value: unknown; path: BodyPath };
    visited += 1;
    if (typeof value === 'string') {
      if (value.length >= minChars && path.length > 0) strings.push({ path, value });
      continue;
    }
    if (path.length >= MAX_NESTING_DEPTH) continue;
    if (Array.isArray(value)) {
      for (let i = 0; i < value.length; i++) {
        const child: unknown = value[i];
        if (typeof child === 'string' ? child.length >= minChars : typeof child === 'object' && child !== null) {
          stack.push({ value: child, path: [...path, i] });
        }
      }
    } else if (isJsonObject(value)) {
      for (const key of Object.keys(value)) {
        const child = value[key];
        if (typeof child === 'string' ? child.length >= minChars : typeof child === 'object' && child !== null) {
          stack.push({ value: child, path: [...path, key] });
        }
      }
    }
  }
  if (strings.length === 0) return { skeleton: body, strings };
  // Copy only the containers on the way to a detached string; everything else is shared.
  const copies = new Map<unknown, unknown>();
  const skeleton = copyContainer(body);
  copies.set(body, skeleton);
  for (const { path } of strings) {
    let source: unknown = body;
    let target: unknown = skeleton;
    for (let i = 0; i < path.length - 1; i++) {
      const key = path[i] as string | number;
      const child = getChild(source, key);
      let childCopy = copies.get(child);
      if (childCopy === undefined) {
        childCopy = copyContainer(child);
        copies.set(child, childCopy);
        setChild(target, key, childCopy);
      }
      source = child;
      target = childCopy;
    }
    setChild(target, path[path.length - 1] as string | number, null);
  }
  return { skeleton, strings };
}

/** Puts detached strings back at their paths in a skeleton (worker side). */
export function reattachStrings(skeleton: unknown, strings: ReadonlyArray<{ readonly path: BodyPath; readonly value: string }>): unknown {
  for (const { path, value } of strings) {
    let target: unknown = skeleton;
    for (let i = 0; i < path.length - 1; i++) target = getChild(target, path[i] as string | number);
    setChild(target, path[path.length - 1] as string | number, value);
  }
  return skeleton;
}
