/**
 * The fake's Files API, in memory, as OpenAI serves it for batches:
 * `POST /v1/files` (multipart: `purpose` and `file`), `GET /v1/files`
 * (a list with `after` / `limit` / `order` cursors), `GET /v1/files/{id}`,
 * `GET /v1/files/{id}/content` (the bytes as uploaded) and
 * `DELETE /v1/files/{id}` (`{id, object: "file", deleted: true}`). An id it
 * does not hold is the API's 404. Batches write their output and error files
 * here (purpose `batch_output`).
 *
 * Memory is bounded: at most `maxFiles` files (the oldest goes first), none
 * over `maxFileBytes` (OpenAI's 200 MB by default; an upload over it is the
 * API's 400 `file_too_large`).
 */
import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { sendJson } from './respond.js';
import type { BatchLimits, RecordedRequest } from './types.js';

export interface StoredFile {
  readonly id: string;
  readonly purpose: string;
  readonly filename: string;
  readonly content: Buffer;
  readonly createdAt: number;
}

const PURPOSES = ['assistants', 'batch', 'fine-tune', 'vision', 'user_data', 'evals'];

/** OpenAI's error body. */
export function openAIError(message: string, param: string | null = null, code: string | null = null, type = 'invalid_request_error'): Record<string, unknown> {
  return { error: { message, type, param, code } };
}

/** Whether a request carries a multipart form (an upload): its body is not JSON. */
export function isMultipart(headers: IncomingMessage['headers']): boolean {
  return (headers['content-type'] ?? '').toLowerCase().startsWith('multipart/form-data');
}

/** The fields of a multipart form: text fields and the one file part, or undefined when it cannot be read. */
export function parseMultipart(raw: Buffer, contentType: string): { fields: Map<string, string>; file?: { filename: string; content: Buffer } } | undefined {
  const boundary = /boundary=(?:"([^"]+)"|([^;]+))/i.exec(contentType);
  if (boundary === null) return undefined;
  const delimiter = Buffer.from(`--${boundary[1] ?? boundary[2]!.trim()}`);
  const fields = new Map<string, string>();
  let file: { filename: string; content: Buffer } | undefined;
  let at = raw.indexOf(delimiter);
  if (at < 0) return undefined;
  while (at >= 0) {
    const start = at + delimiter.length;
    if (raw.subarray(start, start + 2).toString() === '--') break;
    const next = raw.indexOf(delimiter, start);
    if (next < 0) return undefined;
    const part = raw.subarray(start + 2, next - 2); // after CRLF, before CRLF
    const split = part.indexOf('\r\n\r\n');
    if (split < 0) return undefined;
    const head = part.subarray(0, split).toString('utf8');
    const content = part.subarray(split + 4);
    const name = /name="([^"]*)"/i.exec(head)?.[1];
    const filename = /filename="([^"]*)"/i.exec(head)?.[1];
    if (name === 'file' && filename !== undefined) file = { filename, content: Buffer.from(content) };
    else if (name !== undefined) fields.set(name, content.toString('utf8'));
    at = next;
  }
  return file === undefined ? { fields } : { fields, file };
}

/**
 * One page of a list, newest first unless `order=asc`, after the `after` cursor, at most `limit`
 * (batches: default 20, at most 100; files: default and most 10,000, as the API pages them).
 */
export function listPage(items: readonly Record<string, unknown>[], query: URLSearchParams, defaultLimit = 20, maxLimit = 100): Record<string, unknown> {
  const ordered = query.get('order') === 'asc' ? [...items] : [...items].reverse();
  const after = query.get('after');
  const start = after === null ? 0 : ordered.findIndex((item) => item.id === after) + 1;
  const limit = Math.min(maxLimit, Math.max(1, Number(query.get('limit') ?? defaultLimit) || defaultLimit));
  const data = ordered.slice(start, start + limit);
  return { object: 'list', data, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null, has_more: start + limit < ordered.length };
}

export class FileStore {
  private readonly files = new Map<string, StoredFile>();
  readonly maxFileBytes: number;
  private readonly maxFiles: number;

