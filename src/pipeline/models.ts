/**
 * `GET /v1/models` and `GET /v1/models/{model}`: authenticated, passed to the
 * upstream, and filtered to the models the key may use. Not billed, but a
 * request of its key like any other: it takes from the key's,
 * tenant's and global `requests` limits (429 when they are used up) and is
 * one ledger row, recorded before it is forwarded.
 */
import type { Context } from 'hono';
import type { AppEnv } from '../app-env.js';
import { TollgateError } from '../domain/errors.js';
import { modelNameProblem } from '../http/client-strings.js';
import { toClientHeaders, toUpstreamHeaders, withRequestIds } from '../http/headers.js';
import { checkModelAllowed, isModelAllowed } from '../domain/caller.js';
import type { Policy } from '../domain/policy.js';
import { toUpstreamError } from '../upstreams/pool.js';
import { redactProviderAccount } from '../upstreams/redact.js';
import { listRoutedModels } from '../upstreams/model-list.js';
import { authenticateHeaders } from './authenticate.js';
import { clientRequestOf } from '../http/client-request.js';
import { chargeRefusal, chargeRequestLimits } from './charge-refusal.js';
import type { PipelineDeps } from './deps.js';
import { freeRequestRow } from './free-request.js';
import { upstreamPath } from './forward.js';
import { AdmissionRefused } from './refusals.js';
import { asBody } from './relay.js';

type ModelsDeps = Pick<PipelineDeps, 'keys' | 'upstream' | 'now' | 'limiter' | 'globalLimits' | 'ledger'> & Pick<Partial<PipelineDeps>, 'router'>;

/** The ledger's name for these requests (they name no model of their own when listing). */
const ENDPOINT = 'models';
const LIST = '(list)';

export async function listModels(c: Context<AppEnv>, deps: ModelsDeps): Promise<Response> {
  const requestId = c.get('requestId');
  const client = clientRequestOf(c.req.raw, c.env);
  const caller = authenticateHeaders(client.headers, deps.keys, deps.now());
  const startedAt = deps.now();
  const single = c.req.param('model');
  const request = { caller, client, url: c.req.url };
  const row = freeRequestRow(deps, caller, requestId, startedAt, ENDPOINT);
  const refuse = row.refuse;

  if (single !== undefined) {
    try {
      const problem = modelNameProblem(single);
      if (problem !== undefined) throw new TollgateError('invalid_value', problem, { param: 'model' });
      checkModelAllowed(caller.policy, single);
    } catch (error) {
      if (!(error instanceof TollgateError)) throw error;
      const charged = await chargeRefusal(request, error, deps);
      return refuse(charged, charged instanceof AdmissionRefused ? charged.reason : 'other', error.code === 'invalid_value' ? '(invalid)' : single);
    }
  }
  const model = single ?? LIST;
  const limited = await chargeRequestLimits(request, deps);
  if (limited !== undefined) return refuse(limited, limited.reason, model);

  await row.record(model);
  const { settle } = row;
  const router = deps.router;
  if (router !== undefined && !router.shorthand) {
    // Several upstreams: the listing is Tollgate's own, built from theirs and the config.
    const routed = single === undefined ? undefined : router.route(single);
    const list =
      single === undefined
        ? await listRoutedModels(router, { headers: withRequestIds({}, requestId), signal: client.abort.signal, owner: caller.key.id }, (id) =>
            isModelAllowed(caller.policy, id),
          )
        : [];
    const served = single === undefined || routed !== undefined;
    settle(served ? 200 : 404, client.left.aborted ? 'client_aborted' : 'ok');
    if (!served) {
      throw new TollgateError('model_not_found', `The model "${single}" is not served by any upstream of this proxy.`, { param: 'model' });
    }
    const payload =
      single === undefined ? { object: 'list', data: list } : { id: single, object: 'model', created: 0, owned_by: routed!.candidates[0]!.upstream.name };
    return c.json(payload, 200, { 'x-request-id': requestId });
  }
  let bytes: Buffer;
  let response;
  try {
    response = await deps.upstream.send({
      method: 'GET',
      path: upstreamPath(c.req.url),
      headers: withRequestIds(toUpstreamHeaders(client.headers, false), requestId),
      signal: client.abort.signal,
      owner: caller.key.id,
    });
    bytes = await response.whole();
  } catch (error) {
    settle(null, client.left.aborted ? 'client_aborted' : 'upstream_interrupted');
    throw toUpstreamError(error);
  }
  const upstreamId = response.headers['x-request-id'];
  settle(response.status, response.status < 400 ? 'ok' : 'upstream_error', typeof upstreamId === 'string' ? upstreamId : undefined);
  if (single === undefined && caller.policy.models !== undefined && response.status === 200) bytes = filterModelList(bytes, caller.policy);
  if (response.status >= 400) bytes = redactProviderAccount(bytes);
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
