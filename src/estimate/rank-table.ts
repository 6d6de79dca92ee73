/**
 * The byte-pair ranks of an encoding, held in typed arrays rather than a `Map<string, number>`.
 *
 * Why: a Map of o200k_base's 200,000 tokens is 400,000 small heap objects (15 MB) that every full
 * collection marks and compacts again; with cl100k_base as well they made most of a proxy's live
 * heap and ~8 ms of each full collection (docs/performance.md, "The ranks leave the heap"). Typed
 * arrays are a few objects whose contents the collector never walks. Lookups also take a range of a
 * byte string, so the merge loops no longer slice a string for every candidate pair.
 *
 * Layout: every token's bytes back to back in `bytes`, entry `i` spanning `starts[i]` to
 * `starts[i + 1]` with rank `ranks[i]`; `slots` is an open-addressing (linear probing) table of
 * entry numbers plus one, 0 meaning empty, at most half full.
 */

/** FNV-1a over `text`'s chars in [start, end), each a byte (latin1), as a 32-bit integer. */
function hashRange(text: string, start: number, end: number): number {
  let hash = 0x811c9dc5;
  for (let i = start; i < end; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash;
}

function hashBytes(bytes: Uint8Array, start: number, end: number): number {
  let hash = 0x811c9dc5;
  for (let i = start; i < end; i++) {
    hash ^= bytes[i] as number;
    hash = Math.imul(hash, 0x01000193);
  }
  return hash;
}

export class RankTable {
  private readonly mask: number;

  private constructor(
    private readonly bytes: Uint8Array,
    private readonly starts: Int32Array,
    private readonly ranks: Int32Array,
    private readonly slots: Int32Array,
    /** Number of tokens. */
    readonly size: number,
    /** Length of the longest token, in bytes: a longer range is never one. */
    readonly maxTokenBytes: number,
  ) {
    this.mask = slots.length - 1;
  }

  /**
   * The rank of the token whose bytes are `text`'s chars in [start, end) (a latin1 byte string, one
   * char per byte), or -1 when no token has those bytes.
   */
  rank(text: string, start: number, end: number): number {
    const length = end - start;
    let slot = hashRange(text, start, end) & this.mask;
    for (;;) {
      const stored = this.slots[slot] as number;
      if (stored === 0) return -1;
      const entry = stored - 1;
      const from = this.starts[entry] as number;
      if ((this.starts[entry + 1] as number) - from === length) {
        let i = 0;
        while (i < length && this.bytes[from + i] === text.charCodeAt(start + i)) i++;
        if (i === length) return this.ranks[entry] as number;
      }
      slot = (slot + 1) & this.mask;
    }
  }

  /**
   * {@link rank} of the bytes [start, end) of `bytes`: a typed array is read faster than a string's
   * chars (tokenizer.ts). The same probe as `rank`, written out again so each loop reads one kind
   * of input and stays monomorphic on the tokenizer's hot path.
   */
  rankOfBytes(bytes: Uint8Array, start: number, end: number): number {
    const length = end - start;
    let slot = hashBytes(bytes, start, end) & this.mask;
    for (;;) {
      const stored = this.slots[slot] as number;
      if (stored === 0) return -1;
      const entry = stored - 1;
      const from = this.starts[entry] as number;
      if ((this.starts[entry + 1] as number) - from === length) {
        let i = 0;
        while (i < length && this.bytes[from + i] === bytes[start + i]) i++;
        if (i === length) return this.ranks[entry] as number;
      }
      slot = (slot + 1) & this.mask;
    }
  }

  /**
   * Builds a table from tokens in any order, yielding every `sliceEvery` tokens so a caller can
   * spread the build over event-loop turns. `maxBytes` bounds the sum of the tokens' lengths and
   * `maxTokens` their number (the arrays are sized once, then trimmed).
   */
  static *build(
    tokens: Iterable<readonly [bytes: Uint8Array, rank: number]>,
    maxBytes: number,
    maxTokens: number,
    sliceEvery = 2048,
  ): Generator<void, RankTable, void> {
    let bytes = new Uint8Array(maxBytes);
    let starts = new Int32Array(maxTokens + 1);
    let ranks = new Int32Array(maxTokens);
    let size = 0;
    let used = 0;
    let maxTokenBytes = 0;
    for (const [token, rank] of tokens) {
      if (size === maxTokens || used + token.length > maxBytes) {
        throw new RangeError(`rank table: more than ${maxTokens} tokens or ${maxBytes} bytes`);
      }
      bytes.set(token, used);
      ranks[size] = rank;
      if (token.length > maxTokenBytes) maxTokenBytes = token.length;
      used += token.length;
      size += 1;
      starts[size] = used;
      if (size % sliceEvery === 0) yield;
    }
    bytes = bytes.slice(0, used);
    starts = starts.slice(0, size + 1);
    ranks = ranks.slice(0, size);
    let capacity = 2;
    while (capacity < size * 2) capacity *= 2;
    const slots = new Int32Array(capacity);
    const mask = capacity - 1;
    for (let entry = 0; entry < size; entry++) {
      let slot = hashBytes(bytes, starts[entry] as number, starts[entry + 1] as number) & mask;
      while ((slots[slot] as number) !== 0) slot = (slot + 1) & mask;
      slots[slot] = entry + 1;
      if ((entry + 1) % sliceEvery === 0) yield;
    }
    return new RankTable(bytes, starts, ranks, slots, size, maxTokenBytes);
  }
}
