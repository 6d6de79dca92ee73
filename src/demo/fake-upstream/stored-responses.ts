/**
 * The fake's stored Responses and background jobs, as the Responses API
 * keeps them:
 *
 * - every response created without `store: false` can be retrieved
 *   (`GET /v1/responses/{id}`), deleted (`DELETE`, answering
 *   `{id, object: "response", deleted: true}`) and its input listed
 *   (`GET …/input_items`, a list object with cursors);
 * - `background: true` answers at once with `status: "queued"` and
 *   `usage: null`; the job is `in_progress` halfway and finishes after the
 *   scenario's `jobMs` (default 50) as `completed` with its usage — or as
 *   `jobEnd=failed` (no usage) or `jobEnd=incomplete`;
 * - `POST …/cancel` cancels a queued or in-progress background job
 *   (`status: "cancelled"`, no usage, nothing billed); a job streamed to a
 *   client that went away runs on to its end, as background jobs do.
 *
 * What a job bills goes on the record of the request that created it.
 *
 * A request that continues a stored response (`previous_response_id`) is
 * billed its whole history again as input — the previous response's input
 * (which holds its own history) and output — and one that names an
 * `item_reference` is billed the referenced item, as the API bills them; an
 * id the fake does not hold is the API's own 404 (see {@link storedInput}).
 */
import { randomBytes } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { responseObject, usageBlock } from './openai-objects.js';
import { sendJson } from './respond.js';
import { num, tokens, type Scenario } from './scenario.js';
import type { RecordedRequest } from './types.js';

interface StoredResponse {
  object: Record<string, unknown>;
  readonly background: boolean;
  readonly inputItems: readonly Record<string, unknown>[];
  readonly record: RecordedRequest;
  timers: NodeJS.Timeout[];
}

/** What a finished job reports and bills. */
export interface JobResult {
  readonly model: string;
  readonly answer: string;
  readonly promptTokens: number;
  readonly cachedTokens: number;
  readonly reasoning: number;
}

const MAX_STORED = 10_000;

export class StoredResponses {
  private readonly stored = new Map<string, StoredResponse>();

  /** Remembers a response (unless the request said `store: false`). */
  keep(body: Record<string, unknown>, object: Record<string, unknown>, record: RecordedRequest): void {
    if (body.store === false) return;
    // Benchmarks send millions of requests: keep the newest responses only.
    if (this.stored.size >= MAX_STORED) {
      const oldest = this.stored.keys().next().value as string;
      for (const timer of this.stored.get(oldest)?.timers ?? []) clearTimeout(timer);
      this.stored.delete(oldest);
    }
    this.stored.set(object.id as string, { object, background: body.background === true, inputItems: inputItemsOf(body.input), record, timers: [] });
  }

  /** Starts a background job that finishes after the scenario's `jobMs`. */
  run(id: string, scenario: Scenario, result: JobResult, startAfterMs = 0): void {
    const entry = this.stored.get(id);
    if (entry === undefined) return;
    const jobMs = num(scenario, 'jobMs') ?? 50;
    entry.timers.push(
      setTimeout(() => this.transition(id, 'in_progress'), startAfterMs + jobMs / 2),
      setTimeout(() => this.finish(id, scenario.jobEnd ?? 'completed', result), startAfterMs + jobMs),
    );
  }

  /** Ends a job now (its stream reached its end, or its time came). */
  finish(id: string, end: string, result: JobResult): void {
    const entry = this.stored.get(id);
    if (entry === undefined || !isRunning(entry.object.status)) return;
    for (const timer of entry.timers) clearTimeout(timer);
    const { model, answer, promptTokens, cachedTokens, reasoning } = result;
    const completionTokens = tokens(model, answer) + reasoning;
    if (end === 'failed') {
      entry.object = {
        ...responseObject(model, '', 'failed', null, id),
        background: entry.background,
        error: { code: 'server_error', message: 'The background job failed.' },
      };
      entry.record.billed = { promptTokens: 0, cachedTokens: 0, completionTokens: 0, reasoningTokens: 0 };
      return;
    }
    const usage = usageBlock('responses', promptTokens, cachedTokens, completionTokens, reasoning);
    entry.object = {
      ...responseObject(model, answer, end === 'incomplete' ? 'incomplete' : 'completed', usage, id),
      background: entry.background,
      ...(end === 'incomplete' ? { incomplete_details: { reason: 'max_output_tokens' } } : {}),
    };
    entry.record.billed = { promptTokens, cachedTokens, completionTokens, reasoningTokens: reasoning };
  }

  private transition(id: string, status: string): void {
    const entry = this.stored.get(id);
    if (entry !== undefined && isRunning(entry.object.status)) entry.object = { ...entry.object, status };
  }

