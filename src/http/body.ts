/**
 * Reading a client's JSON body: the size limit is enforced while the bytes
 * arrive (a 2 GB upload is cut off at the limit, not after), the bytes must be
 * valid UTF-8, and the JSON must be an object.
 */
import { TollgateError } from '../errors.js';

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });

/** Reads the whole body, refusing more than `limit` bytes. */
export async function readBodyBytes(request: Request, limit: number): Promise<Buffer> {
  const declared = request.headers.get('content-length');
  if (declared !== null && Number(declared) > limit) {
    throw tooLarge(limit);
  }
  if (request.body === null) return Buffer.alloc(0);
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      total += value.byteLength;
      if (total > limit) {
        await reader.cancel().catch(() => undefined);
        throw tooLarge(limit);
      }
      chunks.push(value);
    }
  } catch (error) {
    if (error instanceof TollgateError) throw error;
    throw new TollgateError('invalid_request', 'The request body could not be read.', { cause: error });
  }
  return chunks.length === 1 ? Buffer.from(chunks[0]!.buffer, chunks[0]!.byteOffset, chunks[0]!.byteLength) : Buffer.concat(chunks, total);
}

/** The 413 for a body over `limit` bytes (also used when reading from Node's request). */
export function tooLarge(limit: number): TollgateError {
  return new TollgateError('body_too_large', `The request body is larger than the limit of ${limit} bytes.`);
}

/** Parses a JSON object body; anything else is a 400 with a precise message. */
export function parseJsonObject(bytes: Buffer): Record<string, unknown> {
  if (bytes.byteLength === 0) {
    throw new TollgateError('invalid_json', 'The request body is empty; expected a JSON object.');
  }
  let text: string;
  try {
    text = utf8.decode(bytes);
  } catch {
    throw new TollgateError('invalid_json', 'The request body is not valid UTF-8.');
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    // V8's message quotes the input; only the position goes back (and into logs).
    // A RangeError means nesting too deep for the parser: still the client's input.
    const position = error instanceof Error ? /position (\d+)/.exec(error.message)?.[1] : undefined;
    const where = position === undefined ? '' : ` (at byte ${position})`;
    throw new TollgateError('invalid_json', `The request body is not valid JSON${where}.`);
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new TollgateError('invalid_json', 'The request body must be a JSON object.');
  }
  return value as Record<string, unknown>;
}
