/**
 * The ledger row of a request Tollgate does not bill (`GET /v1/models`,
 * Anthropic's `count_tokens`): still a request of its key, recorded before it
 * is forwarded, settled once at zero cost, or refused as a compact row.
 */
import { TollgateError } from '../domain/errors.js';
import type { Caller } from '../domain/caller.js';
import type { FinalStatus, LedgerWriter, RejectionReason } from '../storage/ledger.js';

export interface FreeRequestRow {
  /** Refuses the request: its compact row (status from the refusal's HTTP status), then the throw. */
  refuse(refusal: TollgateError, reason: RejectionReason, model: string): never;
  /** Commits the pending row; a 503 `ledger_unavailable` when it cannot, so nothing goes upstream unrecorded. */
  record(model: string): Promise<void>;
  /** Settles the row at zero cost. */
  settle(status: number | null, outcome: FinalStatus, upstreamRequestId?: string): void;
}

export function freeRequestRow(
  deps: { readonly ledger: LedgerWriter; readonly now: () => number },
  caller: Caller,
  requestId: string,
  startedAt: number,
  endpoint: string,
): FreeRequestRow {
  const owner = { requestId, keyId: caller.key.id, tenantId: caller.key.tenantId, createdAt: startedAt, endpoint, stream: false } as const;
  const nothing = { estPromptTokens: 0, estCompletionTokens: 0, estCostMicros: 0 } as const;
  return {
    refuse(refusal, reason, model) {
      deps.ledger.reject({
        ...owner,
        ...nothing,
        model,
        status: refusal.status === 400 ? 'invalid_request' : 'rejected',
        httpStatus: refusal.status,
        errorCode: refusal.code,
        reason,
      });
      throw refusal;
    },
    async record(model) {
      try {
        await deps.ledger.begin({ ...owner, ...nothing, model, priceKnown: true });
      } catch (error) {
        throw new TollgateError('ledger_unavailable', 'The request could not be recorded, so it was not sent. Try again shortly.', { cause: error });
      }
    },
    settle(status, outcome, upstreamRequestId) {
      const completedAt = deps.now();
      deps.ledger.complete({
        requestId,
        completedAt,
        status: outcome,
        httpStatus: status,
        promptTokens: 0,
        cachedTokens: 0,
        completionTokens: 0,
        reasoningTokens: 0,
        costMicros: 0,
        usageSource: 'none',
        latencyMs: completedAt - startedAt,
        ttftMs: null,
        upstreamRequestId: upstreamRequestId ?? null,
        errorCode: outcome === 'ok' ? null : outcome,
      });
    },
  };
}
