/**
 * Stage 2, estimate: read the body (with its size limit), check the fields
 * the proxy itself relies on and the key's model allow-list, and price the
 * request: prompt tokens counted with the model's tokenizer, the completion
 * reserved, both priced. A request refused here is filed as a refusal.
 */
import { TollgateError, type ErrorCode } from '../errors.js';
import { estimateRequest, EstimateInputError, type Estimate } from '../estimate/index.js';
import { parseJsonObject } from '../http/body.js';
import { checkModelAllowed } from '../keys/caller.js';
import { usdToMicros } from '../money.js';
import { readRequestFacts, type RequestFacts } from '../upstreams/request-facts.js';
import type { EstimatedRequest, RequestContext } from './context.js';
import type { PipelineDeps } from './deps.js';
import { settleRefused } from './settle.js';

/** Stage 2: the request with its body, facts and estimate, or a 4xx (recorded). */
export async function estimate(request: RequestContext, deps: PipelineDeps): Promise<EstimatedRequest> {
  let facts: RequestFacts | undefined;
  try {
    const bytes = await request.client.readBody(deps.maxBodyBytes);
    const body = parseJsonObject(bytes);
    facts = readRequestFacts(request.endpoint, body);
    checkModelAllowed(request.caller.policy, facts.model);
    const maxCostMicroUsd = readCostCap(request.client.headers[COST_CAP_HEADER]);
    const estimated: Estimate = await estimateRequest(request.endpoint, body, deps.estimate);
    return { ...request, bytes, body, facts, estimate: estimated, maxCostMicroUsd };
  } catch (error) {
    const refusal = asRefusal(error);
    settleRefused(
      request,
      refusal,
      {
        model: facts?.model ?? modelOf(error),
        stream: facts?.stream ?? false,
        status: refusal.code === 'model_not_allowed' ? 'rejected' : 'invalid_request',
        reason: 'other',
      },
      deps,
    );
    throw refusal;
  }
}

const COST_CAP_HEADER = 'x-tollgate-max-cost-usd';

/** The client's own cap on what this request may cost (`x-tollgate-max-cost-usd: 0.25`), in µUSD. */
function readCostCap(value: string | string[] | undefined): number | undefined {
  if (value === undefined) return undefined;
  const micros = typeof value === 'string' ? usdToMicros(value) : null;
  if (micros === null || micros <= 0 || !Number.isSafeInteger(micros)) {
    throw new TollgateError('invalid_value', `The ${COST_CAP_HEADER} header must be a positive amount of USD with at most 6 decimals, e.g. 0.25.`, {
      param: COST_CAP_HEADER,
    });
  }
  return micros;
}

/** A refusal before forwarding, as the TollgateError the client gets. */
function asRefusal(error: unknown): TollgateError {
  if (error instanceof TollgateError) return error;
  if (error instanceof EstimateInputError) {
    const code: ErrorCode =
      error.code === 'context_length_exceeded' ? 'context_length_exceeded' : error.code === 'invalid_type' ? 'invalid_type' : 'invalid_value';
    return new TollgateError(code, error.message, { param: error.param });
  }
  return new TollgateError('internal_error', 'Tollgate could not read this request.', { cause: error });
}

function modelOf(error: unknown): string {
  return error instanceof TollgateError && error.param === 'model' ? '(invalid)' : '(unknown)';
}