  constructor(
    limits: BatchLimits = {},
    private readonly now: () => number = Date.now,
  ) {
    this.maxFileBytes = limits.maxFileBytes ?? 200 * 1024 * 1024;
    this.maxFiles = limits.maxFiles ?? 1000;
  }

  /** Keeps a file (the oldest goes when the store is full). */
  add(purpose: string, filename: string, content: Buffer): StoredFile {
    if (this.files.size >= this.maxFiles) this.files.delete(this.files.keys().next().value as string);
    const file = { id: `file-${randomBytes(12).toString('hex')}`, purpose, filename, content, createdAt: Math.floor(this.now() / 1000) };
    this.files.set(file.id, file);
    return file;
  }

  get(id: string): StoredFile | undefined {
    return this.files.get(id);
  }

  /** Answers a Files API call; false when the path is not one. */
  handle(req: IncomingMessage, path: string, raw: Buffer, res: ServerResponse, record: RecordedRequest): boolean {
    const method = req.method ?? 'GET';
    if (path === '/v1/files' && method === 'POST') {
      this.upload(req, raw, res, record);
      return true;
    }
    if (path === '/v1/files' && method === 'GET') {
      const query = new URL(req.url ?? '/', 'http://fake').searchParams;
      const purpose = query.get('purpose');
      const files = [...this.files.values()].filter((file) => purpose === null || file.purpose === purpose).map(fileObject);
      sendJson(res, 200, listPage(files, query, 10_000, 10_000), record);
      return true;
    }
    const match = /^\/v1\/files\/([^/]+)(\/content)?$/.exec(path);
    if (match === null || !['GET', 'DELETE'].includes(method) || (method === 'DELETE' && match[2] !== undefined)) return false;
    const id = decodeURIComponent(match[1]!);
    const file = this.files.get(id);
    if (file === undefined) {
      sendJson(res, 404, openAIError(`No such File object: ${id}`, 'id'), record);
    } else if (method === 'DELETE') {
      this.files.delete(id);
      sendJson(res, 200, { id, object: 'file', deleted: true }, record);
    } else if (match[2] === undefined) {
      sendJson(res, 200, fileObject(file), record);
    } else {
      record.status = 200;
      record.finished = true;
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': file.content.length, 'x-request-id': record.id });
      res.end(file.content);
    }
    return true;
  }

  private upload(req: IncomingMessage, raw: Buffer, res: ServerResponse, record: RecordedRequest): void {
    const form = isMultipart(req.headers) ? parseMultipart(raw, String(req.headers['content-type'])) : undefined;
    if (form === undefined) return sendJson(res, 400, openAIError('The request must be multipart/form-data with `purpose` and `file`.'), record);
    const purpose = form.fields.get('purpose');
    if (purpose === undefined || !PURPOSES.includes(purpose)) {
      return sendJson(res, 400, openAIError(`'${purpose ?? ''}' is not one of ${PURPOSES.map((p) => `'${p}'`).join(', ')} - 'purpose'`, 'purpose'), record);
    }
    if (form.file === undefined) return sendJson(res, 400, openAIError("Missing required parameter: 'file'.", 'file'), record);
    if (form.file.content.length > this.maxFileBytes) {
      return sendJson(res, 400, openAIError(`File is too large: at most ${this.maxFileBytes} bytes.`, 'file', 'file_too_large'), record);
    }
    if (purpose === 'batch' && !form.file.filename.endsWith('.jsonl')) {
      return sendJson(res, 400, openAIError('Invalid file format for Batch API. Must be .jsonl', 'file'), record);
    }
    sendJson(res, 200, fileObject(this.add(purpose, form.file.filename, form.file.content)), record);
  }
}

/** A file as the API describes it. */
function fileObject(file: StoredFile): Record<string, unknown> {
  return {
    id: file.id,
    object: 'file',
    bytes: file.content.length,
    created_at: file.createdAt,
    filename: file.filename,
    purpose: file.purpose,
    status: 'processed',
    status_details: null,
    expires_at: null,
  };
}
