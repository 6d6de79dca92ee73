/**
 * Worker thread entry: estimates the large bodies the main thread hands over, with its own
 * encoders and count cache, and sends back the estimate plus the counts it learned.
 */
import { parentPort } from 'node:worker_threads';
import { TokenCountCache } from './count-cache.js';
import { reattachStrings } from './detach-strings.js';
import { estimateBody } from './estimate-body.js';
import { EstimateInputError } from './errors.js';
import { createTextCounter } from './text-counter.js';
import { loadEncodingSync } from './tokenizer.js';
import type { EstimateJob, EstimateJobResult, WorkerInbound } from './worker-protocol.js';

const cache = new TokenCountCache();
/** Slices received per job and string, until the job message arrives. */
const slices = new Map<number, string[][]>();

function runJob(job: EstimateJob): EstimateJobResult {
  const learned: Array<[string, number]> = [];
  try {
    const parts = slices.get(job.id) ?? [];
    slices.delete(job.id);
    const body = reattachStrings(
      job.body,
      job.detached.map((entry, i) => ({ path: entry.path, value: (parts[i] ?? []).join('') })),
    );
    const estimate = estimateBody(job.endpoint, body, job.options, (encoding) =>
      createTextCounter(loadEncodingSync(encoding), { cache, learned, learnedMaxChars: job.learnedMaxChars }),
    );
    return { id: job.id, ok: true, estimate, learned };
  } catch (error) {
    if (error instanceof EstimateInputError) {
      return { id: job.id, ok: false, error: { kind: 'input', message: error.message, param: error.param, code: error.code } };
    }
    const message = error instanceof Error ? error.message : String(error);
    return { id: job.id, ok: false, error: { kind: 'internal', message, param: null, code: null } };
  }
}

parentPort?.on('message', (message: WorkerInbound) => {
  if (message.kind === 'cancel') {
    slices.delete(message.jobId);
    return;
  }
  if (message.kind === 'slice') {
    let job = slices.get(message.jobId);
    if (!job) {
      job = [];
      slices.set(message.jobId, job);
    }
    (job[message.stringIndex] ??= []).push(message.text);
    return;
  }
  parentPort?.postMessage(runJob(message));
});
