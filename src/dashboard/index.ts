/**
 * The per-key spend dashboard: server-rendered pages under /dashboard and the
 * JSON they poll under /admin/api/dashboard. See routes.tsx for access,
 * reads.ts for how it stays fast, overview.tsx, keys-page.tsx and key-view.ts
 * for what each page shows.
 */
export { createDashboardApiRoutes, createDashboardRoutes } from './routes.js';
export { createSessionValue, checkSessionValue, resolveSessionActor, SESSION_COOKIE, SESSION_TTL_MS } from './session.js';
export type { LimitSnapshot } from './view-context.js';
export type { OverviewView } from './overview.js';
export type { KeysView } from './keys-page.js';
export type { KeyPageView } from './key-view.js';
