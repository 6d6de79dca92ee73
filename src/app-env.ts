/**
 * The Hono environment every route shares: the request id set first by the
 * app, and the Node objects behind a request when served by
 * @hono/node-server. Its own module so routes never import the app that
 * mounts them.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Actor } from './domain/admins.js';

/** The Node request and response behind a Hono context (present when served by @hono/node-server). */
export interface NodeBindings {
  readonly incoming: IncomingMessage;
  readonly outgoing: ServerResponse;
}

export interface AppEnv {
  /** `actor`: who an admin API or dashboard request acts as, once its token or session is checked (src/admin/routes.ts, src/dashboard/routes.tsx). */
  Variables: { requestId: string; actor?: Actor };
  /** Present when served by @hono/node-server; absent under `app.request`. */
  Bindings: Partial<NodeBindings> | undefined;
}