  /** Answers a lifecycle call (`GET|POST|DELETE /v1/responses/{id}[/cancel|/input_items]`); false when the path is not one. */
  handle(method: string, path: string, query: URLSearchParams, res: ServerResponse, record: RecordedRequest): boolean {
    const match = /^\/v1\/responses\/([^/]+)(\/cancel|\/input_items)?$/.exec(path);
    if (match === null) return false;
    const id = decodeURIComponent(match[1]!);
    const sub = match[2] ?? '';
    const route = `${method} ${sub}`;
    if (!['GET ', 'DELETE ', 'POST /cancel', 'GET /input_items'].includes(route)) return false;
    const entry = this.stored.get(id);
    if (entry === undefined) {
      sendJson(res, 404, { error: { message: `Response with id '${id}' not found.`, type: 'invalid_request_error', param: null, code: null } }, record);
      return true;
    }
    if (route === 'GET ') {
      sendJson(res, 200, entry.object, record);
    } else if (route === 'DELETE ') {
      for (const timer of entry.timers) clearTimeout(timer);
      this.stored.delete(id);
      sendJson(res, 200, { id, object: 'response', deleted: true }, record);
    } else if (route === 'POST /cancel') {
      if (!entry.background) {
        sendJson(res, 400, { error: { message: 'Cannot cancel a synchronous response.', type: 'invalid_request_error', param: null, code: null } }, record);
      } else {
        if (isRunning(entry.object.status)) {
          for (const timer of entry.timers) clearTimeout(timer);
          entry.object = { ...entry.object, status: 'cancelled', usage: null };
          entry.record.billed = { promptTokens: 0, cachedTokens: 0, completionTokens: 0, reasoningTokens: 0 };
        }
        sendJson(res, 200, entry.object, record);
      }
    } else {
      sendJson(res, 200, listPage(entry.inputItems, query), record);
    }
    return true;
  }

  /**
   * What a Responses request's stored input bills, or the API's 404 for an id not held: the
   * previous response's input and output tokens (as billed so far, for one still running), and
   * each referenced item's text plus 3 tokens of framing.
   */
  storedInput(body: Record<string, unknown>, model: string): { ok: true; tokens: number } | { ok: false; error: Record<string, unknown> } {
    let total = 0;
    const previous = body.previous_response_id;
    if (typeof previous === 'string') {
      const entry = this.stored.get(previous);
      if (entry === undefined) {
        return {
          ok: false,
          error: {
            error: {
              message: `Previous response with id '${previous}' not found.`,
              type: 'invalid_request_error',
              param: 'previous_response_id',
              code: 'previous_response_not_found',
            },
          },
        };
      }
      total += entry.record.billed.promptTokens + entry.record.billed.completionTokens;
    }
    for (const item of Array.isArray(body.input) ? body.input : []) {
      const fields = (item ?? {}) as Record<string, unknown>;
      if (fields.type !== 'item_reference') continue;
      const found = this.findItem(String(fields.id));
      if (found === undefined) {
        return {
          ok: false,
          error: { error: { message: `Item with id '${String(fields.id)}' not found.`, type: 'invalid_request_error', param: 'input', code: null } },
        };
      }
      total += 3 + tokens(model, textOfItem(found));
    }
    return { ok: true, tokens: total };
  }

  private findItem(id: string): Record<string, unknown> | undefined {
    for (const entry of this.stored.values()) {
      const output = Array.isArray(entry.object.output) ? (entry.object.output as Record<string, unknown>[]) : [];
      const found = output.find((item) => item.id === id) ?? entry.inputItems.find((item) => item.id === id);
      if (found !== undefined) return found;
    }
    return undefined;
  }

  /** Stops every job (the server is closing). */
  close(): void {
    for (const entry of this.stored.values()) for (const timer of entry.timers) clearTimeout(timer);
  }
}

/** The text of an item's content parts. */
function textOfItem(item: Record<string, unknown>): string {
  const content = item.content;
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content.map((part) => (typeof (part as { text?: unknown } | null)?.text === 'string' ? (part as { text: string }).text : '')).join('');
}

function isRunning(status: unknown): boolean {
  return status === 'queued' || status === 'in_progress';
}

/** The input as the API lists it: items with ids, text content as `input_text` parts. */
function inputItemsOf(input: unknown): Record<string, unknown>[] {
  const items = typeof input === 'string' ? [{ role: 'user', content: input }] : Array.isArray(input) ? input : [];
  return items.map((raw) => {
    const item = (raw !== null && typeof raw === 'object' ? raw : {}) as Record<string, unknown>;
    const content = typeof item.content === 'string' ? [{ type: 'input_text', text: item.content }] : item.content;
    return { id: `msg_${randomBytes(8).toString('hex')}`, type: 'message', status: 'completed', ...item, content };
  });
}

/** One page of a list, newest first unless `order=asc`, after the `after` cursor, at most `limit` (default 20). */
function listPage(items: readonly Record<string, unknown>[], query: URLSearchParams): Record<string, unknown> {
  const ordered = query.get('order') === 'asc' ? [...items] : [...items].reverse();
  const after = query.get('after');
  const start = after === null ? 0 : ordered.findIndex((item) => item.id === after) + 1;
  const limit = Math.min(100, Math.max(1, Number(query.get('limit') ?? 20) || 20));
  const data = ordered.slice(start, start + limit);
  return {
    object: 'list',
    data,
    first_id: data[0]?.id ?? null,
    last_id: data.at(-1)?.id ?? null,
    has_more: start + limit < ordered.length,
  };
}
