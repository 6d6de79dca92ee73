/** OpenAI's Embeddings: `POST /v1/embeddings`. Nothing is generated: no output limit, no stream (refused: src/estimate/prompt-rules.ts). */
import { countCompletionTokens } from '../estimate/index.js';
import { EMBEDDINGS_PROMPT } from '../estimate/prompt-rules.js';
import type { Dialect } from './dialect.js';
import { chunkErrorEvent, newCompletionsReader } from './openai-chunks.js';
import { noOutputLimit } from './request-edits.js';
import { completionTextOfJson, usageFromJsonBytes } from './usage.js';

export const EMBEDDINGS: Dialect = {
  endpoint: 'embeddings',
  path: '/v1/embeddings',
  upstreamKind: 'openai',
  upstreamQuery: [],
  prompt: EMBEDDINGS_PROMPT,
  countCompletion: countCompletionTokens,
  outputLimitEdits: noOutputLimit,
  usageOnRequest: false,
  usageOfJson: usageFromJsonBytes,
  completionTextOfJson,
  errorCodeField: 'code',
  // An upstream that streams anyway is read as completions chunks are.
  newStreamReader: newCompletionsReader,
  streamErrorEvent: chunkErrorEvent,
};
