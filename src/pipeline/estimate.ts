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
import { readRequestFacts, type RequestFacts } from '../upstreams/request-facts.js';
import { chargeRefusal } from './charge-refusal.js';
import type { EstimatedRequest, RequestContext } from './context.js';
import type { PipelineDeps } from './deps.js';
import { AdmissionRefused } from './refusals.js';
import { settleRefused } from './settle.js';

/** Stage 2: the request with its body, facts and estimate, or a 4xx (recorded). */
export async function estimate(request: RequestContext, deps: PipelineDeps): Promise<EstimatedRequest> {
  let facts: RequestFacts | undefined;
  try {
    const bytes = await request.client.readBody(deps.maxBodyBytes);
    const body = parseJsonObject(bytes);
    facts = readRequestFacts(request.endpoint, body);
    checkModelAllowed(request.caller.policy, facts.model);
    const estimated: Estimate = await estimateRequest(request.endpoint, body, deps.estimate);
    return { ...request, bytes, body, facts, estimate: estimated };
  } catch (error) {
    // Refusals count against the key's request limits too (charge-refusal.ts).
    const refusal = await chargeRefusal(request, asRefusal(error), deps);
    const limited = refusal instanceof AdmissionRefused;
    settleRefused(
      request,
      refusal,
      {
        model: facts?.model ?? modelOf(error),
        stream: facts?.stream ?? false,
        status: limited || refusal.code === 'model_not_allowed' ? 'rejected' : 'invalid_request',
        reason: limited ? refusal.reason : 'other',
      },
      deps,
    );
    throw refusal;
  }
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
