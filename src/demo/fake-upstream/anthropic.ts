/**
 * The fake upstream's Anthropic dialect: `POST /v1/messages` (JSON and SSE) and
 * `POST /v1/messages/count_tokens`, authenticated the way Anthropic's API is (`x-api-key` and
 * `anthropic-version`), with Anthropic's error shape, usage fields (cache reads, 5-minute and
 * 1-hour cache writes), `max_tokens` honoured and its own bill for tests to compare. It bills as
 * Anthropic does when a client leaves: a JSON message is finished and billed in full; a stream
 * stops and bills the prompt and the output (thinking included) generated until then.
 *
 * Scenario settings (`x-fake-scenario`), besides the shared ones (status, delay, headersDelay,
 * breakAfter, hangAfter, errorAfter, words):
 *   cacheRead=N, cacheWrite=N, cacheWrite1h=N   that many prompt tokens read from / written to the cache;
 *                 as on the real API, a write needs a `cache_control` breakpoint of its TTL in the
 *                 request (`{ type: 'ephemeral' }` for 5 minutes, `ttl: '1h'` for an hour): without
 *                 one, nothing is written
 *   thinking=N    N words of thinking before the answer (thinking_delta; billed as output)
 *   reasoning=N   N more thinking tokens billed as output but not shown: Claude 4 models return a
 *                 summary of their thinking and bill the full thinking. Generated first, over
 *                 reasoningMs=MS (default 0); a stream's client that leaves meanwhile still pays
 *                 for what was thought so far
 *   ignoreLimit=1 generate past max_tokens (a misbehaving upstream)
 *   tool=NAME     end with a tool_use block calling NAME (input streamed as input_json_delta)
 *   status=529    overloaded_error (429 rate_limit_error with retry-after, 500 api_error, …)
 */
import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { outputTokens, streamMessage, TOOL_INPUT, usageObject, type MessagePlan } from './anthropic-stream.js';
import { answerWords, num, sleep, tokens, type Scenario } from './scenario.js';
import type { FakeBilling, RecordedRequest } from './types.js';

/** Paths the Anthropic dialect answers; its model list (`GET /v1/models`, shared with OpenAI's path) when asked with `anthropic-version`. */
export function isAnthropicPath(path: string, headers: IncomingMessage['headers'] = {}): boolean {
  if (path === '/v1/models') return typeof headers['anthropic-version'] === 'string';
  // Message Batches: anthropic-batches.ts.
  return path === '/v1/messages' || path === '/v1/messages/count_tokens' || path === '/v1/messages/batches' || path.startsWith('/v1/messages/batches/');
}

/** Models the Anthropic dialect lists. */
const ANTHROPIC_MODELS = ['claude-sonnet-4-5', 'claude-haiku-4-5', 'claude-opus-4-1'];

/** `GET /v1/models` as Anthropic answers it: a wrong key is a 401 `authentication_error`. */
export function answerAnthropicModels(req: IncomingMessage, res: ServerResponse, record: RecordedRequest, apiKey: string | undefined): void {
  if (apiKey !== undefined && req.headers['x-api-key'] !== apiKey) return sendAnthropicError(res, 401, record);
  const data = ANTHROPIC_MODELS.map((id) => ({ type: 'model', id, display_name: id, created_at: '2025-01-01T00:00:00Z' }));
  sendAnthropicJson(res, 200, { data, has_more: false, first_id: data[0]!.id, last_id: data.at(-1)!.id }, record);
}

const ERRORS: Record<number, { type: string; message: string }> = {
  400: { type: 'invalid_request_error', message: 'The fake upstream was told to reject this request.' },
  401: { type: 'authentication_error', message: 'invalid x-api-key' },
  403: { type: 'permission_error', message: 'Your API key does not have permission to use the specified resource.' },
  404: { type: 'not_found_error', message: 'The requested resource could not be found.' },
  413: { type: 'request_too_large', message: 'Request exceeds the maximum allowed number of bytes.' },
  429: { type: 'rate_limit_error', message: 'Number of request tokens has exceeded your per-minute rate limit.' },
  500: { type: 'api_error', message: 'Internal server error' },
  529: { type: 'overloaded_error', message: 'Overloaded' },
};

export function sendAnthropicJson(res: ServerResponse, status: number, payload: unknown, record: RecordedRequest): void {
  record.status = status;
  record.finished = true;
  if (res.destroyed) return;
  const text = JSON.stringify(payload);
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
    'request-id': record.id,
    'anthropic-organization-id': 'fake-anthropic-org-do-not-leak',
    'anthropic-ratelimit-requests-limit': '4000',
    'anthropic-ratelimit-requests-remaining': '3999',
  });
  res.end(text);
}

