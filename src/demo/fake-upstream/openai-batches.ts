/**
 * The fake's OpenAI Batch API: `POST /v1/batches` (`input_file_id`,
 * `endpoint`, `completion_window: "24h"`, `metadata`), `GET /v1/batches`
 * (newest first, `limit` / `after`), `GET /v1/batches/{id}` and
 * `POST /v1/batches/{id}/cancel`, with the batch object's own shape and
 * lifecycle: validating → in_progress → finalizing → completed; failed (the
 * input file's problems in `errors.data`, each with its line); expired
 * (lines not processed go to the error file with code `batch_expired`);
 * cancelling → cancelled (partial results in the output file; lines not
 * processed are in neither file). Timing and end come from the create
 * request's scenario (batch-run.ts).
 *
 * Each line is answered as its endpoint answers that body (openai-answer.ts),
 * into the output file (`{id, custom_id, response: {status_code, request_id,
 * body}, error: null}`) or, for a 4xx, the error file. A processed line is a
 * record of its own in `requests` (method POST, path its `url`, body its
 * body, the create request's headers) whose `billed` carries `batchId` and
 * `customId`: priced at half the synchronous rate. An errored line's record
 * (status 400) bills nothing; a line never processed has no record.
 *
 * `request_counts.failed` counts the lines in the error file (an expired
 * batch's unprocessed lines included). `usage` sums the processed lines'
 * usage; `model` is the first line's model.
 */
import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { batchTiming, LineRunner, type BatchTiming } from './batch-run.js';
import { listPage, openAIError, type FileStore } from './files.js';
import { finishedOpenAIAnswer, planOpenAIAnswer, type OpenAIEndpoint } from './openai-answer.js';
import { sendJson } from './respond.js';
import type { Scenario } from './scenario.js';
import type { BatchLimits, RecordedRequest } from './types.js';

const ENDPOINTS: Readonly<Record<string, OpenAIEndpoint>> = {
  '/v1/chat/completions': 'chat',
  '/v1/completions': 'completions',
  '/v1/embeddings': 'embeddings',
  '/v1/responses': 'responses',
};

interface BatchLine {
  readonly customId: string;
  readonly url: string;
  readonly body: Record<string, unknown>;
}

interface InputError {
  readonly code: string;
  readonly message: string;
  readonly param: string | null;
  readonly line: number | null;
}

interface Batch {
  object: Record<string, unknown>;
  lines: BatchLine[];
  readonly problems: InputError[];
  readonly outputs: string[];
  readonly errors: string[];
  readonly scenario: Scenario;
  readonly timing: BatchTiming;
  readonly headers: IncomingMessage['headers'];
  readonly runner: LineRunner;
  readonly usage: { input: number; cached: number; output: number; reasoning: number };
}

/** Reads an input file's lines, and what is wrong with them (code, message, param, 1-based line). */
export function readBatchInput(text: string, endpoint: string): { lines: BatchLine[]; problems: InputError[] } {
  const lines: BatchLine[] = [];
  const problems: InputError[] = [];
  const seen = new Set<string>();
  text.split('\n').forEach((rawLine, index) => {
    const line = index + 1;
    if (rawLine.trim() === '') return;
    let parsed: unknown;
    try {
      parsed = JSON.parse(rawLine);
    } catch {
      parsed = undefined;
    }
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
      problems.push({ code: 'invalid_json_line', message: 'This line is not parseable as valid JSON.', param: null, line });
      return;
    }
    const fields = parsed as Record<string, unknown>;
    const problem = (code: string, message: string, param: string) => problems.push({ code, message, param, line });
    if (typeof fields.custom_id !== 'string' || fields.custom_id === '') return problem('missing_required_parameter', 'Missing custom_id.', 'custom_id');
    if (fields.method !== 'POST') return problem('invalid_method', "Only the 'POST' method is supported.", 'method');
    if (typeof fields.url !== 'string' || ENDPOINTS[fields.url] === undefined) {
      return problem('invalid_url', `The URL '${String(fields.url)}' is not supported by the Batch API.`, 'url');
    }
    if (fields.url !== endpoint) {
      return problem('mismatched_endpoint', `The URL '${fields.url}' does not match the batch endpoint '${endpoint}'.`, 'url');
    }
    if (fields.body === null || typeof fields.body !== 'object' || Array.isArray(fields.body))
      return problem('missing_required_parameter', 'Missing body.', 'body');
    if (seen.has(fields.custom_id)) {
      return problem(
        'duplicate_custom_id',
        'The custom_id for this request is a duplicate of another request. The custom_id parameter must be unique for each request in a batch.',
        'custom_id',
      );
    }
    seen.add(fields.custom_id);
    lines.push({ customId: fields.custom_id, url: fields.url, body: fields.body as Record<string, unknown> });
  });
  if (lines.length === 0 && problems.length === 0) problems.push({ code: 'empty_file', message: 'The input file is empty.', param: null, line: null });
  return { lines, problems };
}

