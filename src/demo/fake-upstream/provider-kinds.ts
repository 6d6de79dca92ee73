/**
 * What makes the fake upstream behave like one provider or another:
 * how it checks the key, which URLs it answers, and what its usage adds.
 *
 * - `openai` (default): `Authorization: Bearer <key>`, paths below `/v1`.
 * - `azure`: Azure OpenAI's `api-key: <key>` header; the v1 API below
 *   `/openai/v1/…`, and deployment URLs
 *   `/openai/deployments/{deployment}/chat/completions?api-version=…` whose
 *   `api-version` must be the one the fake was given (as Azure refuses an
 *   unknown one) and whose deployment stands for the model.
 * - `openrouter`: Bearer auth, and `usage.cost` (USD) in every usage block,
 *   priced at the fake's own `costPer1M`, as OpenRouter reports what it bills.
 */
import type { IncomingMessage } from 'node:http';
import type { FakeUpstreamOptions } from './types.js';

interface FakeTarget {
  /** The OpenAI path the request stands for (`/v1/chat/completions`). */
  readonly path: string;
  /** Azure deployment URLs: the deployment named in the path (it replaces the body's model). */
  readonly deployment?: string;
}

type TargetResult = { ok: true; target: FakeTarget } | { ok: false; status: number; code: string; message: string };

export interface FakeKind {
  authorized(req: IncomingMessage): boolean;
  target(req: IncomingMessage): TargetResult;
  /** USD the fake bills for this usage (openrouter), else undefined. */
  cost(promptTokens: number, completionTokens: number): number | undefined;
}

export function fakeKind(options: FakeUpstreamOptions): FakeKind {
  const kind = options.kind ?? 'openai';
  return {
    authorized(req) {
      if (options.apiKey === undefined) return true;
      return kind === 'azure' ? req.headers['api-key'] === options.apiKey : req.headers.authorization === `Bearer ${options.apiKey}`;
    },
    target(req) {
      const url = new URL(req.url ?? '/', 'http://fake');
      if (kind !== 'azure') return { ok: true, target: { path: url.pathname } };
      if (url.pathname.startsWith('/openai/v1/')) return { ok: true, target: { path: url.pathname.slice('/openai'.length) } };
      const deployment = /^\/openai\/deployments\/([^/]+)(\/.+)$/.exec(url.pathname);
      if (deployment === null) return { ok: false, status: 404, code: '404', message: 'Resource not found' };
      if (url.searchParams.get('api-version') !== (options.apiVersion ?? '2024-10-21')) {
        return { ok: false, status: 404, code: '404', message: 'Resource not found (api-version missing or unsupported)' };
      }
      return { ok: true, target: { path: `/v1${deployment[2]!}`, deployment: decodeURIComponent(deployment[1]!) } };
    },
    cost(promptTokens, completionTokens) {
      if (kind !== 'openrouter') return undefined;
      const price = options.costPer1M ?? { input: 1, output: 2 };
      return (promptTokens * price.input + completionTokens * price.output) / 1_000_000;
    },
  };
}