export function sendAnthropicError(res: ServerResponse, status: number, record: RecordedRequest, message?: string): void {
  if (res.destroyed) return;
  const error = ERRORS[status] ?? { type: 'api_error', message: `Fake error ${status}.` };
  const text = JSON.stringify({ type: 'error', error: { type: error.type, message: message ?? error.message }, request_id: record.id });
  record.status = status;
  record.finished = true;
  const headers: Record<string, string | number> = { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), 'request-id': record.id };
  if (status === 429) {
    headers['retry-after'] = '1';
    headers['anthropic-ratelimit-requests-remaining'] = '0';
  }
  res.writeHead(status, headers);
  res.end(text);
}

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  let text = '';
  for (const block of content as Array<Record<string, unknown> | null>) {
    if (block === null || typeof block !== 'object') continue;
    if (typeof block.text === 'string') text += block.text;
    if (typeof block.thinking === 'string') text += block.thinking;
    if (block.type === 'tool_use') text += String(block.name ?? '') + JSON.stringify(block.input ?? {});
    if (block.type === 'tool_result') text += textOf(block.content);
  }
  return text;
}

/**
 * Input tokens as the fake bills them: o200k_base tokens of the text × 1.2 (Claude's tokenizer
 * makes more tokens than OpenAI's), 4 per message, 100 per image, tools as their JSON text plus
 * 300 for the tool-use system prompt. An independent, simple model of the real API, deliberately
 * unlike src/estimate/count-messages.ts.
 */
function anthropicInputTokens(body: Record<string, unknown>, model: string): number {
  let text = textOf(body.system);
  let framing = 3;
  let images = 0;
  for (const message of Array.isArray(body.messages) ? body.messages : []) {
    const content = (message as { content?: unknown } | null)?.content;
    text += textOf(content);
    framing += 4;
    if (Array.isArray(content)) images += content.filter((block) => (block as { type?: unknown } | null)?.type === 'image').length;
  }
  if (Array.isArray(body.tools) && body.tools.length > 0) {
    text += JSON.stringify(body.tools);
    framing += 300;
  }
  return Math.ceil(tokens(model, text) * 1.2) + framing + images * 100;
}

/** Answers an Anthropic request; `requests` receives its record. */
export async function handleAnthropic(
  req: IncomingMessage,
  res: ServerResponse,
  raw: string,
  scenario: Scenario,
  record: RecordedRequest,
  apiKey: string | undefined,
): Promise<void> {
  if (apiKey !== undefined && req.headers['x-api-key'] !== apiKey) return sendAnthropicError(res, 401, record);
  if (typeof req.headers['anthropic-version'] !== 'string') return sendAnthropicError(res, 400, record, 'anthropic-version: header is required');
  let body: Record<string, unknown>;
  try {
    body = JSON.parse(raw) as Record<string, unknown>;
  } catch {
    return sendAnthropicError(res, 400, record, 'There was an error parsing the body of your request.');
  }
  (record as { body: unknown }).body = body;
  const status = num(scenario, 'status');
  if (status !== undefined && status >= 400) {
    await sleep(num(scenario, 'headersDelay') ?? 0);
    return sendAnthropicError(res, status, record);
  }
  const invalid = invalidMessageBody(body, (req.url ?? '').split('?')[0] === '/v1/messages/count_tokens');
  if (invalid !== undefined) return sendAnthropicError(res, 400, record, invalid);
  const model = body.model as string;
  if ((req.url ?? '').split('?')[0] === '/v1/messages/count_tokens')
    return sendAnthropicJson(res, 200, { input_tokens: anthropicInputTokens(body, model) }, record);
  const { plan, billPrompt } = planAnthropicMessage(body, model, scenario);
  record.billed = { ...billPrompt, completionTokens: 0 };

  await sleep(num(scenario, 'headersDelay') ?? 0);
  // A stream whose client left before its first byte is not generated; a JSON message is
  // finished and billed whether or not its client stays.
  if (body.stream === true) return res.destroyed ? undefined : streamMessage(res, plan, record, billPrompt);
  await sleep((plan.hiddenThinking > 0 ? (num(scenario, 'reasoningMs') ?? 0) : 0) + (num(scenario, 'delay') ?? 0));
  const finished = finishedMessage(plan, billPrompt);
  record.billed = finished.billed;
  return sendAnthropicJson(res, 200, finished.message, record);
}

