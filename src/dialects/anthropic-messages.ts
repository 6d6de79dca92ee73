/**
 * Anthropic's Messages API, served natively: `POST /v1/messages` (JSON and SSE), to Anthropic
 * upstreams. Its usage counts cached prompt tokens apart (anthropic-usage.ts), its tokenizer is
 * not public (counts are upper bounds: src/estimate/count-messages.ts), and Tollgate's own errors
 * are told in Anthropic's shape (anthropic-errors.ts).
 */
import { countClaudeCompletionTokens } from '../estimate/index.js';
import { MESSAGES_PROMPT } from '../estimate/prompt-rules.js';
import { renderAnthropicError } from './anthropic-errors.js';
import { anthropicUsageFromJson, completionTextOfMessage } from './anthropic-usage.js';
import type { Dialect } from './dialect.js';
import { messagesErrorEvent, newMessagesReader } from './messages-stream.js';
import { limitField } from './request-edits.js';

export const ANTHROPIC_MESSAGES: Dialect = {
  endpoint: 'messages',
  path: '/v1/messages',
  upstreamKind: 'anthropic',
  // Anthropic's beta features are chosen by the `beta` query parameter as well as by header.
  upstreamQuery: ['beta'],
  prompt: MESSAGES_PROMPT,
  countCompletion: countClaudeCompletionTokens,
  outputLimitEdits: limitField('max_tokens'),
  usageOnRequest: false,
  usageOfJson: anthropicUsageFromJson,
  completionTextOfJson: completionTextOfMessage,
  errorCodeField: 'type',
  newStreamReader: newMessagesReader,
  streamErrorEvent: messagesErrorEvent,
  countTokensPath: '/v1/messages/count_tokens',
  renderError: renderAnthropicError,
};
