/** @jsxRuntime automatic @jsxImportSource hono/jsx */
/**
 * What an operator who may write sees besides the read-only pages: the keys
 * table's toolbar, a key's buttons and the notice after a change, and the
 * tenants page (list, create, edit). A session that may not write (a
 * tenant's, a viewer's) gets none of these.
 */
import type { FC } from 'hono/jsx';
import type { KeyView, TenantView } from '../domain/keys.js';
import { describeBudget, describeLimits } from '../domain/policy-options.js';
import { activePauses } from '../domain/owner-pauses.js';
import { ActionButton, type Writer } from './edit-forms.js';
import { Layout } from './layout.js';

/** The notices a redirect after a write may ask for (`?done=`): fixed texts, nothing from the URL is shown. */
const DONE_TEXT: Readonly<Record<string, string>> = {
  saved: 'Saved. The proxy applies it within a second.',
  revoked: 'Revoked. Its requests are refused within a second.',
  resumed: 'Resumed. Its requests pass again within a second.',
  suspended: 'Suspended. Its requests are refused within a second, until you unsuspend it.',
  unsuspended: 'Unsuspended. Its requests pass again within a second.',
  created: 'Created.',
};

/** The notice of `?done=…`, when it names one. */
export function doneText(done: string | undefined): string | undefined {
  return done === undefined ? undefined : DONE_TEXT[done];
}

/** A notice after a write, with the sentences saying what it means. */
export const DoneNotice: FC<{ text: string | undefined; sentences?: readonly string[] }> = ({ text, sentences }) =>
  text === undefined ? null : (
    <div class="notice info" role="status" data-done="">
      <p>{text}</p>
      {(sentences ?? []).map((sentence) => (
        <p class="sentence">{sentence}</p>
      ))}
    </div>
  );

/** Above the keys table: make a key (an operator), the tenants, the audit trail. */
export const KeysToolbar: FC<{ canWrite: boolean }> = ({ canWrite }) => (
  <p class="toolbar">
    {canWrite ? (
      <a class="button primary" href="/dashboard/new-key">
        New key
      </a>
    ) : null}
    <a class="button" href="/dashboard/tenants">
      Tenants
    </a>
    <a class="button" href="/dashboard/audit">
      Audit trail
    </a>
  </p>
);

/**
 * A key's buttons: edit, rotate, suspend (or unsuspend while an operator suspends it), revoke, and
 * resume while the runaway stop pauses it (or part of it): two different stops (docs/admins.md).
 */
export const KeyActions: FC<{ writer: Writer; keyView: KeyView }> = ({ writer, keyView: key }) => {
  if (key.status === 'revoked') return null;
  const base = `/dashboard/keys/${encodeURIComponent(key.id)}`;
  const paused = key.throttle !== undefined || activePauses(key.pauses).length > 0;
  return (
    <div class="toolbar" data-actions="">
      <a class="button" href={`${base}/edit`}>
        Edit limits and budgets
      </a>
      <ActionButton writer={writer} action={`${base}/rotate`} label="Rotate secret" confirm={`Give ${key.name} a new secret? The old one stops working.`} />
      {paused ? <ActionButton writer={writer} action={`${base}/resume`} label="Resume" /> : null}
      {key.suspended !== undefined ? (
        <ActionButton writer={writer} action={`${base}/unsuspend`} label="Unsuspend" />
      ) : key.status === 'active' ? (
        <ActionButton
          writer={writer}
          action={`${base}/suspend`}
          label="Suspend"
          confirm={`Suspend ${key.name}? Its requests are refused within a second, until you unsuspend it.`}
        />
      ) : null}
      <ActionButton
        writer={writer}
        action={`${base}/revoke`}
        label="Revoke"
        danger={true}
        confirm={`Revoke ${key.name}? Its requests are refused within a second, for good.`}
      />
    </div>
  );
};

/** Every tenant: its keys, limits and budgets; an operator's page links each to its form. */
export const TenantsPage: FC<{ tenants: readonly TenantView[]; canWrite: boolean; notice?: string | undefined; sentences?: readonly string[] }> = ({
  tenants,
  canWrite,
  notice,
  sentences,
}) => (
  <Layout title="Tenants" section="keys" signedIn={true}>
    <p class="subtitle">
      <a href="/dashboard/keys">Keys</a> /
    </p>
    <h1>Tenants</h1>
    <DoneNotice text={notice} sentences={sentences ?? []} />
    {canWrite ? (
      <p class="toolbar">
        <a class="button primary" href="/dashboard/new-tenant">
          New tenant
        </a>
      </p>
    ) : null}
    <section class="panel">
      {tenants.length === 0 ? (
        <p class="empty">No tenants yet.</p>
      ) : (
        <table>
          <thead>
            <tr>
              <th>Tenant</th>
              <th class="num">Keys</th>
              <th>Limits</th>
              <th>Budgets</th>
              {canWrite ? <th></th> : null}
            </tr>
          </thead>
          <tbody>
            {tenants.map((tenant) => (
              <tr data-tenant={tenant.name}>
                <td>
                  <a href={`/dashboard/keys?tenant=${encodeURIComponent(tenant.id)}`}>{tenant.name}</a>
                </td>
                <td class="num">{String(tenant.keys)}</td>
                <td class="mono wrap">{describeLimits(tenant.policy)}</td>
                <td class="wrap">{describeBudget(tenant.policy)}</td>
                {canWrite ? (
                  <td>
                    <a href={`/dashboard/tenants/${encodeURIComponent(tenant.id)}/edit`}>Edit</a>
                  </td>
                ) : null}
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  </Layout>
);
