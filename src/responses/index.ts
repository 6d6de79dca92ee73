/**
 * Stored and background Responses: which key owns which response
 * (store.ts), the lifecycle routes (routes.ts) and the poller that settles
 * background jobs (poller.ts), put together for the request path
 * ({@link ResponsesHooks}) by the composition root.
 *
 * - Every stored response (`store` not false) a POST /v1/responses creates
 *   is remembered for its key before the client sees its id; once settled,
 *   with what its usage says continuing it bills, and its output items.
 * - A request may refer only to its key's own responses and items
 *   (src/pipeline/ownership.ts, called by the estimate stage).
 * - A `background: true` response whose answer carries no usage — the
 *   queued JSON answer, or a stream that ended early (the client left, the
 *   upstream broke) — keeps its reservation and is settled by the poller.
 */
import type { TollgateDatabase } from '../storage/sqlite/open.js';
import type { Backend } from '../storage/backend.js';
import { dialectOf } from '../dialects/index.js';
import type { PriceTable } from '../estimate/prices.js';
import type { LedgerWriter } from '../storage/ledger.js';
import type { Logger } from '../logger.js';
import type { ResponsesHooks } from '../pipeline/deps.js';
import type { RequestEvents } from '../pipeline/finished.js';
import { settleForwarded } from '../pipeline/settle.js';
import type { Upstream } from '../upstreams/pool.js';
import { BackgroundPoller, type PollSettings } from './poller.js';
import { mountLifecycleRoutes } from './routes.js';
import { openResponseStore } from '../storage/index.js';

export type { PollSettings } from './poller.js';

export interface BackgroundResponses {
  readonly hooks: ResponsesHooks;
  readonly poller: BackgroundPoller;
  /** Takes over unsettled jobs nobody polls, and keeps doing so. */
  start(): void;
  /** Stops polling and releases this process's jobs for the next start. */
  close(): void;
}

export function createBackgroundResponses(deps: {
  readonly database: TollgateDatabase;
  readonly upstream: Upstream;
  readonly ledger: LedgerWriter;
  readonly events: RequestEvents;
  readonly prices: PriceTable;
  readonly now: () => number;
  readonly logger: Logger;
  readonly settings: PollSettings;
  /** Where responses are stored: on a replica, who owns one is shared by every node (src/storage/responses.ts). */
  readonly backend: Backend;
}): BackgroundResponses {
  const store = openResponseStore(deps.backend, {
    // The answers still reach their clients; only looking them up through Tollgate waits for the retry.
    onError: (error) => deps.logger.error({ err: error }, 'stored responses could not be remembered; retrying'),
  });
  const poller = new BackgroundPoller({ ...deps, store });
  const isBackground = (body: Record<string, unknown>): boolean => body.background === true;
  const hooks: ResponsesHooks = {
    stored: store,
    created(request, responseId) {
      if (request.body.store === false) return;
      const background = isBackground(request.body);
      store.remember({
        id: responseId,
        keyId: request.caller.key.id,
        requestId: request.requestId,
        createdAt: request.startedAt,
        background,
        claimedUntil: background ? poller.hold(responseId) : 0,
      });
    },
    deferSettlement(request, ending) {
      const { responseId } = ending;
      if (dialectOf(request.endpoint).storedResponses === undefined || !isBackground(request.body)) return false;
      if (responseId === undefined) {
        if (!ending.accepted || ending.usage !== undefined || ending.status === null) return false;
        // Accepted, but its id never arrived (the stream ended before its first event): the job
        // may run on upstream where nobody can poll it, so it is billed its reservation, never under.
        const { estimate } = request;
        const reserved = { promptTokens: estimate.promptTokens, cachedTokens: 0, completionTokens: estimate.completionTokensReserved, reasoningTokens: 0 };
        deps.logger.warn({ requestId: request.requestId }, 'a background response ended before its id arrived; settled at its reservation');
        settleForwarded(request, { ...ending, usage: reserved, errorCode: 'background_response_unknown' }, deps);
        return true;
      }
      if (ending.usage !== undefined || !ending.accepted) {
        // Its usage came with the answer (or nothing ran): settled now, nobody polls it.
        poller.settledDirectly(responseId);
        return false;
      }
      poller.trackLive(request, ending, responseId);
      return true;
    },
    settled(request, ending) {
      const { responseId, usage } = ending;
      if (dialectOf(request.endpoint).storedResponses === undefined || responseId === undefined || request.body.store === false) return;
      // Only a reported usage says what continuing the response bills; otherwise it stays unknown (reserved at the bound).
      store.noteAnswer(responseId, {
        billedTokens: usage === undefined ? undefined : usage.promptTokens + usage.completionTokens,
        itemIds: ending.outputItemIds,
      });
    },
    mount(routes, pipeline) {
      mountLifecycleRoutes(routes, pipeline, { store, poller });
    },
  };
  return {
    hooks,
    poller,
    start: () => poller.start(),
    close: () => {
      // On disk first: releasing a claim needs the row.
      if (!store.close()) deps.logger.error('stored responses could not be written at shutdown');
      poller.close();
    },
  };
}
