/**
 * lua/lease.lua, transcribed line for line into TypeScript with the clock as
 * an argument; its refill step is the bucket's own (refillBalance in
 * limits/algorithm/token-bucket.ts, which the script repeats line for line).
 * The differential test (test/integration/coordination/lease-script.test.ts)
 * proves it agrees with the real script on real Redis; the model test
 * (test/unit/limits/algorithm/lease-model.test.ts) then runs many nodes
 * against it on a virtual clock. Hash values are strings, as in Redis.
 *
 * It is also what the primary of `tollgate serve --workers N` runs for its
 * workers (ipc-primary.ts): one implementation of the script's logic besides
 * the script itself, so the guarantee and its tests carry over. Pure: no I/O.
 */
import { refillBalance, type Balance } from '../limits/algorithm/token-bucket.js';
import type { LeaseCallArgs, LeaseReply } from './lease-script.js';

export type ModelHash = Map<string, string>;

/** Runs one call against `hash` at Redis time `nowMs`; mutates the hash like the script. */
export function runLeaseModel(hash: ModelHash, call: LeaseCallArgs, nowMs: number): LeaseReply {
  const node = call.nodeId;
  const keep = Math.max(0, call.keep);
  const burst = call.burst;
  const num = call.rateNum;
  const den = call.rateDen;
  const ttl = call.leaseTtlMs;
  const num0 = (field: string): number | undefined => {
    const value = hash.get(field);
    return value === undefined ? undefined : Number(value);
  };

  let tokens: number;
  let carry: number;
  let ts: number;
  if (!hash.has('tokens')) {
    tokens = call.startEmpty ? 0 : burst;
    carry = 0;
    ts = nowMs;
  } else {
    tokens = num0('tokens')!;
    carry = num0('carry') ?? 0;
    ts = num0('ts')!;
  }
  const clock = Math.max(nowMs, ts);

  const lastSeq = num0(`q:${node}`) ?? 0;
  if (call.seq <= lastSeq) {
    return {
      status: 0,
      granted: 0,
      kept: 0,
      lease: num0(`l:${node}`) ?? 0,
      tokens,
      carry,
      outstanding: num0('outstanding') ?? 0,
      active: 0,
      nowMs: clock,
      retryMs: 0,
    };
  }

  let live = 0;
  let active = 0;
  let mine = 0;
  let nextExpiry = 0;
  const ended: [number, number][] = [];
  const others: string[] = [];
  for (const [field, value] of [...hash]) {
    if (!field.startsWith('x:')) continue;
    const id = field.slice(2);
    const expiry = Number(value);
    const lease = num0(`l:${id}`) ?? 0;
    if (id !== node && !(expiry <= clock && expiry + 10 * ttl <= clock)) others.push(id);
    if (expiry > clock) {
      if (id === node) {
        mine = lease;
      } else {
        active += 1;
        live += lease;
        if (lease > 0 && (nextExpiry === 0 || expiry < nextExpiry)) nextExpiry = expiry;
      }
    } else {
      if (lease > 0) ended.push([expiry, lease]);
      if (id !== node && expiry + 10 * ttl <= clock) {
        for (const prefix of ['l:', 'x:', 'q:', 'r:', 'm:', 's:', 'pm:', 'ps:']) hash.delete(`${prefix}${id}`);
        continue;
      } else if (lease !== 0) {
        hash.set(`l:${id}`, '0');
      }
    }
  }
  active += 1;

  // The script's refill(dt, cap): a full balance is clamped (carry dropped), else the one refill step.
  const balance: Balance = { tokens: 0, carry: 0 };
  const refill = (dt: number, cap: number): void => {
    if (tokens >= cap) {
      tokens = cap;
      carry = 0;
      return;
    }
    balance.tokens = tokens;
    balance.carry = carry;
    refillBalance(balance, dt, cap, num, den);
    tokens = balance.tokens;
    carry = balance.carry;
  };

  const applyReport = call.reportId > (num0(`r:${node}`) ?? 0);
  let cap = burst - live - mine;
  for (const [, lease] of ended) cap -= lease;
  let spent = mine - Math.min(mine, keep);
  for (let i = 0; i < 16; i += 2) {
    const by = call.spentBins[i] ?? 0;
    const amount = Math.min(call.spentBins[i + 1] ?? 0, spent);
    if (by > 0 && amount > 0) {
      ended.push([by, amount]);
      spent -= amount;
    }
  }

  // The least room (cap − balance, whole units) seen since the last call:
  // refill only narrows it, so its low points are where the cap grows.
  const room = (): number => cap - tokens - (carry > 0 ? 1 : 0);
  let least = room();
  ended.sort((a, b) => a[0] - b[0]);
  let from = ts;
  for (const [expiry, lease] of ended) {
    const to = Math.max(from, Math.min(expiry, clock));
    refill(to - from, cap);
    least = Math.min(least, room());
    cap += lease;
    from = to;
  }
  refill(clock - from, cap);
  least = Math.min(least, room());

  const kept = Math.min(mine, keep);
  mine = kept;
  if (applyReport) tokens += call.returned;

  // Refund credit: had it joined the bucket when the refunds happened (not
  // before refunded_since), it would have lost what did not fit into the
  // least room since then; that least room is m (since s) and pm (since ps).
  const seenSince = num0(`s:${node}`);
  const seenLeast = num0(`m:${node}`);
  let leastSince = least;
  if (seenSince !== undefined && seenLeast !== undefined) leastSince = Math.min(leastSince, seenLeast);
  if (applyReport && call.refunded > 0) {
    let covered = seenSince !== undefined && seenSince <= call.refundedSince;
    let credit = Math.min(call.refunded, leastSince);
    const prevSince = num0(`ps:${node}`);
    if (!covered && prevSince !== undefined && prevSince <= call.refundedSince) {
      covered = true;
      credit = Math.min(credit, num0(`pm:${node}`) ?? 0);
    }
    if (covered && credit > 0) tokens += credit;
  }
  let outstanding = live + mine;
  cap = burst - outstanding;
  if (tokens >= cap) {
    tokens = cap;
    carry = 0;
  }

  if (applyReport) tokens -= call.debt;

  let granted = Math.min(call.want, Math.max(0, tokens));
  let retry = 0;
  if (granted < call.min || granted <= 0) {
    granted = 0;
    if (call.min > 0) {
      const deficit = (call.min - tokens) * den - carry;
      retry = Math.max(1, Math.ceil(deficit / num));
      if (call.min > cap && nextExpiry > 0) retry = Math.max(retry, nextExpiry - clock);
    }
  }
  tokens -= granted;
  mine += granted;
  outstanding += granted;

  const endRoom = burst - outstanding - tokens - (carry > 0 ? 1 : 0);
  for (const id of others) {
    const seen = num0(`m:${id}`);
    if (seen !== undefined) hash.set(`m:${id}`, String(Math.min(seen, least, endRoom)));
  }
  if (seenSince !== undefined) {
    hash.set(`pm:${node}`, String(leastSince));
    hash.set(`ps:${node}`, String(seenSince));
  }
  hash.set(`m:${node}`, String(endRoom));
  hash.set(`s:${node}`, String(clock));
  hash.set('tokens', String(tokens));
  hash.set('carry', String(carry));
  hash.set('ts', String(clock));
  hash.set('outstanding', String(outstanding));
  hash.set(`l:${node}`, String(mine));
  hash.set(`x:${node}`, String(clock + ttl));
  hash.set(`q:${node}`, String(call.seq));
  if (applyReport) hash.set(`r:${node}`, String(call.reportId));

  return { status: 1, granted, kept, lease: mine, tokens, carry, outstanding, active, nowMs: clock, retryMs: retry };
}

/** Σ of live leases and the unleased balance, as the invariant needs them. */
export function inspectModel(hash: ModelHash, nowMs: number): { tokens: number; carry: number; live: number } {
  let live = 0;
  for (const [field, value] of hash) {
    if (!field.startsWith('x:') || Number(value) <= nowMs) continue;
    live += Number(hash.get(`l:${field.slice(2)}`) ?? '0');
  }
  return { tokens: Number(hash.get('tokens') ?? '0'), carry: Number(hash.get('carry') ?? '0'), live };
}