export class OpenAIBatches {
  private readonly batches = new Map<string, Batch>();
  private readonly maxBatches: number;

  constructor(
    private readonly files: FileStore,
    /** Where a processed line's record goes (the fake's `requests`). */
    private readonly recordLine: (record: RecordedRequest) => void,
    limits: BatchLimits = {},
    private readonly now: () => number = Date.now,
  ) {
    this.maxBatches = limits.maxBatches ?? 1000;
  }

  /** Answers a Batch API call; false when the path is not one. */
  handle(req: IncomingMessage, path: string, body: Record<string, unknown>, scenario: Scenario, res: ServerResponse, record: RecordedRequest): boolean {
    const method = req.method ?? 'GET';
    if (path === '/v1/batches') {
      if (method === 'POST') this.create(req, body, scenario, res, record);
      else if (method === 'GET')
        sendJson(
          res,
          200,
          listPage(
            [...this.batches.values()].map((batch) => batch.object),
            this.query(req),
          ),
          record,
        );
      else return false;
      return true;
    }
    const match = /^\/v1\/batches\/([^/]+)(\/cancel)?$/.exec(path);
    if (match === null || (match[2] === undefined ? method !== 'GET' : method !== 'POST')) return false;
    const id = decodeURIComponent(match[1]!);
    const batch = this.batches.get(id);
    if (batch === undefined) sendJson(res, 404, openAIError(`No batch found with id '${id}'.`, null, 'batch_not_found'), record);
    else if (match[2] === undefined) sendJson(res, 200, batch.object, record);
    else this.cancel(batch, res, record);
    return true;
  }

  private query(req: IncomingMessage): URLSearchParams {
    return new URL(req.url ?? '/', 'http://fake').searchParams;
  }

