/**
 * Where in a JSON file a problem is, as `line:column` (both from 1) an editor jumps to: for a syntax
 * error, from the byte offset JSON.parse reports; for a schema problem, from the path of the entry
 * (`upstreams.1.keyEnv`), found by a small scan of the text.
 */

/** Line and column (from 1) of `offset` in `text`; an offset past the end is the end. */
export function lineAndColumn(text: string, offset: number): { line: number; column: number } {
  const end = Math.max(0, Math.min(offset, text.length));
  let line = 1;
  let lineStart = 0;
  for (let i = 0; i < end; i++) {
    if (text.charCodeAt(i) === 10) {
      line++;
      lineStart = i + 1;
    }
  }
  return { line, column: end - lineStart + 1 };
}

/**
 * The offset of JSON.parse's error in `text`: the "at position N" of its message, or the end of
 * the text when the input ended early.
 */
export function syntaxErrorOffset(text: string, message: string): number | undefined {
  const at = /at position (\d+)/.exec(message);
  if (at !== null) return Number(at[1]);
  if (/end of JSON input/i.test(message)) return text.length;
  return undefined;
}

/**
 * The offset where the entry at `path` starts in the JSON `text` (an object member's key, an array
 * element's value), or of the deepest enclosing entry found; undefined when the text is not JSON.
 */
export function offsetOfPath(text: string, path: readonly (string | number)[]): number | undefined {
  const scanner = new Scanner(text);
  try {
    return scanner.find(path);
  } catch {
    return undefined;
  }
}

class Scanner {
  private i = 0;

  constructor(private readonly text: string) {}

  find(path: readonly (string | number)[]): number {
    this.space();
    let found = this.i;
    for (const step of path) {
      const at = this.enter(step);
      if (at === undefined) return found;
      found = at.entry;
      this.i = at.value;
    }
    return found;
  }

  /** In the value at the cursor, the member or element `step`: where its entry and its value start. */
  private enter(step: string | number): { entry: number; value: number } | undefined {
    const open = this.text[this.i];
    if (open === '{') {
      this.i++;
      for (;;) {
        this.space();
        if (this.text[this.i] === '}') return undefined;
        const entry = this.i;
        const key = JSON.parse(this.text.slice(entry, this.skipString())) as string;
        this.space();
        this.i++; // the colon
        this.space();
        if (key === String(step)) return { entry, value: this.i };
        this.skipValue();
        this.space();
        if (this.text[this.i] === ',') this.i++;
      }
    }
    if (open === '[') {
      this.i++;
      for (let index = 0; ; index++) {
        this.space();
        if (this.text[this.i] === ']') return undefined;
        if (index === step) return { entry: this.i, value: this.i };
        this.skipValue();
        this.space();
        if (this.text[this.i] === ',') this.i++;
      }
    }
    return undefined;
  }

  private space(): void {
    while (this.i < this.text.length && /\s/.test(this.text[this.i]!)) this.i++;
  }

  /** Past the string at the cursor; returns its end. */
  private skipString(): number {
    if (this.text[this.i] !== '"') throw new Error('not a string');
    this.i++;
    while (this.i < this.text.length && this.text[this.i] !== '"') this.i += this.text[this.i] === '\\' ? 2 : 1;
    if (this.i >= this.text.length) throw new Error('unterminated string');
    this.i++;
    return this.i;
  }

  private skipValue(): void {
    const c = this.text[this.i];
    if (c === '"') {
      this.skipString();
      return;
    }
    if (c === '{' || c === '[') {
      let depth = 0;
      do {
        const d = this.text[this.i];
        if (d === '"') {
          this.skipString();
          continue;
        }
        if (d === '{' || d === '[') depth++;
        else if (d === '}' || d === ']') depth--;
        this.i++;
        if (this.i > this.text.length) throw new Error('unterminated value');
      } while (depth > 0);
      return;
    }
    while (this.i < this.text.length && !/[\s,}\]]/.test(this.text[this.i]!)) this.i++;
  }
}
