/** @jsxRuntime automatic @jsxImportSource hono/jsx */
/**
 * The dashboard's writes: create, edit, rotate, revoke, resume, suspend and unsuspend keys;
 * create and edit tenants. Server-rendered forms, POST then redirect (a new
 * secret is the one page a POST answers itself: it is shown once). Every
 * change goes through the AdminOps the admin API serves (src/admin/ops.ts),
 * so it is checked the same way, reaches the proxy through the same
 * `onChange` (within a second), and is recorded the same way.
 *
 * Who may write is decided in one place ({@link canWrite}); every POST is
 * checked for its origin and CSRF token first (write-guard.ts). A session
 * that may not write gets 403 on every write route and sees no buttons.
 */
import type { Context, Hono } from 'hono';
import type { Child } from 'hono/jsx';
import type { JSX } from 'hono/jsx/jsx-runtime';
import type { ActingAdminOps, AdminOps } from '../admin/ops.js';
import { actorRole, roleAllows } from '../domain/admins.js';
import type { AppEnv } from '../app-env.js';
import { TollgateError } from '../domain/errors.js';
import type { KeyPatch, TenantPatch } from '../domain/keys.js';
import type { NewTenantPolicy } from '../storage/keys.js';
import { PolicyError, type Policy } from '../domain/policy.js';
import { readBodyBytes } from '../http/body.js';
import { budgetSentences, describeChange, spentOf } from './change-view.js';
import { PolicyFormPage, RefusedPage, SecretPage, type PolicyFormProps, type Writer } from './edit-forms.js';
import { NotFoundPage } from './layout.js';
import { fieldsOfForm, fieldsOfPolicy, partsOfFields, policyOfParts, type PolicyFields, type PolicyParts } from './policy-form.js';
import type { ViewContext } from './view-context.js';
import type { Viewer } from './viewer.js';
import { AuditPage, auditFiltersOf } from './audit-page.js';
import { auditRequestOf } from '../admin/access-routes.js';
import { doneText, DoneNotice, KeyActions, KeysToolbar, TenantsPage } from './write-pages.js';
import { csrfTokenFor, CSRF_FIELD, writeRefusal } from './write-guard.js';

/** The largest write form accepted (a policy's text fields). */
const MAX_FORM_BODY = 64 * 1024;

export interface WriteEnv {
  /** The admin API's operations, taken for each session's actor; without them the dashboard stays read-only. */
  readonly ops: ActingAdminOps | undefined;
  readonly adminToken: string;
  readonly viewer: (c: Context<AppEnv>) => Viewer;
  readonly context: (c: Context<AppEnv>) => ViewContext;
  readonly page: (c: Context<AppEnv>, element: JSX.Element, status?: number) => Promise<Response>;
  readonly redirect: (c: Context<AppEnv>, location: string) => Response;
}

/** Whether a viewer may change keys and tenants (an operator or admin, not a viewer nor a tenant): the one place the dashboard decides it. */
function canWrite(viewer: Viewer): boolean {
  return viewer.kind === 'admin' && roleAllows(actorRole(viewer.actor), 'operate');
}

/** The operations as the session's actor: its changes are audited under its name, and its role is checked again inside. */
function opsFor(env: WriteEnv, c: Context<AppEnv>): AdminOps {
  const viewer = env.viewer(c);
  if (env.ops === undefined || viewer.kind !== 'admin') throw new Error('opsFor: a tenant session has no operations');
  return env.ops.as(viewer.actor);
}

/** The writer of a request (its CSRF token for the forms), when its session may write. */
function writerOf(env: WriteEnv, c: Context<AppEnv>): Writer | undefined {
  return env.ops !== undefined && canWrite(env.viewer(c)) ? { csrf: csrfTokenFor(c, env.adminToken) } : undefined;
}

/** The keys table's toolbar, for an operator's session (New key only for one that may write). */
export function keysToolbar(env: WriteEnv, c: Context<AppEnv>): Child {
  if (env.ops === undefined || env.viewer(c).kind !== 'admin') return null;
  return <KeysToolbar canWrite={writerOf(env, c) !== undefined} />;
}

