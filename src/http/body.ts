/**
 * Reading a client's JSON body: the size limit is enforced while the bytes
 * arrive (a 2 GB upload is cut off at the limit, not after), a large body's
 * bytes land in one buffer of their own (so it can be handed to a worker
 * thread without a copy), the bytes must be valid UTF-8, and the JSON must be
 * an object.
 */
import { TollgateError } from '../domain/errors.js';

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

/**
 * Collects a body's chunks. A body that arrives in one chunk is that chunk,
 * uncopied (a view into the socket's read, as small bodies are); a body of
 * several chunks lands in one buffer, sized by the declared length or grown
 * by doubling — of its own when large (see {@link ownsItsBuffer}), from
 * Node's pool when small.
 */
export class BodyBuffer {
  private first: Uint8Array | undefined;
  private buffer: Buffer | undefined;
  private length = 0;
  private readonly expected: number;

  constructor(expected: number | undefined, limit: number) {
    this.expected = expected === undefined || !Number.isSafeInteger(expected) || expected < 0 ? 16 * 1024 : Math.min(expected, limit);
  }

  get size(): number {
    return this.length;
  }

  push(chunk: Uint8Array): void {
    const needed = this.length + chunk.byteLength;
    if (this.buffer === undefined) {
      if (this.first === undefined) {
        this.first = chunk;
        this.length = needed;
        return;
      }
      this.buffer = bodyBuffer(Math.max(needed, this.expected));
      this.buffer.set(this.first, 0);
      this.first = undefined;
    } else if (needed > this.buffer.length) {
      const grown = bodyBuffer(Math.max(needed, this.buffer.length * 2));
      this.buffer.copy(grown, 0, 0, this.length);
      this.buffer = grown;
    }
    this.buffer.set(chunk, this.length);
    this.length = needed;
  }

  /** The body's bytes. */
  finish(): Buffer {
    if (this.buffer !== undefined) return this.buffer.subarray(0, this.length);
    if (this.first === undefined) return Buffer.alloc(0);
    return Buffer.isBuffer(this.first) ? this.first : Buffer.from(this.first.buffer, this.first.byteOffset, this.first.byteLength);
  }
}

/** ArrayBuffers that {@link BodyBuffer} made for one body alone: nothing else has a view into them. */
const ownBuffers = new WeakSet<ArrayBufferLike>();

/**
 * Whether `bytes` may be handed to a worker by transferring its ArrayBuffer:
 * true only for a body {@link BodyBuffer} gathered into a buffer of its own. Any
 * other view (a socket's read, Node's pool of small buffers) shares its
 * ArrayBuffer with bytes that are not this body's, and must be copied first.
 */
export function ownsItsBuffer(bytes: Buffer): boolean {
  return bytes.byteOffset === 0 && ownBuffers.has(bytes.buffer);
}

/**
 * A buffer for a body of several chunks: one of its own (transferable,
 * uninitialised: only the bytes written are ever read) when it is large
 * enough that a worker may get it, else a slice of Node's pool (a small body
 * is parsed here, or copied when a worker gets it: see openBody).
 */
function bodyBuffer(size: number): Buffer {
  if (size < Buffer.poolSize >>> 1) return Buffer.allocUnsafe(size);
  const buffer = Buffer.allocUnsafeSlow(size);
  ownBuffers.add(buffer.buffer);
  return buffer;
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
