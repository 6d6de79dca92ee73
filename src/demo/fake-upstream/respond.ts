/** The fake upstream's plain answers: JSON, OpenAI-shaped errors, embeddings. */
import type { ServerResponse } from 'node:http';
import { embeddingsPayload } from './openai-answer.js';
import type { RecordedRequest } from './types.js';

export const ERROR_TYPES: Record<number, { type: string; code: string; message: string }> = {
  400: { type: 'invalid_request_error', code: 'invalid_value', message: 'The fake upstream was told to reject this request.' },
  401: { type: 'invalid_request_error', code: 'invalid_api_key', message: 'Incorrect API key provided.' },
  403: { type: 'invalid_request_error', code: 'unsupported_country_region_territory', message: 'Forbidden.' },
  404: { type: 'invalid_request_error', code: 'model_not_found', message: 'The model does not exist.' },
  // As the API words it, naming the provider account (Tollgate masks it before a tenant sees it).
  429: {
    type: 'requests',
    code: 'rate_limit_exceeded',
    message: 'Rate limit reached for requests in organization org-FakeOrg0001 on requests per min (RPM): Limit 10000, Used 10000, Requested 1.',
  },
  500: { type: 'server_error', code: 'server_error', message: 'The server had an error while processing your request.' },
  503: { type: 'server_error', code: 'service_unavailable', message: 'The engine is currently overloaded.' },
};

/** Sends a JSON answer; one whose client already left was still finished (and billed) by the caller. */
export function sendJson(res: ServerResponse, status: number, payload: unknown, record: RecordedRequest | undefined): void {
  if (record) {
    record.status = status;
    record.finished = true;
  }
  if (res.destroyed) return;
  const text = JSON.stringify(payload);
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
    'x-request-id': record?.id ?? 'req_fake',
    'openai-processing-ms': '5',
    'openai-version': '2020-10-01',
    'openai-organization': 'fake-org-do-not-leak',
    'x-ratelimit-limit-requests': '10000',
    'x-ratelimit-remaining-requests': '9999',
  });
  res.end(text);
}

export function sendError(
  res: ServerResponse,
  status: number,
  error: { type: string; code: string; message: string },
  record: RecordedRequest | undefined,
  retryAfter?: string,
): void {
  if (res.destroyed) return;
  const text = JSON.stringify({ error: { message: error.message, type: error.type, param: null, code: error.code } });
  if (record) {
    record.status = status;
    record.finished = true;
  }
  const headers: Record<string, string | number> = {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
    'x-request-id': record?.id ?? 'req_fake',
  };
  if (status === 429) {
    headers['retry-after'] = retryAfter ?? '1';
    headers['x-ratelimit-remaining-requests'] = '0';
  } else if (retryAfter !== undefined) {
    headers['retry-after'] = retryAfter;
  }
  res.writeHead(status, headers);
  res.end(text);
}

export function sendEmbeddings(res: ServerResponse, body: Record<string, unknown>, model: string, promptTokens: number, record: RecordedRequest): void {
  record.billed = { promptTokens, cachedTokens: 0, completionTokens: 0, reasoningTokens: 0 };
  sendJson(res, 200, embeddingsPayload(body, model, promptTokens), record);
}