  private create(req: IncomingMessage, body: Record<string, unknown>, scenario: Scenario, res: ServerResponse, record: RecordedRequest): void {
    const { input_file_id: inputFileId, endpoint, completion_window: window, metadata } = body;
    if (typeof inputFileId !== 'string') return sendJson(res, 400, openAIError("Missing required parameter: 'input_file_id'.", 'input_file_id'), record);
    if (typeof endpoint !== 'string' || ENDPOINTS[endpoint] === undefined) {
      const allowed = Object.keys(ENDPOINTS).join(', ');
      return sendJson(res, 400, openAIError(`Invalid 'endpoint': expected one of ${allowed}.`, 'endpoint', 'invalid_value'), record);
    }
    if (window !== '24h')
      return sendJson(res, 400, openAIError("Invalid 'completion_window': only '24h' is supported.", 'completion_window', 'invalid_value'), record);
    const file = this.files.get(inputFileId);
    if (file === undefined) return sendJson(res, 404, openAIError(`No such File object: ${inputFileId}`, 'input_file_id'), record);
    if (file.purpose !== 'batch') {
      return sendJson(
        res,
        400,
        openAIError(`File ${inputFileId} has purpose '${file.purpose}'; a batch needs purpose 'batch'.`, 'input_file_id', 'invalid_value'),
        record,
      );
    }
    const { lines, problems } = readBatchInput(file.content.toString('utf8'), endpoint);
    const created = Math.floor(this.now() / 1000);
    const id = `batch_${randomBytes(12).toString('hex')}`;
    const object: Record<string, unknown> = {
      id,
      object: 'batch',
      endpoint,
      model: typeof lines[0]?.body.model === 'string' ? lines[0].body.model : null,
      errors: null,
      input_file_id: inputFileId,
      completion_window: '24h',
      status: 'validating',
      output_file_id: null,
      error_file_id: null,
      created_at: created,
      in_progress_at: null,
      expires_at: created + 86_400,
      finalizing_at: null,
      completed_at: null,
      failed_at: null,
      expired_at: null,
      cancelling_at: null,
      cancelled_at: null,
      request_counts: { total: 0, completed: 0, failed: 0 },
      metadata: metadata !== null && typeof metadata === 'object' ? metadata : null,
      usage: usageOf({ input: 0, cached: 0, output: 0, reasoning: 0 }),
    };
    const timing = batchTiming(scenario, lines.length);
    const batch: Batch = {
      object,
      lines,
      problems,
      outputs: [],
      errors: [],
      scenario,
      timing,
      headers: req.headers,
      runner: new LineRunner(lines.length, timing, {
        line: (index) => this.processLine(batch, index),
        done: () => {
          this.update(batch, { status: 'finalizing', finalizing_at: this.seconds() });
          batch.runner.after(timing.finalizeMs, () => this.end(batch, 'completed'));
        },
        stopped: (end) => (end === 'expired' ? this.end(batch, 'expired') : this.beginCancel(batch)),
      }),
      usage: { input: 0, cached: 0, output: 0, reasoning: 0 },
    };
    this.keep(batch);
    batch.runner.after(timing.validateMs, () => this.validate(batch));
    sendJson(res, 200, object, record);
  }

  /** Keeps a batch, letting the oldest go when the store is full. */
  private keep(batch: Batch): void {
    if (this.batches.size >= this.maxBatches) {
      const oldest = this.batches.keys().next().value as string;
      this.batches.get(oldest)?.runner.stop();
      this.batches.delete(oldest);
    }
    this.batches.set(batch.object.id as string, batch);
  }

  private seconds(): number {
    return Math.floor(this.now() / 1000);
  }

  private update(batch: Batch, fields: Record<string, unknown>): void {
    batch.object = { ...batch.object, ...fields };
  }

  private validate(batch: Batch): void {
    const problems =
      batch.problems.length > 0
        ? batch.problems
        : batch.timing.end === 'failed'
          ? [
              {
                code: 'token_limit_exceeded',
                message:
                  'Enqueued token limit reached for this model in organization org-FakeOrg0001. Try again once some in_progress batches have been completed.',
                param: null,
                line: null,
              },
            ]
          : [];
    if (problems.length > 0) {
      batch.lines = [];
      this.update(batch, { status: 'failed', failed_at: this.seconds(), errors: { object: 'list', data: problems } });
      return;
    }
    this.update(batch, { status: 'in_progress', in_progress_at: this.seconds(), request_counts: { total: batch.lines.length, completed: 0, failed: 0 } });
    batch.runner.start(0);
  }

