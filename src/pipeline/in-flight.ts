/**
 * Admission with a cap on requests in flight (limits/in-flight.ts): the
 * request takes a slot of its key and tenant before {@link admit}, and gives
 * it back when it is settled (or refused) — not when its client leaves: a
 * request read on to its usage keeps its slot until then, so a client that
 * hangs up cannot start the next one early. Waiting for a slot happens before
 * any bucket or budget is taken; a request that waited too long is refused
 * with a 429 and filed like any rate-limit refusal.
 */
import { TollgateError } from '../domain/errors.js';
import { admit } from './admit.js';
import type { AdmittedRequest, EstimatedRequest } from './context.js';
import type { PipelineDeps } from './deps.js';
import { settleRefused } from './settle.js';

export async function admitInFlight(request: EstimatedRequest, deps: PipelineDeps): Promise<AdmittedRequest> {
  if (deps.inFlight === undefined) return admit(request, deps);
  const { caller, facts, estimate } = request;
  let release: () => void;
  try {
    release = await deps.inFlight.acquire(
      { keyId: caller.key.id, keyMax: caller.policy.maxInFlight, tenantId: caller.key.tenantId, tenantMax: caller.tenantPolicy?.maxInFlight },
      request.client.left,
    );
  } catch (error) {
    if (error instanceof TollgateError) {
      settleRefused(
        request,
        error,
        { model: facts.model, stream: facts.stream, status: 'rejected', reason: error.code === 'rate_limit_exceeded' ? 'rate_limit' : 'other', estimate },
        deps,
      );
    }
    throw error;
  }
  try {
    // Settled or given back exactly once either way: the slot follows.
    return await admit(request, deps, release);
  } catch (error) {
    release();
    throw error;
  }
}
