/** What the fake upstream records and offers to the tests that start it. */
import type { IncomingMessage } from 'node:http';
export interface FakeBilling {
  readonly promptTokens: number;
  readonly cachedTokens: number;
  readonly completionTokens: number;
  readonly reasoningTokens: number;
  /** Parts of promptTokens / completionTokens that were audio. */
  readonly audioPromptTokens?: number;
  readonly audioCompletionTokens?: number;
  /** Parts of promptTokens written to the prompt cache (Anthropic), by TTL. */
  readonly cacheWrite5mTokens?: number;
  readonly cacheWrite1hTokens?: number;
  /** The service tier the fake says it used. */
  readonly serviceTier?: string;
  /** Built-in tool calls in a Responses answer (containers: distinct ones). */
  readonly toolCalls?: { webSearch?: number; fileSearch?: number; codeInterpreter?: number; imageGeneration?: number };
  /** What the fake says it billed in USD (`usage.cost`, the openrouter kind; never on a batch line). */
  readonly costUsd?: number;
  /**
   * A line of a batch (OpenAI Batch API or Anthropic Message Batches): the batch's id
   * (`batch_…` / `msgbatch_…`). Its tokens are priced at half the synchronous rate, as both
   * providers bill batches; the billing reports do (billing-reports.ts).
   */
  readonly batchId?: string;
  /** The line's `custom_id`, with {@link batchId}. */
  readonly customId?: string;
}

export interface RecordedRequest {
  readonly id: string;
  readonly method: string;
  /** The OpenAI path the request stood for (an Azure URL's too), without the query. */
  readonly path: string;
  /** The URL as sent, query included. */
  readonly url?: string;
  readonly headers: IncomingMessage['headers'];
  readonly body: unknown;
  /** The body's bytes as received (OpenAI paths), to check what a proxy changed in them. */
  readonly rawBody?: string;
  readonly startedAt: number;
  status: number;
  /**
   * What this request cost on the fake's books: the prompt, and what was generated — a JSON
   * answer in full even when its client left; a stream's hidden reasoning as it was generated
   * and its visible tokens as they were sent.
   */
  billed: FakeBilling;
  /** Content chunks written to the socket. */
  chunksSent: number;
  /** The client went away before the answer was complete. */
  closedEarly: boolean;
  /** The answer was generated to its end (a JSON answer is, even after its client left). */
  finished: boolean;
}

export interface FakeUpstream {
  readonly url: string;
  readonly port: number;
  readonly requests: RecordedRequest[];
  /** Tollgate's upstream checks (`x-tollgate-probe`, src/upstreams/probe.ts), kept apart from `requests`: they serve no client. */
  readonly probes: RecordedRequest[];
  /** Default scenario for requests without an `x-fake-scenario` header. */
  setScenario(scenario: string): void;
  /** Resolves when every request seen so far has finished or closed. */
  settled(): Promise<void>;
  close(): Promise<void>;
}

export interface FakeUpstreamOptions {
  readonly port?: number;
  readonly host?: string;
  /** When set, requests must carry it: `Authorization: Bearer <apiKey>` (Azure: `api-key: <apiKey>`). */
  readonly apiKey?: string;
  /** Which provider it behaves like (provider-kinds.ts). Default openai. */
  readonly kind?: 'openai' | 'azure' | 'openrouter';
  /** Azure: the `api-version` deployment URLs must carry. Default 2024-10-21. */
  readonly apiVersion?: string;
  /** OpenRouter: USD per 1M prompt / completion tokens it reports as `usage.cost`. Default 1 / 2. */
  readonly costPer1M?: { readonly input: number; readonly output: number };
  /** Serve the organization Usage and Costs reports, OpenAI's and Anthropic's Admin API ones (with deliberate differences, if any). */
  readonly billing?: BillingReportOptions;
  /** Wall clock of `startedAt` (the day a request is billed on); default Date.now. */
  readonly now?: () => number;
  /** What the Files and Batch APIs keep in memory (openai-batches.ts, anthropic-batches.ts). */
  readonly batchLimits?: BatchLimits;
  /**
   * Records kept in `requests` and in `probes`, the newest (the billing reports are built from
   * them). Default: all, as tests read them. A long-running fake (`tollgate demo`, the benches'
   * upstream) bounds them: every record holds its request's body, and a heap of them makes the
   * fake's collections long enough to show in every latency measured through it.
   */
  readonly maxRecords?: number;
}

/** Bounds on the fake's Files and Batch stores: the oldest entry goes when one more arrives. */
export interface BatchLimits {
  /** Files kept (uploads and batch output/error files). Default 1000. */
  readonly maxFiles?: number;
  /** Batches kept, per provider. Default 1000. */
  readonly maxBatches?: number;
  /**
   * Largest OpenAI upload and largest Message Batches create body, in bytes. Default: each
   * provider's own limit (OpenAI's 200 MB file, Anthropic's 256 MB batch).
   */
  readonly maxFileBytes?: number;
}

/** Deliberate differences between the reports and what the fake billed. */
export interface BillingDeviations {
  /** UTC days (YYYY-MM-DD) missing from both reports. */
  readonly dropDays?: readonly string[];
  /** Cost multipliers by model name as requested (`{"gpt-4o": 1.5}`): that model priced differently. */
  readonly priceMultipliers?: Readonly<Record<string, number>>;
  /** Requests on the provider's books that never went through the proxy. */
  readonly extraRequests?: ReadonlyArray<{ readonly day: string; readonly model: string; readonly inputTokens: number; readonly outputTokens: number }>;
}

export interface BillingReportOptions {
  /** The admin key the reports require (OpenAI's: `Authorization: Bearer …`; Anthropic's: `x-api-key`). */
  readonly adminKey: string;
  /** The project every request is billed to unless it sends `OpenAI-Project` (default `proj_fake`). */
  readonly project?: string;
  /** Most buckets in one page (default 2). */
  readonly pageSize?: number;
  /** Dated names the reports use for requested models, as the real API reports snapshots (each provider has defaults). */
  readonly snapshots?: Readonly<Record<string, string>>;
  readonly deviations?: BillingDeviations;
}
