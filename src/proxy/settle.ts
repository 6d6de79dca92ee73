/**
 * What a finished request actually cost, however it ended. The rules:
 *
 * 1. The upstream reported usage (JSON `usage`, final SSE usage chunk, the
 *    Responses API's completion event): that is the bill, whatever happened
 *    after.
 * 2. The upstream answered with an error status: nothing was generated, the
 *    whole reservation is refunded.
 * 3. The upstream accepted the request (answered 200, or was still working on
 *    it) but the answer ended before usage arrived — client abort, broken or
 *    silent stream, timeout while it worked: the prompt (our estimate of it)
 *    plus the completion text actually streamed, counted with the model's
 *    tokenizer.
 * 4. The request never reached the upstream (connection refused or timed
 *    out): nothing.
 */
import type { Estimate } from '../estimate/index.js';
import { costMicroUsd } from '../estimate/prices.js';
import type { Usage } from './usage.js';

export type UsageSource = 'reported' | 'counted' | 'none';

export interface Settlement {
  readonly usage: Usage;
  readonly costMicros: number;
  readonly source: UsageSource;
}

export interface SettleInput {
  readonly estimate: Estimate;
  /** Usage the upstream reported, if it did. */
  readonly reported: Usage | undefined;
  /** Did the upstream take the request (a 2xx answer, or no answer yet when it ended)? */
  readonly accepted: boolean;
  /** Did the upstream answer with an error status? */
  readonly upstreamError: boolean;
  /** Completion text that was streamed before the end (rule 3). */
  readonly streamedText: string;
  /** Tokens of completion text, for the request's model. */
  readonly countTokens: (text: string) => number;
}

const NOTHING: Usage = { promptTokens: 0, cachedTokens: 0, completionTokens: 0, reasoningTokens: 0 };

export function settle(input: SettleInput): Settlement {
  const { estimate } = input;
  if (input.reported !== undefined) {
    return { usage: input.reported, costMicros: costMicroUsd(input.reported, estimate.price), source: 'reported' };
  }
  if (input.upstreamError || !input.accepted) {
    return { usage: NOTHING, costMicros: 0, source: 'none' };
  }
  const completionTokens = input.streamedText === '' ? 0 : input.countTokens(input.streamedText);
  const usage: Usage = { promptTokens: estimate.promptTokens, cachedTokens: 0, completionTokens, reasoningTokens: 0 };
  return { usage, costMicros: costMicroUsd(usage, estimate.price), source: 'counted' };
}
