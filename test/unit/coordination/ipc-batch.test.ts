/**
 * A worker's calls to its primary in one turn of the event loop travel as one
 * batch and come back as one message (ipc-protocol.ts); budget adjustments
 * ride along summed per counter, unanswered, applied before the calls; the
 * primary still runs each call in order, one at a time. The channel here is
 * an in-process pair that copies each message as Node's IPC would
 * (structuredClone) and delivers it on a later turn; the same code runs over
 * a real channel in test/integration/coordination.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { IpcClient, type IpcChannel } from '../../../src/coordination/ipc-client.js';
import { LimitsPrimary, type WorkerChannel } from '../../../src/coordination/ipc-primary.js';
import { ipcBudgetCounters } from '../../../src/coordination/ipc-store.js';

interface Pair {
  readonly worker: IpcChannel;
  readonly primarySide: WorkerChannel;
  /** Messages each side has received. */
  readonly toPrimary: unknown[];
  readonly toWorker: unknown[];
  disconnect(): void;
}

function channelPair(): Pair {
  const workerListeners: Array<(message: unknown) => void> = [];
  const disconnectListeners: Array<() => void> = [];
  const primaryListeners: Array<(message: unknown) => void> = [];
  const toPrimary: unknown[] = [];
  const toWorker: unknown[] = [];
  let connected = true;
  const deliver = (message: unknown, log: unknown[], listeners: Array<(message: unknown) => void>): boolean => {
    const copy = structuredClone(message);
    setImmediate(() => {
      log.push(copy);
      for (const listener of listeners) listener(copy);
    });
    return true;
  };
  return {
    toPrimary,
    toWorker,
    worker: {
      send: (message) => deliver(message, toPrimary, primaryListeners),
      on(event: 'message' | 'disconnect', listener: ((message: unknown) => void) | (() => void)) {
        if (event === 'message') workerListeners.push(listener as (message: unknown) => void);
        else disconnectListeners.push(listener as () => void);
        return this;
      },
      get connected() {
        return connected;
      },
    },
    primarySide: {
      send: (message) => deliver(message, toWorker, workerListeners),
      on: (_event, listener) => primaryListeners.push(listener),
    },
    disconnect() {
      connected = false;
      for (const listener of disconnectListeners) listener();
    },
  };
}

const DAY = 86_400_000;
let primary: LimitsPrimary;

afterEach(() => primary.close());

function connect(): { pair: Pair; client: IpcClient } {
  primary = new LimitsPrimary({ now: () => 1_000_000 });
  const pair = channelPair();
  primary.serve(pair.primarySide);
  return { pair, client: new IpcClient(pair.worker) };
}

describe('IPC batches between a worker and its primary', () => {
  it('sends the reservations of one turn as one message and gets every answer back in one', async () => {
    const { pair, client } = connect();
    const counters = ipcBudgetCounters(client, 1000);
    const replies = await Promise.all(Array.from({ length: 20 }, () => counters.reserve('tg:{key:k}:budget:d', 1_000_000, 100, 0, DAY, 100)));
    expect(replies.map((reply) => reply[2])).toEqual(Array.from({ length: 20 }, () => 100));
    expect(pair.toPrimary).toHaveLength(1);
    expect(pair.toWorker).toHaveLength(1);
    expect(primary.batchesReceived()).toBe(1);
    expect(client.batchesSent()).toBe(1);
  });

  it('runs a batch in order, each reservation atomic: near the cap the first fits and the next is refused', async () => {
    const { client } = connect();
    const counters = ipcBudgetCounters(client, 1000);
    const [first, second, third] = await Promise.all([
      counters.reserve('cap', 1000, 600, 0, DAY, 600),
      counters.reserve('cap', 1000, 600, 0, DAY, 600),
      counters.reserve('cap', 1000, 600, 0, DAY, 300),
    ]);
    expect(first).toEqual([1, 0, 600]);
    expect(second).toEqual([0, 600, 0]);
    // Partial grant down to `least`, after the refused one wrote nothing.
    expect(third).toEqual([1, 600, 400]);
  });

  it('sums a turn’s adjustments per counter into the batch, answers none of them, and applies them before its calls', async () => {
    const { pair, client } = connect();
    const counters = ipcBudgetCounters(client, 1000);
    await counters.reserve('a', 1000, 1000, 0, DAY, 1000);
    await counters.reserve('b', 1000, 500, 0, DAY, 500);
    const sentBefore = pair.toPrimary.length;
    const repliesBefore = pair.toWorker.length;
    // Settlements of three requests on 'a' (cost below their reservations) and one on 'b', then a reservation on 'a'.
    const adjusted = Promise.all([counters.adjust('a', -100), counters.adjust('a', -200), counters.adjust('b', -50), counters.adjust('a', -100)]);
    const reserved = counters.reserve('a', 1000, 400, 0, DAY, 400);
    await adjusted;
    // Spent 1000 − 400 = 600 before the reservation: the adjustments ran first, so it fits.
    expect(await reserved).toEqual([1, 600, 400]);
    expect(pair.toPrimary.length - sentBefore).toBe(1);
    expect(pair.toPrimary.at(-1)).toMatchObject({
      tollgate: 'batch',
      adjust: [
        ['a', -400],
        ['b', -50],
      ],
    });
    expect(pair.toWorker.length - repliesBefore).toBe(1);
    // Adjustments alone get no answer.
    await counters.adjust('b', 50);
    await new Promise((resolve) => setImmediate(resolve));
    expect(pair.toWorker.length - repliesBefore).toBe(1);
    expect(primary.reserveBudget('b', 1000, 500, 0, DAY, 500)).toEqual([1, 500, 500]);
  });

  it('sends a call marked now at once, with what the turn gathered so far, and the rest of the turn in a batch of its own', async () => {
    const { pair, client } = connect();
    const counters = ipcBudgetCounters(client, 1000);
    const first = counters.reserve('a', 1000, 100, 0, DAY, 100);
    const lease = client.call('lease', { calls: [] }, 1000, true);
    const later = counters.reserve('a', 1000, 100, 0, DAY, 100);
    expect(await Promise.all([first, lease, later])).toEqual([[1, 0, 100], [], [1, 100, 100]]);
    expect(pair.toPrimary).toMatchObject([{ calls: [{ op: 'budget-reserve' }, { op: 'lease' }] }, { calls: [{ op: 'budget-reserve' }] }]);
  });

  it('fails every call of a turn, and its adjustments, when the channel has closed', async () => {
    const { pair, client } = connect();
    const counters = ipcBudgetCounters(client, 1000);
    const reserve = counters.reserve('a', 1000, 100, 0, DAY, 100);
    const adjust = counters.adjust('a', -10);
    pair.disconnect();
    await expect(reserve).rejects.toThrow(/closed/);
    await expect(adjust).rejects.toThrow(/closed/);
    await expect(counters.adjust('a', -10)).rejects.toThrow(/closed/);
  });

  it('answers a metrics call on its own, so the lease and budget calls of its batch do not wait for the aggregation', async () => {
    primary = new LimitsPrimary({ now: () => 1_000_000, metrics: () => new Promise<string>(() => {}) });
    const pair = channelPair();
    primary.serve(pair.primarySide);
    const client = new IpcClient(pair.worker);
    void client.call('metrics', {}, 60_000).catch(() => {});
    const reserved = await client.call('budget-reserve', { args: ['a', 1000, 100, 0, DAY, 100] }, 1000);
    expect(reserved).toEqual([1, 0, 100]);
    expect(pair.toPrimary).toHaveLength(1);
  });
});
