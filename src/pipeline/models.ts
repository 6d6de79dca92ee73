/**
 * `GET /v1/models` and `GET /v1/models/{model}`: authenticated, passed to the
 * upstream, and filtered to the models the key may use. Not billed.
 */
import type { Context } from 'hono';
import type { AppEnv } from '../app-env.js';
import { toClientHeaders, toUpstreamHeaders } from '../http/headers.js';
import { checkModelAllowed, isModelAllowed } from '../keys/caller.js';
import type { Policy } from '../limits/algorithm/policy.js';
import { authenticateHeaders } from './authenticate.js';
import { clientRequestOf } from '../http/client-request.js';
import type { PipelineDeps } from './deps.js';
import { upstreamPath } from './forward.js';
import { asBody, readAll } from './relay.js';

export async function listModels(c: Context<AppEnv>, deps: Pick<PipelineDeps, 'keys' | 'upstream' | 'now'>): Promise<Response> {
  const requestId = c.get('requestId');
  const client = clientRequestOf(c.req.raw, c.env);
  const caller = authenticateHeaders(client.headers, deps.keys, deps.now());
  const single = c.req.param('model');
  if (single !== undefined) checkModelAllowed(caller.policy, single);
  const response = await deps.upstream.send({
    method: 'GET',
    path: upstreamPath(c.req.url),
    headers: { ...toUpstreamHeaders(client.headers, false), 'x-client-request-id': requestId },
    signal: client.abort.signal,
  });
  let bytes = await readAll(response.body);
  if (single === undefined && caller.policy.models !== undefined && response.status === 200) bytes = filterModelList(bytes, caller.policy);
  const headers = toClientHeaders(response.headers, requestId, false, response.status);
  delete headers['content-length'];
  return new Response(asBody(bytes), { status: response.status, headers });
}

function filterModelList(bytes: Buffer, policy: Policy): Buffer {
  try {
    const list = JSON.parse(bytes.toString('utf8')) as { data?: Array<{ id?: unknown }> };
    if (!Array.isArray(list.data)) return bytes;
    list.data = list.data.filter((model) => isModelAllowed(policy, String(model.id)));
    return Buffer.from(JSON.stringify(list));
  } catch {
    return bytes;
  }
}
