/**
 * How each endpoint's body is counted and reserved: its prompt counter, the fields that limit
 * its completion and choose its choices, what else it may bill (tier, audio, built-in tools),
 * and the few rules that differ between endpoints (whether it generates, whether each prompt
 * must fit the window alone, whether the route's prompt margin applies). The estimate reads
 * the rules of a request's endpoint instead of branching on its name; the dialect records
 * (src/dialects/) point to them.
 */
import type { Endpoint } from '../endpoints.js';
import { countChatPrompt } from './count-chat.js';
import { countTextInputs } from './count-completions.js';
import { countMessagesPrompt, type CacheWrite } from './count-messages.js';
import type { CountContext, PromptTally } from './count-parts.js';
import { countResponsesPrompt } from './count-responses.js';
import { EstimateInputError } from './errors.js';
import { chatExtras, messagesExtras, plainExtras, responsesExtras, type RequestExtras } from './price-request.js';
import type { ToolPrices } from './price-types.js';
import { readOptionalPositiveInteger, type JsonObject } from './read-body.js';

/** A request's prompt as counted, with what it says about its completion. */
interface Counted {
  readonly tally: PromptTally;
  /** Explicit per-choice completion limit, if the request set one. */
  readonly maxCompletion: number | undefined;
  /** Choices per prompt. */
  readonly n: number;
  readonly promptCount: number;
  /** The field blamed when the prompt does not fit the context window. */
  readonly promptParam: string;
  /** Per-item prompt tokens when each item must fit the window on its own (embeddings, completions). */
  readonly perItem?: number[];
  /** The longest prompt-cache write the request asks for (Anthropic's `cache_control`). */
  readonly cacheWrite?: CacheWrite;
}

/** What the estimate needs to know about one endpoint's bodies. */
export interface PromptRules {
  /** Counts the prompt and reads the completion limit and choices (validating them). */
  readonly count: (body: JsonObject, context: CountContext) => Counted;
  /** What the request asks for beyond text tokens: tier, audio output, built-in tools. */
  readonly extras: (body: JsonObject, model: string, prices: ToolPrices) => RequestExtras;
  /** The request generates a completion (embeddings do not: none is reserved, each input must fit the window). */
  readonly generates: boolean;
  /** Each prompt of a request is a generation of its own and must fit the window alone (completions' prompt arrays). */
  readonly eachPromptAlone: boolean;
  /** A route's prompt margin applies (false: the count is already an upper bound of the upstream's tokenizer). */
  readonly promptMargin: boolean;
  /** The endpoint streams its answers (`stream: true` is refused otherwise, naming {@link PromptRules.title}). */
  readonly streams: boolean;
  /** The endpoint's name in the messages clients read. */
  readonly title: string;
}

function readChoices(body: JsonObject): number {
  return readOptionalPositiveInteger(body['n'], 'n') ?? 1;
}

function countChat(body: JsonObject, context: CountContext): Counted {
  const maxCompletionTokens = readOptionalPositiveInteger(body['max_completion_tokens'], 'max_completion_tokens');
  const maxTokens = readOptionalPositiveInteger(body['max_tokens'], 'max_tokens');
  const n = readChoices(body);
  const tally = countChatPrompt(body, context);
  return { tally, maxCompletion: maxCompletionTokens ?? maxTokens, n, promptCount: 1, promptParam: 'messages' };
}

function countCompletions(body: JsonObject, context: CountContext): Counted {
  const maxTokens = readOptionalPositiveInteger(body['max_tokens'], 'max_tokens');
  const n = readChoices(body);
  const bestOf = readOptionalPositiveInteger(body['best_of'], 'best_of') ?? n;
  const inputs = countTextInputs(body['prompt'], context.counter, 'prompt');
  return {
    tally: { tokens: inputs.total, imageTokens: 0 },
    maxCompletion: maxTokens,
    n: Math.max(n, bestOf),
    promptCount: Math.max(1, inputs.perItem.length),
    promptParam: 'prompt',
    perItem: inputs.perItem,
  };
}

function countEmbeddings(body: JsonObject, context: CountContext): Counted {
  const inputs = countTextInputs(body['input'], context.counter, 'input');
  return {
    tally: { tokens: inputs.total, imageTokens: 0 },
    maxCompletion: undefined,
    n: 1,
    promptCount: Math.max(1, inputs.perItem.length),
    promptParam: 'input',
    perItem: inputs.perItem,
  };
}

function countResponses(body: JsonObject, context: CountContext): Counted {
  const maxOutputTokens = readOptionalPositiveInteger(body['max_output_tokens'], 'max_output_tokens');
  const tally = countResponsesPrompt(body, context);
  return { tally, maxCompletion: maxOutputTokens, n: 1, promptCount: 1, promptParam: 'input' };
}

function countMessages(body: JsonObject, context: CountContext): Counted {
  // Anthropic requires max_tokens: the completion is bounded by it, never by a default.
  const maxTokens = readOptionalPositiveInteger(body['max_tokens'], 'max_tokens');
  if (maxTokens === undefined) throw new EstimateInputError('max_tokens: Field required', 'max_tokens', 'missing_required_parameter');
  const { cacheWrite, ...tally } = countMessagesPrompt(body, context);
  return { tally, maxCompletion: maxTokens, n: 1, promptCount: 1, promptParam: 'messages', cacheWrite };
}

export const CHAT_PROMPT: PromptRules = {
  count: countChat,
  extras: chatExtras,
  generates: true,
  eachPromptAlone: false,
  promptMargin: true,
  streams: true,
  title: 'Chat completions',
};

export const COMPLETIONS_PROMPT: PromptRules = {
  count: countCompletions,
  extras: plainExtras,
  generates: true,
  eachPromptAlone: true,
  promptMargin: true,
  streams: true,
  title: 'Completions',
};

export const EMBEDDINGS_PROMPT: PromptRules = {
  count: countEmbeddings,
  extras: plainExtras,
  generates: false,
  eachPromptAlone: true,
  promptMargin: true,
  streams: false,
  title: 'Embeddings',
};

export const RESPONSES_PROMPT: PromptRules = {
  count: countResponses,
  extras: responsesExtras,
  generates: true,
  eachPromptAlone: false,
  promptMargin: true,
  streams: true,
  title: 'Responses',
};

export const MESSAGES_PROMPT: PromptRules = {
  count: countMessages,
  extras: messagesExtras,
  generates: true,
  eachPromptAlone: false,
  // A Messages body is already counted as an upper bound of Claude's tokens (count-messages.ts): no second margin.
  promptMargin: false,
  streams: true,
  title: 'Messages',
};

/**
 * The rules by endpoint name, for the estimate worker, which is sent the name (a record of
 * functions does not cross threads).
 */
export const PROMPT_RULES: Readonly<Record<Endpoint, PromptRules>> = {
  chat: CHAT_PROMPT,
  completions: COMPLETIONS_PROMPT,
  embeddings: EMBEDDINGS_PROMPT,
  responses: RESPONSES_PROMPT,
  messages: MESSAGES_PROMPT,
};

/** The rules of `endpoint`; a name the table lacks (a hand-made worker job) is refused as bad input. */
export function promptRulesOf(endpoint: Endpoint): PromptRules {
  const rules = Object.hasOwn(PROMPT_RULES, endpoint) ? PROMPT_RULES[endpoint] : undefined;
  if (rules === undefined) throw new EstimateInputError(`Unknown endpoint '${String(endpoint)}'.`, null, 'invalid_value');
  return rules;
}
