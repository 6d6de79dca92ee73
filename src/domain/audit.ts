/**
 * The audit trail's entries (docs/admins.md): one per change to a key, a
 * tenant, an admin or a tenant's dashboard token, naming who made it and the
 * state before and after. Pure. The states are built here, from views that
 * carry no secret (a key's visible prefix, never its secret or hash), so no
 * store can put a secret in a row by accident.
 */
import { actorName, type Actor, type ActorKind, type AdminRole } from './admins.js';
import type { KeyView, TenantView } from './keys.js';

export const AUDIT_ACTIONS = [
  'key.create',
  'key.update',
  'key.revoke',
  'key.rotate',
  'key.resume',
  'key.throttle',
  'key.pause',
  'key.release',
  'key.suspend',
  'key.unsuspend',
  'tenant.create',
  'tenant.update',
  'admin.create',
  'admin.revoke',
  'tenant-token.create',
  'tenant-token.revoke',
] as const;

export type AuditAction = (typeof AUDIT_ACTIONS)[number];

export type AuditTargetKind = 'key' | 'tenant' | 'admin' | 'tenant-token';

interface AuditTarget {
  readonly kind: AuditTargetKind;
  readonly id: string;
  /** Its name when the change was made. */
  readonly name: string;
}

/** One row of the trail, as it is read. */
export interface AuditEntry {
  /** Increasing in the order rows were written (the paging cursor). */
  readonly id: number;
  /** Milliseconds since the epoch. */
  readonly at: number;
  readonly actor: { readonly kind: ActorKind; readonly name: string };
  readonly action: AuditAction;
  readonly target: AuditTarget;
  /** The state before (null for a creation). */
  readonly before: AuditState | null;
  /** The state after. */
  readonly after: AuditState | null;
}

/** A state as the trail keeps it: plain JSON, never a secret. */
export type AuditState = Readonly<Record<string, unknown>>;

/** A change about to be written: the store adds the id, and the time in the same transaction as the change. */
export interface AuditChange {
  readonly actor: Actor;
  readonly action: AuditAction;
  readonly target: AuditTarget;
  readonly before: AuditState | null;
  readonly after: AuditState | null;
}

/** A row's columns, as both stores write them. */
export interface AuditRecord {
  readonly at: number;
  readonly actorKind: ActorKind;
  readonly actorName: string;
  readonly action: AuditAction;
  readonly targetKind: AuditTargetKind;
  readonly targetId: string;
  readonly targetName: string;
  readonly before: string | null;
  readonly after: string | null;
}

export function auditRecord(change: AuditChange, at: number): AuditRecord {
  return {
    at,
    actorKind: change.actor.kind,
    actorName: actorName(change.actor),
    action: change.action,
    targetKind: change.target.kind,
    targetId: change.target.id,
    targetName: change.target.name,
    before: change.before === null ? null : JSON.stringify(change.before),
    after: change.after === null ? null : JSON.stringify(change.after),
  };
}

/** What the trail keeps of a key: its name, tenant, status, policy and metadata, the runaway stop's marks, and the visible prefix. */
function keyState(view: KeyView): AuditState {
  return {
    name: view.name,
    tenant: view.tenant,
    prefix: view.prefix,
    status: view.status,
    expiresAt: view.expiresAt,
    policy: view.policy,
    metadata: view.metadata,
    ...(view.throttle === undefined ? {} : { throttle: view.throttle }),
    ...(view.pauses === undefined ? {} : { pauses: view.pauses }),
    ...(view.suspended === undefined ? {} : { suspended: view.suspended }),
  };
}

function tenantState(view: TenantView): AuditState {
  return { name: view.name, policy: view.policy };
}

/** A key change: its action, and the key's states around it (null before: created). */
export function keyChange(actor: Actor, action: AuditAction, before: KeyView | null, after: KeyView): AuditChange {
  return {
    actor,
    action,
    target: { kind: 'key', id: after.id, name: after.name },
    before: before === null ? null : keyState(before),
    after: keyState(after),
  };
}

export function tenantChange(actor: Actor, action: 'tenant.create' | 'tenant.update', before: TenantView | null, after: TenantView): AuditChange {
  return {
    actor,
    action,
    target: { kind: 'tenant', id: after.id, name: after.name },
    before: before === null ? null : tenantState(before),
    after: tenantState(after),
  };
}

/** An admin's state: its name and role, and whether it is revoked (never its token or hash). */
export function adminState(admin: { readonly name: string; readonly role: AdminRole; readonly revokedAt: number | null }): AuditState {
  return { name: admin.name, role: admin.role, status: admin.revokedAt === null ? 'active' : 'revoked' };
}

/** A tenant token's state (never the token or its hash). */
export function tenantTokenState(token: {
  readonly tenant: string;
  readonly prefix: string;
  readonly label: string;
  readonly expiresAt: number | null;
  readonly revokedAt: number | null;
}): AuditState {
  return {
    tenant: token.tenant,
    prefix: token.prefix,
    label: token.label,
    expiresAt: token.expiresAt,
    status: token.revokedAt === null ? 'active' : 'revoked',
  };
}

/** The action of each of the runaway stop's changes to a key (src/domain/owner-pauses.ts). */
export const RUNAWAY_ACTIONS = { throttle: 'key.throttle', resume: 'key.resume', pause: 'key.pause', release: 'key.release' } as const satisfies Record<
  string,
  AuditAction
>;
