/** Messages between the main thread and the estimate workers (structured-clone friendly). */
import type { BodyPath } from './detach-strings.js';
import type { Endpoint } from '../endpoints.js';
import type { Estimate, EstimateOptions } from './estimate-body.js';
import type { EstimateInputErrorCode } from './errors.js';

/** Main → worker: one slice of a large string of job `jobId` (sent before the job itself). */
interface StringSliceMessage {
  readonly kind: 'slice';
  readonly jobId: number;
  readonly stringIndex: number;
  readonly text: string;
}

/** Main → worker: the job. Its body is a skeleton; `detached[i]` goes back at its path. */
export interface EstimateJob {
  readonly kind: 'job';
  readonly id: number;
  readonly endpoint: Endpoint;
  readonly body: unknown;
  readonly detached: ReadonlyArray<{ readonly path: BodyPath }>;
  readonly options: EstimateOptions;
  /** Longest text whose count is worth sending back (the main thread never hashes longer ones). */
  readonly learnedMaxChars: number;
}

/** Main → worker: a job whose slices were sent will not follow (its body could not be posted). */
interface CancelMessage {
  readonly kind: 'cancel';
  readonly jobId: number;
}

/** Everything the main thread sends. */
export type WorkerInbound = StringSliceMessage | EstimateJob | CancelMessage;

/** Worker → main. `learned` carries whole-text counts for the main thread's cache. */
export type EstimateJobResult =
  | { readonly id: number; readonly ok: true; readonly estimate: Estimate; readonly learned: Array<[string, number]> }
  | {
      readonly id: number;
      readonly ok: false;
      readonly error: {
        readonly kind: 'input' | 'internal';
        readonly message: string;
        readonly param: string | null;
        readonly code: EstimateInputErrorCode | null;
      };
    };
