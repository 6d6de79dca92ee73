/**
 * The primitives' prototypes made fast again after the server's modules have loaded.
 *
 * On V8 (Node 20's 11.3) a class that extends String turns `String.prototype` into a dictionary
 * when it is declared, and ioredis 6 declares one on import (its RESP3 decoder's
 * `VerbatimString`). V8 makes a prototype fast again only when an inline cache that has feedback
 * misses on a load whose receiver is an object; a proxy that calls methods on string primitives
 * only never does that, so from then on every `charCodeAt`, `slice` or `toLowerCase` on a string
 * looked its method up in a dictionary: a third of the event loop's instructions per request,
 * most of it in the tokenizer's loops (docs/performance.md, "String methods looked up in a
 * dictionary"). Loads through wrapper objects, from a function called often enough for V8 to give
 * it feedback, make the prototypes fast again. Harmless when nothing made them slow.
 */

/** The primitives whose prototypes a subclass can leave slow: what their values' method calls look up. */
const WRAPPERS: readonly object[] = [Object(''), Object(0), Object(false), Object(0n), Object(Symbol('wrapper'))] as object[];

/**
 * More calls than V8 lets pass before it allocates a function's feedback (8 in V8 11.3), so the
 * loads below miss with feedback at least twice.
 */
const CALLS = 64;

/** A load through a wrapper object: its misses are what makes V8 optimise the prototype chain. */
function loadThrough(wrapper: object): unknown {
  return (wrapper as { valueOf?: unknown }).valueOf;
}

/** Makes the primitives' prototypes fast again; call once the modules that may subclass them have loaded. */
export function restoreFastPrototypes(): void {
  for (let call = 0; call < CALLS; call += 1) {
    for (const wrapper of WRAPPERS) loadThrough(wrapper);
  }
}