/** Above a key's facts: the notice after a change, with what it means, and the key's buttons (for a session that may write). */
export async function keyPageActions(env: WriteEnv, c: Context<AppEnv>, keyId: string): Promise<Child> {
  const writer = writerOf(env, c);
  if (writer === undefined) return null;
  const key = await opsFor(env, c).getKey(keyId);
  const text = doneText(c.req.query('done'));
  const sentences = text === undefined ? [] : budgetSentences('key', key.policy, await spentOf(env.context(c), { key: key.id }), 'may now spend');
  return (
    <>
      <DoneNotice text={text} sentences={sentences} />
      <KeyActions writer={writer} keyView={key} />
    </>
  );
}

/** A change's message for its form: a PolicyError's or a refusal of the store's, never another fault. */
function formError(error: unknown): string {
  if (error instanceof PolicyError) return error.message;
  if (error instanceof TollgateError && error.status < 500) return error.message;
  throw error;
}

/** The policy after a change: the current one, its form-managed parts replaced. */
function mergedPolicy(current: Policy | undefined, parts: PolicyParts): Policy {
  const rest: Partial<Policy> = { ...current };
  for (const name of ['budget', 'budgets', 'maxInFlight', 'session', 'models', 'endUser', 'tagBudgets'] as const) delete rest[name];
  return { ...rest, ...policyOfParts(parts) };
}

