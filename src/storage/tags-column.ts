/** How a ledger row's tags are stored in its `tags` column, on both backends. Pure. */

/** The ledger's `tags` column: comma-joined, or null. */
export function encodeTags(tags: readonly string[]): string | null {
  return tags.length === 0 ? null : tags.join(',');
}

/** The ledger's `tags` column back to a list. */
export function decodeTags(text: string | null): string[] {
  return text === null || text === '' ? [] : text.split(',');
}
