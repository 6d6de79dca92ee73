/**
 * A streamed answer in the OpenAI API's SSE dialects (chat and completions
 * chunks, the Responses API's typed events), misbehaving as the scenario
 * asks: slow chunks, a break, a hang, an error event, garbage lines.
 *
 * Billed as the API bills a stream: the prompt once accepted, hidden
 * reasoning as it is generated (before the first visible token, spread over
 * `reasoningMs`), visible tokens as they are sent. A client that disconnects
 * stops the generation: it pays for the prompt, the reasoning generated and
 * the tokens sent until then, and never sees the usage.
 */
import { randomBytes } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import type { RecordedRequest } from './types.js';
import { messageIdOf, responseObject, toolCallItems, usageBlock } from './openai-objects.js';
import { billedExtras, num, sleep, think, tokens, type Extras, type Scenario } from './scenario.js';

export interface StreamPlan {
  endpoint: 'chat' | 'completions' | 'responses';
  body: Record<string, unknown>;
  model: string;
  words: string[];
  n: number;
  scenario: Scenario;
  reasoning: number;
  promptTokens: number;
  cachedTokens: number;
  finishReason: string;
  /** The Responses API's response id (stored by the fake) and its status in `response.created`. */
  responseId?: string;
  createdStatus?: string;
  extras: Extras;
  /** USD the fake bills for the usage, reported as `usage.cost` (the openrouter kind). */
  cost?: (promptTokens: number, completionTokens: number) => number | undefined;
}

