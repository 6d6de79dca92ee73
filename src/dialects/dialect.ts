/**
 * What the pipeline needs to know about one API format — a dialect: where clients reach it,
 * which upstreams speak it, how its prompt is counted, which field limits its output, how its
 * usage is read from an answer and from its stream, how a stream cut at its allowance ends,
 * how errors are told in it. One record per dialect (chat.ts, completions.ts, embeddings.ts,
 * responses.ts, anthropic-messages.ts); the pipeline asks the record and never branches on the
 * endpoint's name, so a new format is one new record.
 *
 * Records are module-level constants of module-level functions: asking one allocates nothing.
 */
import type { Context } from 'hono';
import type { AppEnv } from '../app-env.js';
import type { ErrorCode } from '../domain/errors.js';
import type { Endpoint } from '../endpoints.js';
import type { BodyEdit, RequestFields } from '../estimate/client-body.js';
import type { PromptRules } from '../estimate/prompt-rules.js';
import type { Logger } from '../logger.js';
import type { Usage } from './usage.js';

/** An error the upstream reported inside a stream. */
export interface StreamError {
  readonly message: string;
  readonly code: string | null;
}

/** What a stream reader tells the tap it reads for (src/dialects/sse-tap.ts). */
export interface StreamTap {
  /** A stream allowance is watched: readers keep what they need to end a cut stream in kind. */
  readonly watching: boolean;
  /** The usage-only chunk Tollgate asked for is to be withheld from the client. */
  readonly stripping: boolean;
  /** A piece of completion text (content, reasoning, tool arguments, refusals). */
  collect(text: string): void;
  /** The upstream's reported usage (the last report wins). */
  noteUsage(usage: Usage): void;
  /** The stream reached its terminal event. */
  noteFinished(): void;
  /** The upstream reported an error inside the stream. */
  noteError(error: StreamError): void;
}

/** Reads one dialect's SSE events for a tap; one per stream (it holds the stream's own state). */
export interface StreamReader {
  /** Reads one event's parsed `data` (a JSON object), named `eventName` when the event had one; true to withhold the event. */
  read(tap: StreamTap, eventName: string, event: Record<string, unknown>): boolean;
  /** The events that end a stream cut at its allowance the way the API ends one that hit its output limit. */
  cutEnding(promptTokens: number, completionTokens: number, clientWantsUsage: boolean): Uint8Array;
  /** The exact prompt usage reported before the final usage (Anthropic's `message_start`), if any. */
  readonly promptUsage?: Usage | undefined;
  /** The stored response's id, once an event carried it (Responses API). */
  readonly responseId?: string | undefined;
  /** Ids of the output items streamed so far (Responses API). */
  outputItemIds?(): readonly string[];
}

/** How a dialect whose answers are stored upstream names what a JSON answer stored. */
export interface StoredAnswers {
  /** The stored response's id. */
  idOfJson(answer: Buffer): string | undefined;
  /** The ids of its output items. */
  itemIdsOfJson(answer: Buffer): string[];
}

/** One API format, as the pipeline sees it. */
export interface Dialect {
  /** The endpoint's name in the ledger, the metrics and the estimate. */
  readonly endpoint: Endpoint;
  /** Where clients post its requests. */
  readonly path: string;
  /** The kind of upstream that speaks it (routing chooses among those: src/upstreams/router.ts). */
  readonly upstreamKind: 'openai' | 'anthropic';
  /** Query parameters of the client's URL passed on upstream (Anthropic's `beta`). */
  readonly upstreamQuery: readonly string[];
  /** How its bodies are counted and reserved (src/estimate/prompt-rules.ts). */
  readonly prompt: PromptRules;
  /** Tokens of generated text as its upstream bills them (for a stream that ends without usage). */
  readonly countCompletion: (text: string, model: string) => number;
  /**
   * The changes that limit a request's completion to `tokens` per choice (a budget's cap,
   * README "Budgets are hard caps"): its output-limit field set to the cap, none when it has none.
   */
  readonly outputLimitEdits: (fields: RequestFields, tokens: number) => readonly BodyEdit[];
  /** Its streams report usage only when asked (`stream_options.include_usage`), which Tollgate then asks for. */
  readonly usageOnRequest: boolean;
  /** The upstream's usage in a whole JSON answer. */
  readonly usageOfJson: (answer: Buffer) => Usage | undefined;
  /** The generated text of a JSON answer without usage. */
  readonly completionTextOfJson: (answer: Buffer) => string;
  /** The field of an upstream error object that names the error (OpenAI's `code`, Anthropic's `type`). */
  readonly errorCodeField: 'code' | 'type';
  /** A reader for one of its streams. */
  readonly newStreamReader: () => StreamReader;
  /** An error event in its streams, so the client's SDK raises an API error. */
  readonly streamErrorEvent: (code: ErrorCode, message: string) => Uint8Array;
  /** Its answers are stored upstream, may run in the background and be continued (src/responses), and name what is stored so. */
  readonly storedResponses?: StoredAnswers;
  /** Where the upstream counts a body's tokens for free, passed through unbilled (src/pipeline/count-tokens.ts). */
  readonly countTokensPath?: string;
  /** Tollgate's own errors in its shape, and its paths' 405s, when not OpenAI's (src/app.ts renders those). */
  readonly renderError?: (error: Error, c: Context<AppEnv>, logger: Logger) => Response;
}
