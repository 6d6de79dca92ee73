/** Captures pino's JSON lines in memory so tests can assert what was logged. */
import { Writable } from 'node:stream';
import { createLogger, type Logger } from '../../src/logger.js';

export interface CapturedLogs {
  readonly logger: Logger;
  /** Every line, parsed. */
  readonly lines: Array<Record<string, unknown>>;
  /** Every line as written (to search for leaked secrets). */
  readonly raw: string[];
}

export function captureLogs(level = 'info'): CapturedLogs {
  const lines: Array<Record<string, unknown>> = [];
  const raw: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      for (const line of chunk.toString('utf8').split('\n')) {
        if (line.trim() === '') continue;
        raw.push(line);
        lines.push(JSON.parse(line) as Record<string, unknown>);
      }
      callback();
    },
  });
  return { logger: createLogger(level, sink), lines, raw };
}
