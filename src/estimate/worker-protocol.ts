/** Messages between the main thread and the estimate workers (structured-clone friendly). */
import type { BodyPath } from './detach-strings.js';
import type { Endpoint } from '../endpoints.js';
import type { Estimate, EstimateOptions } from './estimate-body.js';
import type { EstimateInputErrorCode } from './errors.js';
import type { ClientBody } from './client-body.js';

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

/**
 * Main → worker: a large body's raw bytes, transferred (not copied): the
 * worker parses and checks them, keeps the parsed body as `id`, and sends the
 * bytes back with what the main thread needs ({@link OpenedBodyResult}).
 */
export interface OpenBodyJob {
  readonly kind: 'open';
  readonly id: number;
  readonly endpoint: Endpoint;
  readonly buffer: ArrayBuffer;
  readonly byteLength: number;
}

/** Main → worker: estimate the body kept as `id` (with `model` in place of its own), then let it go. */
interface EstimateOpenedJob {
  readonly kind: 'estimate';
  readonly id: number;
  readonly endpoint: Endpoint;
  readonly model: string | undefined;
  readonly options: EstimateOptions;
  readonly learnedMaxChars: number;
}

/** Main → worker: let the body kept as `id` go without estimating it. */
interface CloseBodyMessage {
  readonly kind: 'close';
  readonly id: number;
}

/** Everything the main thread sends. */
export type WorkerInbound = StringSliceMessage | EstimateJob | CancelMessage | OpenBodyJob | EstimateOpenedJob | CloseBodyMessage;

/** A refusal of the body the worker read, as the TollgateError it becomes on the main thread. */
interface BodyRefusal {
  readonly code: string;
  readonly message: string;
  readonly param: string | null;
}

/** Worker → main, for an {@link OpenBodyJob}: the bytes come back either way. */
export type OpenedBodyResult = { readonly id: number; readonly buffer: ArrayBuffer } & (
  ({ readonly ok: true } & ClientBody) | { readonly ok: false; readonly refusal: BodyRefusal | undefined; readonly message: string }
);

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

/** Everything a worker sends. */
export type WorkerOutbound = EstimateJobResult | OpenedBodyResult;
