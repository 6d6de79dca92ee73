/** The admin operations on one backend's stores, as the CLI opens them without --url (src/cli/context.ts). */
import { storeAdminOps, type ActingAdminOps, type AdminStores } from '../../src/admin/ops.js';
import type { SharedBackend } from '../../src/storage/backend.js';
import { openAdmins, openAuditReads, openDashboardTokens, openKeyStore, openSpendReads } from '../../src/storage/index.js';

function adminStoresOf(backend: SharedBackend, now?: () => number): AdminStores {
  return {
    keys: openKeyStore(backend, now === undefined ? {} : { now }),
    admins: openAdmins(backend),
    audit: openAuditReads(backend),
    tenantTokens: openDashboardTokens(backend),
  };
}

export function backendAdminOps(backend: SharedBackend, options: { onChange?: () => unknown; now?: () => number } = {}): ActingAdminOps {
  const spend = openSpendReads(backend);
  return storeAdminOps(adminStoresOf(backend, options.now), {
    readSpend: (query, at) => spend.spend(query, at),
    ...(options.onChange === undefined ? {} : { onChange: options.onChange }),
    ...(options.now === undefined ? {} : { now: options.now }),
  });
}