/** Why a Messages body is refused (400 `invalid_request_error`), or undefined; `countOnly` needs no max_tokens. */
export function invalidMessageBody(body: Record<string, unknown>, countOnly = false): string | undefined {
  if (typeof body.model !== 'string' || body.model === '') return 'model: Field required';
  if (!Array.isArray(body.messages)) return 'messages: Field required';
  const maxTokens = body.max_tokens;
  if (!countOnly && (typeof maxTokens !== 'number' || !Number.isInteger(maxTokens) || maxTokens < 1)) return 'max_tokens: Field required';
  return undefined;
}

/** What the prompt of a message bills: cache reads and writes split off as the scenario says. */
type PromptBill = Omit<FakeBilling, 'completionTokens'> & { cacheWrite5mTokens: number; cacheWrite1hTokens: number };

/**
 * The message Anthropic would give a valid body (see {@link invalidMessageBody}), planned: its
 * prompt split into cache reads, cache writes and the rest, then thinking, the answer and a tool
 * call, all within max_tokens (unless the scenario says ignoreLimit: a misbehaving upstream).
 */
export function planAnthropicMessage(body: Record<string, unknown>, model: string, scenario: Scenario): { plan: MessagePlan; billPrompt: PromptBill } {
  const prompt = anthropicInputTokens(body, model);
  const maxTokens = body.max_tokens as number;
  const cacheRead = Math.min(prompt, num(scenario, 'cacheRead') ?? 0);
  const breakpoints = cacheBreakpoints(body);
  const write1h = breakpoints.has('1h') ? Math.min(prompt - cacheRead, num(scenario, 'cacheWrite1h') ?? 0) : 0;
  const write5m = breakpoints.has('5m') ? Math.min(prompt - cacheRead - write1h, num(scenario, 'cacheWrite') ?? 0) : 0;
  const input = prompt - cacheRead - write1h - write5m;
  const billPrompt = { promptTokens: prompt, cachedTokens: cacheRead, cacheWrite5mTokens: write5m, cacheWrite1hTokens: write1h, reasoningTokens: 0 };
  const limit = scenario.ignoreLimit === undefined ? maxTokens : Number.MAX_SAFE_INTEGER;
  const wantedHidden = num(scenario, 'reasoning') ?? 0;
  const hiddenThinking = Math.min(wantedHidden, limit);
  const wantedThinking = num(scenario, 'thinking') ?? 0;
  const thinking = answerWords({ words: String(wantedThinking) }, limit - hiddenThinking).map((word) => word.toLowerCase());
  const answer = answerWords(scenario, limit - hiddenThinking - thinking.length);
  const tool = scenario.tool !== undefined && hiddenThinking + thinking.length + answer.length < limit ? scenario.tool : undefined;
  const truncated = wantedHidden + wantedThinking + (num(scenario, 'words') ?? 12) > limit;
  const plan: MessagePlan = {
    id: `msg_${randomBytes(12).toString('hex')}`,
    model,
    hiddenThinking,
    thinking,
    answer,
    tool,
    stopReason: truncated ? 'max_tokens' : tool !== undefined ? 'tool_use' : 'end_turn',
    usage: { input, cacheRead, write5m, write1h },
    scenario,
  };
  return { plan, billPrompt };
}

/** The finished JSON message and its bill. */
export function finishedMessage(plan: MessagePlan, billPrompt: PromptBill): { message: Record<string, unknown>; billed: FakeBilling } {
  const content: unknown[] = [];
  if (plan.thinking.length > 0 || plan.hiddenThinking > 0) content.push({ type: 'thinking', thinking: plan.thinking.join(''), signature: 'fake-signature' });
  if (plan.answer.length > 0) content.push({ type: 'text', text: plan.answer.join('') });
  if (plan.tool !== undefined) content.push({ type: 'tool_use', id: 'toolu_fake', name: plan.tool, input: TOOL_INPUT });
  const output = outputTokens(plan);
  const message = {
    id: plan.id,
    type: 'message',
    role: 'assistant',
    model: plan.model,
    content,
    stop_reason: plan.stopReason,
    stop_sequence: null,
    usage: usageObject(plan, output),
  };
  return { message, billed: { ...billPrompt, completionTokens: output } };
}

/** The TTLs of the request's `cache_control` breakpoints (system, tools, message blocks, or the request's own). */
function cacheBreakpoints(value: unknown, found = new Set<'5m' | '1h'>()): Set<'5m' | '1h'> {
  if (Array.isArray(value)) for (const item of value) cacheBreakpoints(item, found);
  else if (typeof value === 'object' && value !== null) {
    for (const [name, inner] of Object.entries(value)) {
      if (name === 'cache_control' && typeof inner === 'object' && inner !== null) found.add((inner as { ttl?: unknown }).ttl === '1h' ? '1h' : '5m');
      else cacheBreakpoints(inner, found);
    }
  }
  return found;
}
