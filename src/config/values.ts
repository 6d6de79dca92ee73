/**
 * How the environment's text becomes numbers: sizes ("20mb"), durations ("30s"), ports, positive
 * whole numbers and worker counts. Each is a zod schema (or, for workers, a function `serve
 * --workers` shares) whose messages name the expected form.
 */
import { availableParallelism } from 'node:os';
import { z } from 'zod';

const BYTE_UNITS: Record<string, number> = { b: 1, kb: 1024, k: 1024, mb: 1024 ** 2, m: 1024 ** 2, gb: 1024 ** 3, g: 1024 ** 3 };
const DURATION_UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, min: 60_000, h: 3_600_000 };

/** "20mb", "512kb", "1048576" → bytes. */
export const byteSize = z
  .string()
  .trim()
  .transform((text, ctx) => {
    const match = /^(\d+(?:\.\d+)?)\s*([a-z]*)$/i.exec(text);
    const factor = match ? BYTE_UNITS[(match[2] || 'b').toLowerCase()] : undefined;
    if (!match || factor === undefined) {
      ctx.addIssue({ code: 'custom', message: `"${text}" is not a size (e.g. 20mb, 512kb, 1048576)` });
      return z.NEVER;
    }
    const bytes = Math.floor(Number(match[1]) * factor);
    if (bytes < 1) {
      ctx.addIssue({ code: 'custom', message: 'must be at least one byte' });
      return z.NEVER;
    }
    return bytes;
  });

/** Most workers accepted: far above any core count, low enough that a typo cannot fork a thousand processes. */
const MAX_WORKERS = 128;

/** "4" → 4, "auto" → one per core (`os.availableParallelism`). Also used by `serve --workers`. */
export function parseWorkers(text: string, ctx?: z.RefinementCtx): number {
  const value = text.trim().toLowerCase() === 'auto' ? availableParallelism() : Number(text);
  if (!Number.isInteger(value) || value < 1 || value > MAX_WORKERS) {
    const message = `"${text}" is not a worker count (1 to ${MAX_WORKERS}, or auto)`;
    if (ctx === undefined) throw new Error(message);
    ctx.addIssue({ code: 'custom', message });
    return z.NEVER;
  }
  return value;
}

/** "30s", "250ms", "10m", "5000" (milliseconds) → milliseconds. */
export const duration = z
  .string()
  .trim()
  .transform((text, ctx) => {
    const match = /^(\d+(?:\.\d+)?)\s*([a-z]*)$/i.exec(text);
    const factor = match ? DURATION_UNITS[(match[2] || 'ms').toLowerCase()] : undefined;
    if (!match || factor === undefined) {
      ctx.addIssue({ code: 'custom', message: `"${text}" is not a duration (e.g. 30s, 250ms, 10m)` });
      return z.NEVER;
    }
    return Math.round(Number(match[1]) * factor);
  });

export const port = z
  .string()
  .trim()
  .regex(/^\d+$/, 'must be a whole number')
  .transform(Number)
  .refine((n) => n >= 0 && n <= 65_535, 'must be between 0 and 65535');

export const positiveInt = z
  .string()
  .trim()
  .regex(/^\d+$/, 'must be a whole number')
  .transform(Number)
  .refine((n) => n > 0, 'must be greater than zero');
