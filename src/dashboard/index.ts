/**
 * The per-key spend dashboard: server-rendered pages under /dashboard and the
 * JSON they poll under /admin/api/dashboard. See routes.tsx for access,
 * reads.ts for how it stays fast, views.ts for what each page shows.
 */
export { createDashboardApiRoutes, createDashboardRoutes, dashboardReadsFor, type DashboardDeps } from './routes.js';
export { isDashboardSession, createSessionValue, checkSessionValue, SESSION_COOKIE, SESSION_TTL_MS, type SessionCheck } from './session.js';
export type { LimitSnapshot, LimitSnapshotEntry, OverviewView, KeysView, KeyPageView } from './views.js';
