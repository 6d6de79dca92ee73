/**
 * Changes to a JSON object body's top level, made on its bytes: a member's
 * value replaced, a member removed, a member added. Everything else — the
 * other members, their order, the client's whitespace, escapes and number
 * spellings — goes upstream byte for byte, and no parsed body is ever
 * serialised again (which, for a large body, would cost the event loop as
 * much as parsing it). Pure.
 */
import type { BodyLayout, MemberSpan } from './json-scan.js';

/** One change to a top-level member: `json` is the new value's JSON text, or undefined to remove the member. */
export interface BodyEdit {
  readonly key: string;
  readonly json: string | undefined;
}

interface Replacement {
  readonly from: number;
  readonly to: number;
  readonly text: string;
}

/**
 * The body with `edits` applied (a later edit of the same key wins). Only
 * members the layout has spans for may be edited: any other name might be in
 * the body unseen, and adding it would make a duplicate.
 */
export function spliceMembers(bytes: Buffer, layout: BodyLayout, edits: readonly BodyEdit[]): Buffer {
  if (edits.length === 0) return bytes;
  const final = new Map<string, string | undefined>();
  for (const edit of edits) {
    if (!layout.keys.includes(edit.key)) throw new RangeError(`the body's layout has no span for "${edit.key}"`);
    final.set(edit.key, edit.json);
  }
  const replacements: Replacement[] = [];
  const removed: MemberSpan[] = [];
  const added: string[] = [];
  for (const [key, json] of final) {
    const span = Object.hasOwn(layout.members, key) ? layout.members[key] : undefined;
    if (span === undefined) {
      if (json !== undefined) added.push(`${JSON.stringify(key)}:${json}`);
    } else if (json === undefined) {
      removed.push(span);
    } else {
      replacements.push({ from: span.valueStart, to: span.valueEnd, text: json });
    }
  }
  replacements.push(...removals(removed));
  if (added.length > 0) {
    const remaining = layout.memberCount - removed.length;
    replacements.push({ from: layout.open + 1, to: layout.open + 1, text: added.join(',') + (remaining > 0 ? ',' : '') });
  }
  if (replacements.length === 0) return bytes;
  // Insertions at the brace sort before anything that starts there.
  replacements.sort((a, b) => a.from - b.from || a.to - b.to);
  const pieces: Buffer[] = [];
  let at = 0;
  for (const { from, to, text } of replacements) {
    pieces.push(bytes.subarray(at, from), Buffer.from(text, 'utf8'));
    at = to;
  }
  pieces.push(bytes.subarray(at));
  return Buffer.concat(pieces);
}

/**
 * The byte ranges that remove `spans` with the commas between them and their
 * neighbours: a run of adjacent members goes with the comma after it, or —
 * at the end of the object — with the comma before it.
 */
function removals(spans: MemberSpan[]): Replacement[] {
  spans.sort((a, b) => a.keyStart - b.keyStart);
  const ranges: Replacement[] = [];
  for (let i = 0; i < spans.length;) {
    const first = spans[i]!;
    let last = first;
    i += 1;
    while (i < spans.length && last.nextKeyStart === spans[i]!.keyStart) last = spans[i++]!;
    if (last.nextKeyStart !== -1) ranges.push({ from: first.keyStart, to: last.nextKeyStart, text: '' });
    else if (first.prevValueEnd !== -1) ranges.push({ from: first.prevValueEnd, to: last.valueEnd, text: '' });
    else ranges.push({ from: first.keyStart, to: last.valueEnd, text: '' });
  }
  return ranges;
}