  /** Answers one line as its endpoint would, into the output or error file, and bills it at the batch rate. */
  private processLine(batch: Batch, index: number): void {
    const line = batch.lines[index]!;
    const batchId = batch.object.id as string;
    const requestId = `req_${randomBytes(12).toString('hex')}`;
    const model = typeof line.body.model === 'string' ? line.body.model : '';
    const endpoint = ENDPOINTS[line.url]!;
    const base = { id: `batch_req_${randomBytes(12).toString('hex')}`, custom_id: line.customId };
    const lineRecord = {
      id: requestId,
      method: 'POST',
      path: line.url,
      url: line.url,
      headers: batch.headers,
      body: line.body,
      startedAt: this.now(),
      chunksSent: 0,
      closedEarly: false,
      finished: true,
    };
    const counts = batch.object.request_counts as { total: number; completed: number; failed: number };
    if (index < batch.timing.failFirst || model === '') {
      const error =
        model === ''
          ? openAIError('you must provide a model parameter', null, 'missing_model')
          : openAIError('The fake upstream was told to reject this request.', null, 'invalid_value');
      batch.errors.push(JSON.stringify({ ...base, response: { status_code: 400, request_id: requestId, body: error }, error: null }));
      this.recordLine({
        ...lineRecord,
        status: 400,
        billed: { promptTokens: 0, cachedTokens: 0, completionTokens: 0, reasoningTokens: 0, batchId, customId: line.customId },
      });
      this.update(batch, { request_counts: { ...counts, failed: counts.failed + 1 } });
      return;
    }
    const plan = planOpenAIAnswer(endpoint, line.body, model, batch.scenario);
    const { payload, billed } = finishedOpenAIAnswer(endpoint, line.body, model, plan, () => undefined);
    batch.outputs.push(JSON.stringify({ ...base, response: { status_code: 200, request_id: requestId, body: payload }, error: null }));
    this.recordLine({ ...lineRecord, status: 200, billed: { ...billed, batchId, customId: line.customId } });
    batch.usage.input += billed.promptTokens;
    batch.usage.cached += billed.cachedTokens;
    batch.usage.output += billed.completionTokens;
    batch.usage.reasoning += billed.reasoningTokens;
    this.update(batch, { request_counts: { ...counts, completed: counts.completed + 1 }, usage: usageOf(batch.usage) });
  }

  private cancel(batch: Batch, res: ServerResponse, record: RecordedRequest): void {
    const status = batch.object.status;
    if (status === 'validating' || status === 'in_progress') this.beginCancel(batch);
    else if (status !== 'cancelling') {
      return sendJson(res, 400, openAIError(`Cannot cancel a batch with status '${String(status)}'.`, null, 'invalid_value'), record);
    }
    sendJson(res, 200, batch.object, record);
  }

  private beginCancel(batch: Batch): void {
    batch.runner.stop();
    this.update(batch, { status: 'cancelling', cancelling_at: this.seconds() });
    batch.runner.after(batch.timing.finalizeMs, () => this.end(batch, 'cancelled'));
  }

  /** Ends a batch: writes its output and error files (lines not processed go to the error file). */
  private end(batch: Batch, status: 'completed' | 'expired' | 'cancelled'): void {
    const id = batch.object.id as string;
    // Lines an expired batch never ran are in its error file; a cancelled batch's are in neither.
    if (status === 'expired') {
      const error = { code: 'batch_expired', message: 'This request could not be executed before the completion window expired.' };
      for (const line of batch.lines.slice(batch.runner.processed)) {
        batch.errors.push(JSON.stringify({ id: `batch_req_${randomBytes(12).toString('hex')}`, custom_id: line.customId, response: null, error }));
      }
    }
    const fileOf = (lines: string[], kind: string) =>
      lines.length === 0 ? null : this.files.add('batch_output', `${id}_${kind}.jsonl`, Buffer.from(`${lines.join('\n')}\n`)).id;
    const counts = batch.object.request_counts as { total: number; completed: number };
    this.update(batch, {
      status,
      [`${status}_at`]: this.seconds(),
      output_file_id: fileOf(batch.outputs, 'output'),
      error_file_id: fileOf(batch.errors, 'error'),
      request_counts: { total: batch.lines.length, completed: counts.completed, failed: batch.errors.length },
    });
    // The results live in the files now.
    batch.lines = [];
    batch.outputs.length = 0;
    batch.errors.length = 0;
  }

  /** Stops every batch (the server is closing). */
  close(): void {
    for (const batch of this.batches.values()) batch.runner.stop();
  }
}

/** A batch's usage as the API reports it. */
function usageOf(usage: { input: number; cached: number; output: number; reasoning: number }): Record<string, unknown> {
  return {
    input_tokens: usage.input,
    input_tokens_details: { cached_tokens: usage.cached },
    output_tokens: usage.output,
    output_tokens_details: { reasoning_tokens: usage.reasoning },
    total_tokens: usage.input + usage.output,
  };
}
