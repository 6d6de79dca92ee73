/**
 * The simulated world of the lease model test: nodes running the real
 * BucketLease code against the script model on one virtual clock.
 */
import fc from 'fast-check';
import { expect } from 'vitest';
import { BucketLease } from '../../../../src/limits/algorithm/lease.js';
import type { LeaseCallPlan, LeaseSettings } from '../../../../src/limits/algorithm/lease-call.js';
import type { LeaseCallArgs } from '../../../../src/coordination/lease-script.js';
import type { BucketShape } from '../../../../src/limits/algorithm/token-bucket.js';
import { inspectModel, runLeaseModel, type ModelHash } from '../../../../src/coordination/lease-script-model.js';

const CALL_TIMEOUT = 40;

export type Action =
  | { kind: 'advance'; ms: number }
  | { kind: 'request'; node: number; cost: number }
  | { kind: 'call'; node: number; urgent: number; execDelay: number; replyDelay: number; lose: boolean; duplicate: number }
  | { kind: 'settle'; node: number; pick: number; factor: number }
  | { kind: 'housekeep'; node: number }
  | { kind: 'kill'; node: number };

interface SimNode {
  lease: BucketLease;
  alive: boolean;
  tickets: number[];
  /** The call in flight, if any. */
  call: { id: number; plan: LeaseCallPlan; answered: boolean } | null;
}

interface SimEvent {
  at: number;
  order: number;
  run: () => void;
}

export function actionArb(nodes: number, maxCost: number): fc.Arbitrary<Action> {
  const node = fc.integer({ min: 0, max: nodes - 1 });
  return fc.oneof(
    { weight: 3, arbitrary: fc.record({ kind: fc.constant('advance' as const), ms: fc.integer({ min: 0, max: 250 }) }) },
    { weight: 6, arbitrary: fc.record({ kind: fc.constant('request' as const), node, cost: fc.integer({ min: 1, max: maxCost }) }) },
    {
      weight: 4,
      arbitrary: fc.record({
        kind: fc.constant('call' as const),
        node,
        urgent: fc.integer({ min: 0, max: maxCost }),
        execDelay: fc.integer({ min: 0, max: 60 }),
        replyDelay: fc.integer({ min: 0, max: 30 }),
        lose: fc.boolean(),
        duplicate: fc.oneof(fc.constant(-1), fc.integer({ min: 0, max: 400 })),
      }),
    },
    {
      weight: 3,
      arbitrary: fc.record({
        kind: fc.constant('settle' as const),
        node,
        pick: fc.nat(),
        factor: fc.constantFrom(0, 0.5, 1, 1.5, 3),
      }),
    },
    { weight: 2, arbitrary: fc.record({ kind: fc.constant('housekeep' as const), node }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('kill' as const), node }) },
  );
}

