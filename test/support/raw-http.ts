/** Raw HTTP over a socket, for what fetch will not send: header floods, half-sent bodies, chunked uploads. */
import { connect, type Socket } from 'node:net';

export interface RawResponse {
  readonly status: number | undefined;
  readonly text: string;
  /** The server closed the connection (rather than us giving up). */
  readonly closedByServer: boolean;
}

/** Writes `parts` (strings or buffers, optionally with pauses between) and reads until the server closes or `timeoutMs`. */
export function rawRequest(port: number, parts: Array<string | Buffer | { pauseMs: number }>, timeoutMs = 5000): Promise<RawResponse> {
  return new Promise((resolve) => {
    const socket: Socket = connect(port, '127.0.0.1');
    let text = '';
    let done = false;
    const finish = (closedByServer: boolean): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      const status = /^HTTP\/1\.1 (\d{3})/.exec(text)?.[1];
      resolve({ status: status === undefined ? undefined : Number(status), text, closedByServer });
    };
    const timer = setTimeout(() => finish(false), timeoutMs);
    socket.on('data', (chunk: Buffer) => {
      text += chunk.toString('latin1');
    });
    socket.on('close', () => finish(true));
    socket.on('error', () => finish(true));
    socket.on('connect', async () => {
      for (const part of parts) {
        if (socket.destroyed) return;
        if (typeof part === 'object' && !Buffer.isBuffer(part)) await new Promise((r) => setTimeout(r, part.pauseMs));
        else if (!socket.write(part)) await new Promise((r) => socket.once('drain', r));
      }
    });
  });
}
