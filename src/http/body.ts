/**
 * Reading a client's JSON body: the size limit is enforced while the bytes
 * arrive (a 2 GB upload is cut off at the limit, not after), the bytes land
 * in one buffer of their own (so a large body can be handed to a worker
 * thread without a copy), the bytes must be valid UTF-8, and the JSON must be
 * an object.
 */
import { TollgateError } from '../errors.js';

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });

/**
 * What reading a body may take, granted as it grows (src/http/body-intake.ts):
 * `received` bytes so far, of `declared` (Content-Length) when known. `grow`
 * returns undefined when granted at once, or a promise to wait for (reading
 * stops meanwhile) that rejects with the refusal.
 */
export interface BodyAllowance {
  grow(received: number, declared?: number): Promise<void> | undefined;
}

/** Collects a body's chunks into one ArrayBuffer of its own, sized by the declared length or grown by doubling. */
export class BodyBuffer {
  private buffer: Buffer;
  private length = 0;

  constructor(expected: number | undefined, limit: number) {
    const size = expected === undefined || !Number.isSafeInteger(expected) || expected < 0 ? 16 * 1024 : Math.min(expected, limit);
    this.buffer = ownBuffer(size);
  }

  get size(): number {
    return this.length;
  }

  push(chunk: Uint8Array): void {
    const needed = this.length + chunk.byteLength;
    if (needed > this.buffer.length) {
      const grown = ownBuffer(Math.max(needed, this.buffer.length * 2));
      this.buffer.copy(grown, 0, 0, this.length);
      this.buffer = grown;
    }
    this.buffer.set(chunk, this.length);
    this.length = needed;
  }

  /** The body: a view of its own ArrayBuffer (transferable), starting at offset 0. */
  finish(): Buffer {
    return this.buffer.subarray(0, this.length);
  }
}

/** A Buffer over a fresh ArrayBuffer (never Node's shared pool, which cannot be transferred). */
function ownBuffer(size: number): Buffer {
  return Buffer.from(new ArrayBuffer(size));
}

/** Reads the whole body, refusing more than `limit` bytes. */
export async function readBodyBytes(request: Request, limit: number, allowance?: BodyAllowance): Promise<Buffer> {
  const declared = declaredLength(request.headers.get('content-length') ?? undefined);
  if (declared !== undefined && declared > limit) {
    throw tooLarge(limit);
  }
  await allowance?.grow(0, declared);
  const body = new BodyBuffer(declared, limit);
  if (request.body === null) return body.finish();
  const reader = request.body.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      if (body.size + value.byteLength > limit) {
        await reader.cancel().catch(() => undefined);
        throw tooLarge(limit);
      }
      const waiting = allowance?.grow(body.size + value.byteLength);
      if (waiting !== undefined) await waiting;
      body.push(value);
    }
  } catch (error) {
    if (error instanceof TollgateError) throw error;
    throw new TollgateError('invalid_request', 'The request body could not be read.', { cause: error });
  }
  return body.finish();
}

/** A Content-Length header's value, or undefined when absent or not a number. */
export function declaredLength(header: string | string[] | undefined): number | undefined {
  if (header === undefined || Array.isArray(header)) return undefined;
  const value = Number(header);
  return Number.isSafeInteger(value) && value >= 0 ? value : undefined;
}

/** The 413 for a body over `limit` bytes (also used when reading from Node's request). */
export function tooLarge(limit: number): TollgateError {
  return new TollgateError('body_too_large', `The request body is larger than the limit of ${limit} bytes.`);
}

/** Parses a JSON object body; anything else is a 400 with a precise message. */
export function parseJsonObject(bytes: Uint8Array): Record<string, unknown> {
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
