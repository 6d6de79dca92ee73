/**
 * Worker thread entry: reads and estimates the large bodies the main thread hands over, with its
 * own encoders and count cache. A large body arrives as raw bytes (transferred, not copied): the
 * worker parses and checks it (src/estimate/client-body.ts, as the main thread does for small
 * ones), keeps the parsed body, and sends back the bytes with the facts, the read fields and the
 * layout; the estimate follows once the main thread has decided the model and the prices. Bodies
 * parsed by the main thread (small ones with much text to count) arrive as jobs.
 */
import { readlinkSync } from 'node:fs';
import { setPriority } from 'node:os';
import { parentPort } from 'node:worker_threads';
import { TollgateError } from '../domain/errors.js';
import { readClientBody } from './client-body.js';
import { TokenCountCache } from './count-cache.js';
import { reattachStrings } from './detach-strings.js';
import { estimateBody, type EstimateOptions } from './estimate-body.js';
import { EstimateInputError } from './errors.js';
import type { Endpoint } from '../endpoints.js';
import { createTextCounter } from './text-counter.js';
import { loadEncodingSync } from './tokenizer.js';
import type { EstimateJob, EstimateJobResult, OpenBodyJob, OpenedBodyResult, WorkerInbound } from './worker-protocol.js';

/**
 * The worker's niceness: on a busy machine the event loop, which answers every tenant, wins the
 * CPU over a large body's parse (bench/body-flood.ts). Linux only (a thread's id from
 * /proc/thread-self; setpriority of a thread id changes that thread alone); best effort elsewhere.
 */
const WORKER_NICENESS = 10;
try {
  const tid = Number(readlinkSync('/proc/thread-self').split('/').pop());
  if (Number.isSafeInteger(tid) && tid > 0) setPriority(tid, WORKER_NICENESS);
} catch {
  // Not Linux, or not allowed: the worker runs at the process's priority.
}

const cache = new TokenCountCache();
/** Slices received per job and string, until the job message arrives. */
const slices = new Map<number, string[][]>();
/** Bodies read and kept until the main thread asks for their estimate (or lets them go). */
const opened = new Map<number, Record<string, unknown>>();

function estimate(id: number, endpoint: Endpoint, body: unknown, options: EstimateOptions, learnedMaxChars: number): EstimateJobResult {
  const learned: Array<[string, number]> = [];
  try {
    const estimated = estimateBody(endpoint, body, options, (encoding) => createTextCounter(loadEncodingSync(encoding), { cache, learned, learnedMaxChars }));
    return { id, ok: true, estimate: estimated, learned };
  } catch (error) {
    if (error instanceof EstimateInputError) {
      return { id, ok: false, error: { kind: 'input', message: error.message, param: error.param, code: error.code } };
    }
    const message = error instanceof Error ? error.message : String(error);
    return { id, ok: false, error: { kind: 'internal', message, param: null, code: null } };
  }
}

function runJob(job: EstimateJob): EstimateJobResult {
  const parts = slices.get(job.id) ?? [];
  slices.delete(job.id);
  const body = reattachStrings(
    job.body,
    job.detached.map((entry, i) => ({ path: entry.path, value: (parts[i] ?? []).join('') })),
  );
  return estimate(job.id, job.endpoint, body, job.options, job.learnedMaxChars);
}

function openBody(job: OpenBodyJob): OpenedBodyResult {
  const { id, buffer } = job;
  try {
    const read = readClientBody(job.endpoint, Buffer.from(buffer, 0, job.byteLength));
    opened.set(id, read.body);
    return { id, buffer, ok: true, facts: read.facts, fields: read.fields, layout: read.layout };
  } catch (error) {
    const refusal = error instanceof TollgateError ? { code: error.code, message: error.message, param: error.param } : undefined;
    return { id, buffer, ok: false, refusal, message: error instanceof Error ? error.message : String(error) };
  }
}

parentPort?.on('message', (message: WorkerInbound) => {
  switch (message.kind) {
    case 'cancel':
      slices.delete(message.jobId);
      return;
    case 'slice': {
      let job = slices.get(message.jobId);
      if (!job) {
        job = [];
        slices.set(message.jobId, job);
      }
      (job[message.stringIndex] ??= []).push(message.text);
      return;
    }
    case 'job':
      parentPort?.postMessage(runJob(message));
      return;
    case 'open': {
      const result = openBody(message);
      parentPort?.postMessage(result, [result.buffer]);
      return;
    }
    case 'estimate': {
      const body = opened.get(message.id);
      opened.delete(message.id);
      if (body === undefined) {
        parentPort?.postMessage({ id: message.id, ok: false, error: { kind: 'internal', message: 'no such body', param: null, code: null } });
        return;
      }
      // A downgrade sends the request to another model: it is estimated as that model.
      if (message.model !== undefined) Object.defineProperty(body, 'model', { value: message.model, writable: true, enumerable: true, configurable: true });
      parentPort?.postMessage(estimate(message.id, message.endpoint, body, message.options, message.learnedMaxChars));
      return;
    }
    case 'close':
      opened.delete(message.id);
      return;
  }
});
