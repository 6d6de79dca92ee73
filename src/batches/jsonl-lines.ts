/**
 * A batch input file (JSONL) split into lines as its bytes arrive, so an upload is checked while it
 * streams and never held whole: {@link JsonlSplitter} holds at most one line (up to its byte limit)
 * besides the chunk it is given. Pure: no I/O, no clock.
 *
 * - Lines end at `\n`; a `\r` right before it is part of the terminator (CRLF files read the same).
 * - The last line needs no newline; a file that ends with one has no empty line after it.
 * - A line of only whitespace is reported as `blank`: JSON Lines has no blank lines, and a batch
 *   line that does not parse is refused (batch-lines.ts), so the caller decides what a blank
 *   line is worth instead of it vanishing here.
 * - A line longer than `maxLineBytes` is reported as `too_long` once, by its 1-based number, as
 *   soon as the limit is passed (an upload can stop there), and the rest of it is skipped without
 *   being kept.
 * - Each line's bytes are decoded whole, so a character split across chunks reads correctly; a
 *   line that is not valid UTF-8 is reported as `invalid_utf8` (no replacement characters that
 *   would make a different request than the one sent). A byte-order mark is left in the text.
 */

/**
 * One line of the file, by its 1-based number. `bytes` counts its terminator too (`\n` or `\r\n`);
 * a `too_long` line is reported before its end, so it has none.
 */
export type JsonlLine =
  | { readonly kind: 'line'; readonly number: number; readonly text: string; readonly bytes: number }
  | { readonly kind: 'blank'; readonly number: number; readonly bytes: number }
  | { readonly kind: 'too_long'; readonly number: number; readonly maxLineBytes: number }
  | { readonly kind: 'invalid_utf8'; readonly number: number; readonly bytes: number };

const LF = 0x0a;
const CR = 0x0d;
const INITIAL_CAPACITY = 4_096;
/** A line buffer grown past this is let go after its line, so one huge line does not pin its memory for the rest of the file. */
const KEPT_CAPACITY = 1 << 20;

/** Splits a JSONL byte stream into lines: {@link JsonlSplitter.feed} each chunk, then {@link JsonlSplitter.end}. */
export class JsonlSplitter {
  readonly #maxLineBytes: number;
  readonly #decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
  /** The current line's bytes so far (without its terminator), up to the limit. */
  #buffer = new Uint8Array(0);
  #length = 0;
  /** Bytes of the current line seen so far, kept or not (a line past the limit is skipped). */
  #lineBytes = 0;
  #tooLong = false;
  #number = 1;
  #ended = false;

  /** @param maxLineBytes the most bytes a line may have, its terminator not counted */
  constructor(maxLineBytes: number) {
    if (!Number.isSafeInteger(maxLineBytes) || maxLineBytes < 1) throw new RangeError('maxLineBytes must be a positive integer');
    this.#maxLineBytes = maxLineBytes;
  }

  /** The lines this chunk completes (none while a line is still open). */
  feed(chunk: Uint8Array): JsonlLine[] {
    if (this.#ended) throw new Error('JsonlSplitter.feed after end()');
    const lines: JsonlLine[] = [];
    let start = 0;
    while (start < chunk.length) {
      const newline = chunk.indexOf(LF, start);
      const stop = newline === -1 ? chunk.length : newline;
      if (this.#take(chunk, start, stop)) lines.push(this.#tooLongLine());
      if (newline === -1) break;
      const line = this.#finishLine(1);
      if (line !== undefined) lines.push(line);
      start = newline + 1;
    }
    return lines;
  }

  /** The last line, when the file does not end with a newline; none otherwise. */
  end(): JsonlLine[] {
    if (this.#ended) return [];
    this.#ended = true;
    if (this.#lineBytes === 0) return [];
    const line = this.#finishLine(0);
    return line === undefined ? [] : [line];
  }

  /** Bytes `[start, stop)` of `chunk` belong to the current line; true when they take it past the limit. */
  #take(chunk: Uint8Array, start: number, stop: number): boolean {
    const count = stop - start;
    if (count === 0) return false;
    this.#lineBytes += count;
    if (this.#tooLong) return false;
    // One byte over the limit is allowed in the buffer: it may be the `\r` of a CRLF.
    if (this.#lineBytes > this.#maxLineBytes + 1) {
      this.#tooLong = true;
      this.#buffer = new Uint8Array(0);
      this.#length = 0;
      return true;
    }
    this.#reserve(this.#length + count);
    this.#buffer.set(chunk.subarray(start, stop), this.#length);
    this.#length += count;
    return false;
  }

  #tooLongLine(): JsonlLine {
    return { kind: 'too_long', number: this.#number, maxLineBytes: this.#maxLineBytes };
  }

  #reserve(capacity: number): void {
    if (capacity <= this.#buffer.length) return;
    const grown = new Uint8Array(Math.min(Math.max(capacity, this.#buffer.length * 2, INITIAL_CAPACITY), this.#maxLineBytes + 1));
    grown.set(this.#buffer.subarray(0, this.#length));
    this.#buffer = grown;
  }

  /**
   * Ends the current line; `newlineBytes` is 1 when a `\n` ended it, 0 at the end of the file.
   * Undefined for a line already reported as too long.
   */
  #finishLine(newlineBytes: number): JsonlLine | undefined {
    const number = this.#number;
    const reported = this.#tooLong;
    const bytes = this.#lineBytes + newlineBytes;
    let length = this.#length;
    let contentBytes = this.#lineBytes;
    // A `\r` before the `\n` is the terminator's (CRLF); at the end of the file it is content.
    if (newlineBytes === 1 && !this.#tooLong && length > 0 && this.#buffer[length - 1] === CR) {
      length -= 1;
      contentBytes -= 1;
    }
    const tooLong = !reported && contentBytes > this.#maxLineBytes;
    const content = this.#buffer.subarray(0, length);
    this.#number += 1;
    this.#length = 0;
    this.#lineBytes = 0;
    this.#tooLong = false;
    if (this.#buffer.length > KEPT_CAPACITY) this.#buffer = new Uint8Array(0);
    if (reported) return undefined;
    if (tooLong) return { kind: 'too_long', number, maxLineBytes: this.#maxLineBytes };
    let text: string;
    try {
      text = this.#decoder.decode(content);
    } catch {
      return { kind: 'invalid_utf8', number, bytes };
    }
    if (isBlank(text)) return { kind: 'blank', number, bytes };
    return { kind: 'line', number, text, bytes };
  }
}

/** Only JSON whitespace (space, tab, CR, LF), or nothing. */
function isBlank(text: string): boolean {
  return /^[ \t\r\n]*$/.test(text);
}

/** Every line of a byte stream (tests, and callers that hold an async iterable rather than pushing chunks). */
export async function* jsonlLines(chunks: AsyncIterable<Uint8Array> | Iterable<Uint8Array>, maxLineBytes: number): AsyncGenerator<JsonlLine> {
  const splitter = new JsonlSplitter(maxLineBytes);
  for await (const chunk of chunks) yield* splitter.feed(chunk);
  yield* splitter.end();
}