export function simulate(
  shape: BucketShape,
  settings: LeaseSettings,
  nodeCount: number,
  actions: readonly Action[],
  log: (line: string) => void = () => undefined,
): void {
  const hash: ModelHash = new Map();
  let now = 1_000;
  let order = 0;
  let callIds = 0;
  const events: SimEvent[] = [];
  const flows: [number, number][] = []; // (time, +admitted | −refunded)
  const ref = { id: 'b', hashTag: 'k', limitName: 'b', ratePerSec: shape.ratePerSec, burst: shape.capacity };
  const nodes: SimNode[] = Array.from({ length: nodeCount }, () => ({
    lease: new BucketLease(ref, shape, settings, now),
    alive: true,
    tickets: [],
    call: null,
  }));

  const at = (time: number, run: () => void) => events.push({ at: time, order: order++, run });
  const runUntil = (time: number) => {
    for (;;) {
      events.sort((a, b) => a.at - b.at || a.order - b.order);
      const next = events[0];
      if (!next || next.at > time) break;
      events.shift();
      now = Math.max(now, next.at);
      next.run();
    }
    now = Math.max(now, time);
  };
  const checkRedis = () => {
    const { tokens, carry, live } = inspectModel(hash, now);
    expect(tokens + carry / shape.rateDen + live).toBeLessThanOrEqual(shape.capacity);
  };
  const checkNode = (node: SimNode) => {
    expect(node.lease.avail).toBeGreaterThanOrEqual(0);
    expect(node.lease.avail).toBeLessThanOrEqual(node.lease.held);
  };

  const startCall = (index: number, action: Extract<Action, { kind: 'call' }> | null) => {
    const node = nodes[index]!;
    if (!node.alive || node.lease.inflight) return;
    if (action && action.urgent > 0) node.lease.addUrgent(action.urgent);
    const plan = node.lease.beginCall(now);
    log(`${now}   send n${index} ${JSON.stringify(plan)}`);
    const id = ++callIds;
    node.call = { id, plan, answered: false };
    const args: LeaseCallArgs = {
      key: 'k',
      hashTag: 'k',
      nodeId: `n${index}`,
      ...plan,
      burst: shape.capacity,
      rateNum: shape.rateNum,
      rateDen: shape.rateDen,
      leaseTtlMs: settings.leaseTtlMs,
      startEmpty: false,
    };
    const sentAt = now;
    const execAt = now + (action?.execDelay ?? 1);
    const replyAt = execAt + (action?.replyDelay ?? 1);
    const lost = (action?.lose ?? false) || replyAt > sentAt + CALL_TIMEOUT;
    at(execAt, () => {
      const reply = runLeaseModel(hash, args, now);
      log(`${now} exec n${index} ${JSON.stringify(plan)} → ${JSON.stringify(reply)}`);
      checkRedis();
      if (lost) return;
      at(replyAt, () => {
        if (!node.alive || node.call?.id !== id || node.call.answered) return;
        node.call.answered = true;
        node.lease.finishCall(reply, now);
        log(`${now} reply n${index} avail=${node.lease.avail} held=${node.lease.held} refund=${node.lease.refundPending}`);
        checkNode(node);
      });
    });
    // A resend (ioredis after a reconnect) or a late duplicate of the same call.
    if (action && action.duplicate >= 0) {
      at(execAt + action.duplicate, () => {
        const reply = runLeaseModel(hash, args, now);
        log(`${now} duplicate n${index} seq=${plan.seq} → status ${reply.status}`);
        checkRedis();
      });
    }
    at(sentAt + CALL_TIMEOUT, () => {
      if (!node.alive || node.call?.id !== id || node.call.answered) return;
      node.call.answered = true;
      node.lease.failCall();
      log(`${now} timeout n${index}`);
    });
  };

  for (const action of actions) {
    log(`${now} ${JSON.stringify(action)}`);
    switch (action.kind) {
      case 'advance':
        runUntil(now + action.ms);
        break;
      case 'request': {
        const node = nodes[action.node]!;
        if (!node.alive) break;
        if (node.lease.trySpend(action.cost, now)) {
          log(`${now}   admitted n${action.node} avail=${node.lease.avail}`);
          flows.push([now, action.cost]);
          node.tickets.push(action.cost);
          checkNode(node);
        } else if (node.lease.wantsTopUp(now)) {
          startCall(action.node, null);
        }
        break;
      }
      case 'call':
        startCall(action.node, action);
        break;
      case 'settle': {
        const node = nodes[action.node]!;
        if (!node.alive || node.tickets.length === 0) break;
        const [reserved] = node.tickets.splice(action.pick % node.tickets.length, 1);
        const actual = Math.ceil(reserved! * action.factor);
        log(`${now}   settle n${action.node} reserved=${reserved} actual=${actual}`);
        if (actual < reserved!) {
          node.lease.refund(reserved! - actual, now);
          flows.push([now, -(reserved! - actual)]);
        } else if (actual > reserved!) {
          node.lease.charge(actual - reserved!, now);
        }
        checkNode(node);
        break;
      }
      case 'housekeep': {
        const node = nodes[action.node]!;
        if (!node.alive || node.lease.inflight) break;
        const lease = node.lease;
        lease.dropIfExpired(now);
        if (lease.isIdle(now) && (lease.held > 0 || lease.hasReport())) lease.returning = true;
        if (lease.returning || lease.hasReport() || lease.needsRenewal(now) || lease.hasExcess(now)) startCall(action.node, null);
        break;
      }
      case 'kill':
        if (nodes.filter((n) => n.alive).length > 1) nodes[action.node]!.alive = false;
        break;
    }
  }
  runUntil(now + 10 * settings.leaseTtlMs);

  // Net spend in every window [a, b] between flow times.
  flows.sort((x, y) => x[0] - y[0]);
  for (let i = 0; i < flows.length; i++) {
    let net = 0;
    for (let j = i; j < flows.length; j++) {
      net += flows[j]![1];
      const windowMs = flows[j]![0] - flows[i]![0];
      expect(net).toBeLessThanOrEqual(shape.capacity + Math.floor((windowMs * shape.rateNum) / shape.rateDen));
    }
  }
}
