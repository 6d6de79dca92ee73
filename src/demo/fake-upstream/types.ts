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
}

export interface RecordedRequest {
  readonly id: string;
  readonly method: string;
  readonly path: string;
  readonly headers: IncomingMessage['headers'];
  readonly body: unknown;
  readonly startedAt: number;
  status: number;
  /** What this request cost on the fake's books: prompt + what was actually generated and sent. */
  billed: FakeBilling;
  /** Content chunks written to the socket. */
  chunksSent: number;
  /** The client went away before the answer was complete. */
  closedEarly: boolean;
  finished: boolean;
}

export interface FakeUpstream {
  readonly url: string;
  readonly port: number;
  readonly requests: RecordedRequest[];
  /** Default scenario for requests without an `x-fake-scenario` header. */
  setScenario(scenario: string): void;
  /** Resolves when every request seen so far has finished or closed. */
  settled(): Promise<void>;
  close(): Promise<void>;
}

export interface FakeUpstreamOptions {
  readonly port?: number;
  readonly host?: string;
  /** When set, requests must carry `Authorization: Bearer <apiKey>`. */
  readonly apiKey?: string;
}