export async function streamAnswer(res: ServerResponse, plan: StreamPlan, record: RecordedRequest): Promise<void> {
  const { endpoint, model, words, n, scenario } = plan;
  const delay = num(scenario, 'delay') ?? 0;
  const breakAfter = num(scenario, 'breakAfter');
  const hangAfter = num(scenario, 'hangAfter');
  const errorAfter = num(scenario, 'errorAfter');
  const includeUsage = (plan.body.stream_options as { include_usage?: unknown } | undefined)?.include_usage === true;
  const id = endpoint === 'chat' ? `chatcmpl-${randomBytes(8).toString('hex')}` : `cmpl-${randomBytes(8).toString('hex')}`;
  const created = Math.floor(Date.now() / 1000);
  const sent: string[] = []; // text actually written, per content chunk
  let sequence = 0;
  const respId = plan.responseId ?? `resp_${randomBytes(8).toString('hex')}`;
  const messageId = messageIdOf(respId);

  record.status = 200;
  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    'x-request-id': record.id,
    'openai-processing-ms': '5',
    'openai-version': '2020-10-01',
    'openai-organization': 'fake-org-do-not-leak',
  });

  if (scenario.breakAtStart !== undefined) {
    // Headers, then a reset before the first event.
    res.flushHeaders();
    res.destroy();
    return;
  }

  let flushed: Promise<void> = Promise.resolve();
  const write = (text: string): boolean => {
    if (res.destroyed || res.writableEnded) return false;
    flushed = new Promise((resolve) => res.write(text, () => resolve()));
    return true;
  };
  const data = (payload: unknown): string => `data: ${JSON.stringify(payload)}\n\n`;
  const event = (type: string, payload: Record<string, unknown>): string =>
    `event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: sequence++, ...payload })}\n\n`;
  const chatChunk = (choices: unknown[], usage: unknown = null): unknown => ({
    id,
    object: 'chat.completion.chunk',
    created,
    model,
    service_tier: plan.extras.serviceTier,
    system_fingerprint: 'fp_fake',
    choices,
    ...(includeUsage ? { usage } : {}),
  });
  // Counted word by word (each fake word is one token), so a long stream costs linear time.
  let sentTokens = 0;
  /** Hidden reasoning tokens generated so far: billed whether or not the client stays to see the answer. */
  let reasoned = 0;
  const bill = (): void => {
    record.billed = {
      promptTokens: plan.promptTokens,
      cachedTokens: plan.cachedTokens,
      completionTokens: sentTokens + reasoned,
      reasoningTokens: reasoned,
      serviceTier: plan.extras.serviceTier,
    };
  };

  if (endpoint === 'chat') {
    for (let index = 0; index < n; index += 1) {
      write(data(chatChunk([{ index, delta: { role: 'assistant', content: '', refusal: null }, logprobs: null, finish_reason: null }])));
    }
  } else if (endpoint === 'responses') {
    write(event('response.created', { response: responseObject(model, '', plan.createdStatus ?? 'in_progress', null, respId) }));
    write(
      event('response.output_item.added', {
        output_index: 0,
        item: { id: messageId, type: 'message', status: 'in_progress', role: 'assistant', content: [] },
      }),
    );
    write(
      event('response.content_part.added', {
        item_id: messageId,
        output_index: 0,
        content_index: 0,
        part: { type: 'output_text', text: '', annotations: [] },
      }),
    );
  }
  bill();
  if (!(await think(plan.reasoning, num(scenario, 'reasoningMs') ?? 0, res, (tokens) => ((reasoned = tokens), bill())))) return;

  let contentChunks = 0;
  for (let i = 0; i < words.length; i += 1) {
    for (let index = 0; index < n; index += 1) {
      await sleep(delay);
      if (res.destroyed) return;
      if (breakAfter !== undefined && contentChunks >= breakAfter) {
        // Let what was written reach the wire first: a break, not a lost write.
        await flushed;
        res.destroy();
        return;
      }
      if (hangAfter !== undefined && contentChunks >= hangAfter) {
        return; // keep the connection open and say nothing more
      }
      if (errorAfter !== undefined && contentChunks >= errorAfter) {
        const error = { message: 'The server had an error while processing your request.', type: 'server_error', param: null, code: 'server_error' };
        write(endpoint === 'responses' ? event('error', { code: 'server_error', message: error.message, param: null }) : data({ error }));
        record.finished = true;
        res.end();
        return;
      }
      const word = words[i]!;
      if (scenario.garbage !== undefined) write(': keep-alive comment\n\nthis is not an sse field\n\ndata: {not json}\n\n');
      const ok = write(
        endpoint === 'chat'
          ? data(chatChunk([{ index, delta: { content: word }, logprobs: null, finish_reason: null }]))
          : endpoint === 'completions'
            ? data({
                id,
                object: 'text_completion',
                created,
                model,
                choices: [{ text: word, index, logprobs: null, finish_reason: null }],
                ...(includeUsage ? { usage: null } : {}),
              })
            : event('response.output_text.delta', { item_id: messageId, output_index: 0, content_index: 0, delta: word, logprobs: [] }),
      );
      if (!ok) return;
      sent.push(word);
      sentTokens += tokens(model, word);
      contentChunks += 1;
      record.chunksSent = contentChunks;
      bill();
    }
  }
  const answer = words.join('');
  const completionTokens = tokens(model, answer) * n + plan.reasoning + plan.extras.audioCompletionTokens;
  const costUsd = plan.cost?.(plan.promptTokens, completionTokens);
  const usage = {
    ...usageBlock(endpoint, plan.promptTokens, plan.cachedTokens, completionTokens, plan.reasoning, {
      prompt: plan.extras.audioPromptTokens,
      completion: plan.extras.audioCompletionTokens,
    }),
    ...(costUsd === undefined ? {} : { cost: costUsd }),
  };
  const final = { serviceTier: plan.extras.serviceTier, tools: toolCallItems(plan.extras.toolCalls, respId) };
  if (endpoint === 'chat') {
    for (let index = 0; index < n; index += 1) {
      write(data(chatChunk([{ index, delta: {}, logprobs: null, finish_reason: plan.finishReason }])));
    }
    if (includeUsage) write(data(chatChunk([], usage)));
    write('data: [DONE]\n\n');
  } else if (endpoint === 'completions') {
    for (let index = 0; index < n; index += 1) {
      write(
        data({
          id,
          object: 'text_completion',
          created,
          model,
          choices: [{ text: '', index, logprobs: null, finish_reason: plan.finishReason }],
          ...(includeUsage ? { usage: null } : {}),
        }),
      );
    }
    if (includeUsage) write(data({ id, object: 'text_completion', created, model, choices: [], usage }));
    write('data: [DONE]\n\n');
  } else {
    // The closing events of the part and of the item, as the API sends them: Codex builds its
    // answer from `response.output_item.done`, not from the deltas.
    const part = { type: 'output_text', text: answer, annotations: [] };
    write(event('response.output_text.done', { item_id: messageId, output_index: 0, content_index: 0, text: answer, logprobs: [] }));
    write(event('response.content_part.done', { item_id: messageId, output_index: 0, content_index: 0, part }));
    write(
      event('response.output_item.done', {
        output_index: 0,
        item: { id: messageId, type: 'message', status: 'completed', role: 'assistant', content: [part] },
      }),
    );
    write(event('response.completed', { response: responseObject(model, answer, 'completed', usage, respId, final) }));
  }
  record.billed = {
    promptTokens: plan.promptTokens,
    cachedTokens: plan.cachedTokens,
    completionTokens,
    reasoningTokens: plan.reasoning,
    ...billedExtras(plan.extras),
    ...(costUsd === undefined ? {} : { costUsd }),
  };
  record.finished = true;
  res.end();
}
