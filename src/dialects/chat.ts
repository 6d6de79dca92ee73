/** OpenAI's Chat Completions: `POST /v1/chat/completions`. */
import { countCompletionTokens } from '../estimate/index.js';
import { CHAT_PROMPT } from '../estimate/prompt-rules.js';
import type { Dialect } from './dialect.js';
import { chunkErrorEvent, newChatReader } from './openai-chunks.js';
import { chatLimitEdits } from './request-edits.js';
import { completionTextOfJson, usageFromJsonBytes } from './usage.js';

export const CHAT: Dialect = {
  endpoint: 'chat',
  path: '/v1/chat/completions',
  upstreamKind: 'openai',
  upstreamQuery: [],
  prompt: CHAT_PROMPT,
  countCompletion: countCompletionTokens,
  outputLimitEdits: chatLimitEdits,
  usageOnRequest: true,
  usageOfJson: usageFromJsonBytes,
  completionTextOfJson,
  errorCodeField: 'code',
  newStreamReader: newChatReader,
  streamErrorEvent: chunkErrorEvent,
};