export function registerWriteRoutes(app: Hono<AppEnv>, env: WriteEnv): void {
  const forms = new WeakMap<Request, URLSearchParams>();
  const form = (c: Context<AppEnv>): URLSearchParams => forms.get(c.req.raw) ?? new URLSearchParams();
  const refuse = (c: Context<AppEnv>, message: string, status = 403) => env.page(c, <RefusedPage message={message} />, status);
  const writer = (c: Context<AppEnv>): Writer => writerOf(env, c)!;
  const ops = (c: Context<AppEnv>): AdminOps => opsFor(env, c);
  const readOnly = 'Your session can only read: changing keys and tenants needs an operator.';
  const writeRoute = /^\/(new-key|keys\/[^/]+\/(edit|rotate|revoke|resume|suspend|unsuspend)|new-tenant|tenants\/[^/]+\/edit)$/;

  app.use('*', async function guardWrites(c, next) {
    const path = c.req.path.replace(/^\/dashboard/, '');
    if (c.req.method !== 'POST' && !writeRoute.test(path)) return next();
    if (env.ops === undefined || !canWrite(env.viewer(c))) return refuse(c, readOnly);
    if (c.req.method !== 'POST') return next();
    const body = new URLSearchParams((await readBodyBytes(c.req.raw, MAX_FORM_BODY)).toString('utf8'));
    const refusal = writeRefusal(c, env.adminToken, body.get(CSRF_FIELD));
    if (refusal !== undefined) return refuse(c, refusal);
    forms.set(c.req.raw, body);
    return next();
  });

  /** A policy form posted: its page again with the error or the preview, or `save` done and its answer. */
  const policyPost = async (
    c: Context<AppEnv>,
    props: Omit<PolicyFormProps, 'writer' | 'fields' | 'name' | 'tenant' | 'error' | 'change'>,
    before: Policy | undefined,
    spent: Parameters<typeof describeChange>[3],
    save: (input: { name: string; tenant: string; parts: PolicyParts; fields: PolicyFields }) => Promise<Response>,
  ): Promise<Response> => {
    const body = form(c);
    const fields = fieldsOfForm(body);
    const name = (body.get('name') ?? '').trim();
    const tenant = (body.get('tenant') ?? '').trim();
    const shown = { ...props, writer: writer(c), fields, name, tenant };
    try {
      if (name === '') throw new PolicyError('Name: give the ' + props.owner + ' a name');
      const parts = partsOfFields(fields, props.owner);
      if (body.get('intent') === 'preview') {
        const change = describeChange(props.owner, before, mergedPolicy(before, parts), spent);
        return env.page(c, <PolicyFormPage {...shown} change={change} />);
      }
      return await save({ name, tenant, parts, fields });
    } catch (error) {
      return env.page(c, <PolicyFormPage {...shown} error={formError(error)} />, 422);
    }
  };

  const keyForm = { owner: 'key' as const, title: 'New key', action: '/dashboard/new-key', back: '/dashboard/keys', submit: 'Create key' };
  app.get('/new-key', (c) => env.page(c, <PolicyFormPage {...keyForm} writer={writer(c)} name="" tenant="" fields={fieldsOfPolicy(undefined)} />));
  app.post('/new-key', (c) =>
    policyPost(
      c,
      keyForm,
      undefined,
      () => 0,
      async ({ name, tenant, parts }) => {
        const issued = await ops(c).createKey({ name, tenant: tenant === '' ? undefined : tenant, policy: policyOfParts(parts) });
        const sentences = budgetSentences('key', issued.view.policy, () => 0, 'may spend');
        return env.page(c, <SecretPage verb="Created" name={issued.view.name} keyId={issued.view.id} secret={issued.key} sentences={sentences} />);
      },
    ),
  );

  const keyFormOf = (id: string, name: string) => ({
    owner: 'key' as const,
    title: `Edit ${name}`,
    action: `/dashboard/keys/${encodeURIComponent(id)}/edit`,
    back: `/dashboard/keys/${encodeURIComponent(id)}`,
    submit: 'Save',
  });
  /** The key a route names, or its 404 page. */
  const keyOf = async (c: Context<AppEnv>) => {
    try {
      return await ops(c).getKey(c.req.param('id') ?? '');
    } catch (error) {
      if (error instanceof TollgateError && error.status === 404) {
        return env.page(c, <NotFoundPage message={`There is no key with id "${c.req.param('id')}".`} signedIn={true} />, 404);
      }
      throw error;
    }
  };
  app.get('/keys/:id/edit', async (c) => {
    const key = await keyOf(c);
    if (key instanceof Response) return key;
    if (key.status === 'revoked') return refuse(c, `Key ${key.name} is revoked and cannot be changed.`, 409);
    return env.page(
      c,
      <PolicyFormPage {...keyFormOf(key.id, key.name)} writer={writer(c)} name={key.name} tenant={key.tenant ?? ''} fields={fieldsOfPolicy(key.policy)} />,
    );
  });
  app.post('/keys/:id/edit', async (c) => {
    const key = await keyOf(c);
    if (key instanceof Response) return key;
    const spent = await spentOf(env.context(c), { key: key.id });
    return policyPost(c, keyFormOf(key.id, key.name), key.policy, spent, async ({ name, tenant, parts }) => {
      const patch: KeyPatch = {
        ...parts,
        // Only what the form changes: an untouched name or tenant is left alone.
        name: name === key.name ? undefined : name,
        tenant: tenant === (key.tenant ?? '') ? undefined : tenant === '' ? null : tenant,
      };
      await ops(c).updateKey(key.id, patch);
      return env.redirect(c, `/dashboard/keys/${encodeURIComponent(key.id)}?done=saved`);
    });
  });

  /** A key's one-button change: done, or its refusal as a page. */
  const keyAction = (run: (c: Context<AppEnv>, ops: AdminOps, id: string) => Promise<Response>) => async (c: Context<AppEnv>) => {
    const key = await keyOf(c);
    if (key instanceof Response) return key;
    try {
      return await run(c, ops(c), key.id);
    } catch (error) {
      return refuse(c, formError(error), error instanceof TollgateError ? error.status : 400);
    }
  };
  const keyPath = (id: string) => `/dashboard/keys/${encodeURIComponent(id)}`;
  app.post(
    '/keys/:id/rotate',
    keyAction(async (c, o, id) => {
      const issued = await o.rotateKey(id);
      return env.page(c, <SecretPage verb="Rotated" name={issued.view.name} keyId={id} secret={issued.key} sentences={[]} />);
    }),
  );
  app.post(
    '/keys/:id/revoke',
    keyAction(async (c, o, id) => {
      await o.revokeKey(id);
      return env.redirect(c, `${keyPath(id)}?done=revoked`);
    }),
  );
  app.post(
    '/keys/:id/resume',
    keyAction(async (c, o, id) => {
      await o.resumeKey(id);
      return env.redirect(c, `${keyPath(id)}?done=resumed`);
    }),
  );
  app.post(
    '/keys/:id/suspend',
    keyAction(async (c, o, id) => {
      await o.suspendKey(id);
      return env.redirect(c, `${keyPath(id)}?done=suspended`);
    }),
  );
  app.post(
    '/keys/:id/unsuspend',
    keyAction(async (c, o, id) => {
      await o.unsuspendKey(id);
      return env.redirect(c, `${keyPath(id)}?done=unsuspended`);
    }),
  );

  // The audit trail: any operator session reads it (viewers too), a tenant's does not exist for it.
  app.get('/audit', async (c) => {
    if (env.ops === undefined || env.viewer(c).kind !== 'admin')
      return env.page(c, <NotFoundPage message={`Nothing here: ${c.req.path}`} signedIn={true} />, 404);
    const filters = auditFiltersOf((name) => c.req.query(name));
    try {
      // The admin API's reading of the same parameters (an empty field of the form is no filter); a page of 50.
      const request = auditRequestOf((name) => c.req.query(name)?.trim() || undefined);
      const page = await ops(c).audit({ ...request, limit: 50 });
      return env.page(c, <AuditPage view={{ filters, entries: page.data, nextCursor: page.hasMore ? page.nextCursor : null }} />);
    } catch (error) {
      return env.page(c, <AuditPage view={{ filters, entries: [], nextCursor: null, error: formError(error) }} />, 400);
    }
  });

  const tenantForm = { owner: 'tenant' as const, title: 'New tenant', action: '/dashboard/new-tenant', back: '/dashboard/tenants', submit: 'Create tenant' };
  const tenantsPage = async (c: Context<AppEnv>) => {
    if (env.ops === undefined || env.viewer(c).kind !== 'admin')
      return env.page(c, <NotFoundPage message={`Nothing here: ${c.req.path}`} signedIn={true} />, 404);
    const tenants = await opsFor(env, c).listTenants();
    const text = doneText(c.req.query('done'));
    const named = tenants.find((t) => t.id === c.req.query('tenant'));
    const sentences =
      text === undefined || named === undefined
        ? []
        : budgetSentences('tenant', named.policy, await spentOf(env.context(c), { tenant: named.id }), 'may now spend');
    return env.page(c, <TenantsPage tenants={tenants} canWrite={writerOf(env, c) !== undefined} notice={text} sentences={sentences} />);
  };
  app.get('/tenants', tenantsPage);
  app.get('/new-tenant', (c) => env.page(c, <PolicyFormPage {...tenantForm} writer={writer(c)} name="" fields={fieldsOfPolicy(undefined)} />));
  app.post('/new-tenant', (c) =>
    policyPost(
      c,
      tenantForm,
      undefined,
      () => 0,
      async ({ name, parts }) => {
        const tenant = await ops(c).createTenant(name, tenantPolicyOf(parts));
        return env.redirect(c, `/dashboard/tenants?done=created&tenant=${encodeURIComponent(tenant.id)}`);
      },
    ),
  );

  const tenantFormOf = (id: string, name: string) => ({
    owner: 'tenant' as const,
    title: `Edit tenant ${name}`,
    action: `/dashboard/tenants/${encodeURIComponent(id)}/edit`,
    back: '/dashboard/tenants',
    submit: 'Save',
  });
  const tenantOf = async (c: Context<AppEnv>) => {
    try {
      return await ops(c).getTenant(c.req.param('id') ?? '');
    } catch (error) {
      if (error instanceof TollgateError && error.status === 404) {
        return env.page(c, <NotFoundPage message={`There is no tenant with id "${c.req.param('id')}".`} signedIn={true} />, 404);
      }
      throw error;
    }
  };
  app.get('/tenants/:id/edit', async (c) => {
    const tenant = await tenantOf(c);
    if (tenant instanceof Response) return tenant;
    return env.page(
      c,
      <PolicyFormPage {...tenantFormOf(tenant.id, tenant.name)} writer={writer(c)} name={tenant.name} fields={fieldsOfPolicy(tenant.policy)} />,
    );
  });
  app.post('/tenants/:id/edit', async (c) => {
    const tenant = await tenantOf(c);
    if (tenant instanceof Response) return tenant;
    const spent = await spentOf(env.context(c), { tenant: tenant.id });
    return policyPost(c, tenantFormOf(tenant.id, tenant.name), tenant.policy, spent, async ({ name, parts }) => {
      const { limits, budget, budgets, maxInFlight, session } = parts;
      const patch: TenantPatch = { name: name === tenant.name ? undefined : name, limits, budget, budgets, maxInFlight, session };
      await ops(c).updateTenant(tenant.id, patch);
      return env.redirect(c, `/dashboard/tenants?done=saved&tenant=${encodeURIComponent(tenant.id)}`);
    });
  });
}

/** A tenant's part of the form's policy (a tenant has no models, end-user rules or tag budgets). */
function tenantPolicyOf(parts: PolicyParts): NewTenantPolicy {
  const { limits, budget, budgets, maxInFlight, session } = policyOfParts(parts);
  return { limits, budget, budgets, maxInFlight, session };
}
