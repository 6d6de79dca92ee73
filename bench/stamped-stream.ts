/**
 * The client side of bench/slow-upstream.ts's streams, shared by the benches
 * that time them (bench/streams.ts, bench/sse-gap.ts): one chat stream over a
 * fresh connection, read as raw bytes (no HTTP client or stream machinery on
 * the load core, which the upstream shares), reporting each stamped chunk with
 * the moment it was read.
 */
import { connect } from 'node:net';

/** What precedes each chunk's stamp in its content: `@<µs>`. */
const MARKER = '"content":" @';

/** Monotonic microseconds, the clock bench/slow-upstream.ts stamps chunks with. */
export function nowMicros(): number {
  const [s, ns] = process.hrtime();
  return s * 1e6 + Math.floor(ns / 1e3);
}

/** A chat-completions POST, its whole HTTP/1.1 request, closing the connection after the answer. */
export function streamRequest(url: URL, authorization: string, body: string): Buffer {
  return Buffer.from(
    `POST ${url.pathname.replace(/\/+$/, '')}/chat/completions HTTP/1.1\r\nhost: ${url.host}\r\ncontent-type: application/json\r\n` +
      `authorization: ${authorization}\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
  );
}

export interface StreamEvents {
  /** The response's first byte was read at `at`; the request had been written at `sentAt` (µs, after connect). */
  firstByte?(at: number, sentAt: number): void;
  /** A stamped chunk, read at `at`, written upstream at `stamp` (µs). */
  chunk?(at: number, stamp: number): void;
}

export interface StreamOutcome {
  /** The response's status code as text, '' if none came. */
  readonly status: string;
  /** Stamped chunks read. */
  readonly chunks: number;
  /** Whether `[DONE]` was read. */
  readonly done: boolean;
  /** The socket error's code, if the connection failed. */
  readonly error?: string;
}

/** One stream over a fresh connection to `url`'s host; resolves when the server closes it. */
export function openStream(url: URL, request: Buffer, events: StreamEvents): Promise<StreamOutcome> {
  return new Promise((resolve) => {
    const socket = connect(Number(url.port), url.hostname);
    socket.setNoDelay(true);
    let carry = '';
    let status = '';
    let chunks = 0;
    let done = false;
    let error: string | undefined;
    let sentAt = 0;
    socket.on('data', (buffer: Buffer) => {
      const at = nowMicros();
      const text = carry + buffer.toString('latin1');
      if (status === '') {
        status = text.slice(9, 12);
        events.firstByte?.(at, sentAt);
      }
      let processed = 0;
      for (let i = text.indexOf(MARKER); i !== -1; i = text.indexOf(MARKER, processed)) {
        const end = text.indexOf('"', i + MARKER.length);
        if (end === -1) break;
        chunks += 1;
        events.chunk?.(at, Number(text.slice(i + MARKER.length, end)));
        processed = end + 1;
      }
      if (!done && text.includes('[DONE]')) done = true;
      carry = text.slice(Math.max(processed, text.length - 40));
    });
    socket.on('error', (e: NodeJS.ErrnoException) => {
      error = e.code ?? e.message;
    });
    socket.on('close', () => resolve({ status, chunks, done, ...(error === undefined ? {} : { error }) }));
    socket.once('connect', () => {
      sentAt = nowMicros();
      socket.write(request);
    });
  });
}
