/** OpenAI's legacy Completions: `POST /v1/completions`. */
import { countCompletionTokens } from '../estimate/index.js';
import { COMPLETIONS_PROMPT } from '../estimate/prompt-rules.js';
import type { Dialect } from './dialect.js';
import { chunkErrorEvent, newCompletionsReader } from './openai-chunks.js';
import { limitField } from './request-edits.js';
import { completionTextOfJson, usageFromJsonBytes } from './usage.js';

export const COMPLETIONS: Dialect = {
  endpoint: 'completions',
  path: '/v1/completions',
  upstreamKind: 'openai',
  upstreamQuery: [],
  prompt: COMPLETIONS_PROMPT,
  countCompletion: countCompletionTokens,
  outputLimitEdits: limitField('max_tokens'),
  usageOnRequest: true,
  usageOfJson: usageFromJsonBytes,
  completionTextOfJson,
  errorCodeField: 'code',
  newStreamReader: newCompletionsReader,
  streamErrorEvent: chunkErrorEvent,
};
