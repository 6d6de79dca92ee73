/**
 * OpenAI's Responses API: `POST /v1/responses`. Its answers may be stored upstream, continued,
 * run in the background and polled (src/responses); its output is limited by `max_output_tokens`.
 */
import { countCompletionTokens } from '../estimate/index.js';
import { RESPONSES_PROMPT } from '../estimate/prompt-rules.js';
import type { Dialect } from './dialect.js';
import { limitField } from './request-edits.js';
import { RESPONSES_STORED } from './responses-answer.js';
import { newResponsesReader, responsesErrorEvent } from './responses-stream.js';
import { completionTextOfJson, usageFromJsonBytes } from './usage.js';

export const RESPONSES: Dialect = {
  endpoint: 'responses',
  path: '/v1/responses',
  upstreamKind: 'openai',
  upstreamQuery: [],
  prompt: RESPONSES_PROMPT,
  countCompletion: countCompletionTokens,
  outputLimitEdits: limitField('max_output_tokens'),
  usageOnRequest: false,
  usageOfJson: usageFromJsonBytes,
  completionTextOfJson,
  errorCodeField: 'code',
  newStreamReader: newResponsesReader,
  streamErrorEvent: responsesErrorEvent,
  storedResponses: RESPONSES_STORED,
};
