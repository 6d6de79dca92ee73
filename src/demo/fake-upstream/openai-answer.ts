/**
 * The fake's answer to an OpenAI body, worked out once and used twice: by a
 * synchronous request (index.ts) and by a batch line (openai-batches.ts), so a
 * batch line gets exactly the answer, usage and bill the endpoint would give
 * its body — same model, same word count, reasoning and cached tokens.
 */
import { randomBytes } from 'node:crypto';
import { responseObject, toolCallItems, usageBlock } from './openai-objects.js';
import { answerWords, billedExtras, extrasFor, num, promptTokensFor, tokens, type Extras, type Scenario } from './scenario.js';
import { unseenInputTokens } from './unseen-input.js';
import type { FakeBilling } from './types.js';

export type OpenAIEndpoint = 'chat' | 'completions' | 'embeddings' | 'responses';

/** What the answer will be before it is generated: its prompt, its words, its limits. */
export interface AnswerPlan {
  readonly extras: Extras;
  readonly promptTokens: number;
  readonly cachedTokens: number;
  readonly n: number;
  readonly reasoning: number;
  readonly words: string[];
  readonly answer: string;
  readonly finishReason: 'stop' | 'length';
}

/** Plans the answer to a body; `storedTokens` is the stored history it continues (Responses). */
export function planOpenAIAnswer(endpoint: OpenAIEndpoint, body: Record<string, unknown>, model: string, scenario: Scenario, storedTokens = 0): AnswerPlan {
  const extras = extrasFor(scenario, endpoint, body);
  const promptTokens = promptTokensFor(endpoint, body, model) + extras.audioPromptTokens + storedTokens + unseenInputTokens(scenario, endpoint, body, model);
  const cachedTokens = Math.min(promptTokens, num(scenario, 'cached') ?? 0);
  const n = endpoint === 'responses' ? 1 : Math.max(1, Number(body.n ?? 1) || 1);
  const limitRaw = body.max_completion_tokens ?? body.max_tokens ?? body.max_output_tokens;
  const limit = typeof limitRaw === 'number' && scenario.ignoreLimit === undefined ? limitRaw : undefined;
  // Hidden reasoning comes first and counts against the output limit, as the API bills it:
  // a limit it exhausts leaves no room for the answer (finish_reason "length").
  const wantedReasoning = num(scenario, 'reasoning') ?? 0;
  const reasoning = limit === undefined ? wantedReasoning : Math.min(wantedReasoning, limit);
  const words = answerWords(scenario, limit === undefined ? undefined : limit - reasoning);
  const finishReason = limit !== undefined && (num(scenario, 'words') ?? 12) + wantedReasoning > limit ? 'length' : 'stop';
  return { extras, promptTokens, cachedTokens, n, reasoning, words, answer: words.join(''), finishReason };
}

/** The embeddings list object (float, or base64 when asked). */
export function embeddingsPayload(body: Record<string, unknown>, model: string, promptTokens: number): Record<string, unknown> {
  const input = body.input;
  const items = Array.isArray(input) && input.length > 0 && typeof input[0] !== 'number' ? input : [input];
  const dimensions = typeof body.dimensions === 'number' ? body.dimensions : 8;
  const base64 = body.encoding_format === 'base64';
  const data = items.map((_, index) => {
    const vector = Array.from({ length: dimensions }, (__, d) => Math.fround(Math.sin(index + d + 1)));
    const embedding = base64 ? Buffer.from(new Float32Array(vector).buffer).toString('base64') : vector;
    return { object: 'embedding', index, embedding };
  });
  return { object: 'list', data, model, usage: { prompt_tokens: promptTokens, total_tokens: promptTokens } };
}

/**
 * The finished JSON answer and its bill. `cost` is the provider's own USD price of the usage
 * (the openrouter kind), undefined elsewhere.
 */
export function finishedOpenAIAnswer(
  endpoint: OpenAIEndpoint,
  body: Record<string, unknown>,
  model: string,
  plan: AnswerPlan,
  cost: (promptTokens: number, completionTokens: number) => number | undefined,
): { payload: Record<string, unknown>; billed: FakeBilling } {
  const { extras, promptTokens, cachedTokens, n, reasoning, answer, finishReason } = plan;
  if (endpoint === 'embeddings') {
    return {
      payload: embeddingsPayload(body, model, promptTokens),
      billed: { promptTokens, cachedTokens: 0, completionTokens: 0, reasoningTokens: 0 },
    };
  }
  const completionTokens = tokens(model, answer) * n + reasoning + extras.audioCompletionTokens;
  const costUsd = cost(promptTokens, completionTokens);
  const billed: FakeBilling = {
    promptTokens,
    cachedTokens,
    completionTokens,
    reasoningTokens: reasoning,
    ...billedExtras(extras),
    ...(costUsd === undefined ? {} : { costUsd }),
  };
  const usage = {
    ...usageBlock(endpoint, promptTokens, cachedTokens, completionTokens, reasoning, {
      prompt: extras.audioPromptTokens,
      completion: extras.audioCompletionTokens,
    }),
    ...(costUsd === undefined ? {} : { cost: costUsd }),
  };
  const created = Math.floor(Date.now() / 1000);
  if (endpoint === 'chat') {
    const payload = {
      id: `chatcmpl-${randomBytes(8).toString('hex')}`,
      object: 'chat.completion',
      created,
      model,
      choices: Array.from({ length: n }, (_, index) => ({
        index,
        message: { role: 'assistant', content: answer, refusal: null, annotations: [] },
        logprobs: null,
        finish_reason: finishReason,
      })),
      usage,
      service_tier: extras.serviceTier,
      system_fingerprint: 'fp_fake',
    };
    return { payload, billed };
  }
  if (endpoint === 'completions') {
    const payload = {
      id: `cmpl-${randomBytes(8).toString('hex')}`,
      object: 'text_completion',
      created,
      model,
      choices: Array.from({ length: n }, (_, index) => ({ text: answer, index, logprobs: null, finish_reason: finishReason })),
      usage,
    };
    return { payload, billed };
  }
  const payload = {
    ...responseObject(model, answer, 'completed', usage, undefined, { serviceTier: extras.serviceTier, tools: toolCallItems(extras.toolCalls) }),
    background: false,
  };
  return { payload, billed };
}
