/**
 * The streaming figures of bench/targets.ts: what a proxy adds to a stream's
 * time to first byte and to the gaps between its chunks, with many streams
 * open at once. A stream here is a chat request with `stream: true` to
 * bench/slow-upstream.ts, whose chunks carry the monotonic µs they were
 * written at (bench/stamped-stream.ts reads them), sent directly, through a
 * bare `node:http` hop and through Tollgate as deployed; a separate upstream,
 * hop and Tollgate from those the rest of targets.ts measures, because this
 * upstream is another process and Tollgate has one upstream URL. Placement is
 * targets.ts's: both proxies on core 1 (one idle while the other is
 * measured, as there), this load and the upstream on core 0.
 *
 * Each of N clients opens its first stream at a staggered moment over one
 * stream's length, then the next as soon as one ends, each over a fresh
 * connection (as bench/streams.ts), so starts and chunks spread evenly instead
 * of arriving in bursts of N. Per stream: time to first byte, from writing the
 * request (after connect) to reading the response's first byte; per chunk, the
 * gap since the stream's previous chunk was read, and the relay delay (read
 * minus written upstream). Chunks read together have a gap of 0: the other
 * side of one held back.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { nowMicros, openStream, streamRequest } from './stamped-stream.js';
import { issueBenchKey, median, percentile, pin, plainJs, shuffled, startChild, startTollgate, type BenchResult, type Child } from './support.js';

/*
 * A chunk every 20 ms, 50 of them (1 s a stream): at the default 64 streams,
 * 3,200 chunks/s for the upstream to write and this process to read on core 0,
 * a twelfth of the 40,000/s at which going direct already saturated that core,
 * and a sixth of the 20,000/s that still gave direct a 1 ms median
 * (shared/BENCH-NOTES.md; on the machines 3–4× slower per request, still
 * below that). Core 0 stays far from saturation, so what the load side adds
 * stays small and the same for all three targets.
 */
const INTERVAL_MS = 20;
const CHUNKS = 50;
const UPSTREAM_KEY = 'sk-bench-upstream';

type Name = 'direct' | 'bare' | 'tollgate';

interface Round {
  /** ms from writing the request to reading the first response byte, one per stream. */
  readonly ttfb: number[];
  /** ms between a stream's consecutive chunks as read, one per chunk after its first. */
  readonly gaps: number[];
  /** ms from the upstream's write of a chunk to this process's read of it. */
  readonly relay: number[];
  readonly streams: number;
  readonly errors: number;
  /** What went wrong, and how often: a socket error's code, a status, or the chunks read. */
  readonly errorKinds: Map<string, number>;
}

/** `streams` clients for `perClient` streams each against `url`. */
async function runRound(url: URL, authorization: string, streams: number, perClient: number, body: () => string): Promise<Round> {
  const ttfb: number[] = [];
  const gaps: number[] = [];
  const relay: number[] = [];
  const errorKinds = new Map<string, number>();
  const stream = async (): Promise<void> => {
    let previous: number | undefined;
    const outcome = await openStream(url, streamRequest(url, authorization, body()), {
      firstByte: (at, sentAt) => ttfb.push((at - sentAt) / 1000),
      chunk: (at, stamp) => {
        if (previous !== undefined) gaps.push((at - previous) / 1000);
        previous = at;
        relay.push((at - stamp) / 1000);
      },
    });
    const { error, status, done, chunks } = outcome;
    const kind =
      error ?? (status !== '200' ? `status ${status || 'none'}` : !done || chunks !== CHUNKS ? `${chunks} chunks${done ? '' : ', no [DONE]'}` : undefined);
    if (kind !== undefined) errorKinds.set(kind, (errorKinds.get(kind) ?? 0) + 1);
  };
  const streamMs = INTERVAL_MS * CHUNKS;
  await Promise.all(
    Array.from({ length: streams }, async (_, i) => {
      await new Promise((resolve) => setTimeout(resolve, (i * streamMs) / streams));
      for (let n = 0; n < perClient; n += 1) await stream();
    }),
  );
  const errors = [...errorKinds.values()].reduce((sum, n) => sum + n, 0);
  return { ttfb, gaps, relay, streams: streams * perClient, errors, errorKinds };
}

export interface SseGap {
  /** A stream from every client through each proxy, unmeasured (JIT, pools, the tokenizer's ranks). */
  warmUp(): Promise<void>;
  /** One measured round: the three targets in a random order. */
  round(): Promise<void>;
  stop(): Promise<void>;
  results(): BenchResult[];
}

/** Starts the slow upstream, a bare hop and a Tollgate in front of it, pinned as bench/targets.ts pins its own. */
export async function startSseGap(options: { streams: number; quick: boolean; body: () => string; nodeArgs?: readonly string[] }): Promise<SseGap> {
  const { streams } = options;
  // Rounds of ~3 s (quick) or ~7 s per target: 128 or 384 first bytes and ~6,000 or ~19,000 chunks a round.
  const perClient = options.quick ? 2 : 6;
  const scratch = mkdtempSync(join(tmpdir(), 'tollgate-sse-gap-'));
  const children: Child[] = [];
  const started = async <T extends Child>(child: Promise<T>, core: number): Promise<T> => {
    const running = await child;
    children.push(running);
    pin(running.process.pid!, core);
    return running;
  };
  const stop = async (): Promise<void> => {
    await Promise.all(children.map((child) => child.stop()));
    rmSync(scratch, { recursive: true, force: true });
  };
  const targets: { name: Name; url: URL; authorization: string }[] = [];
  try {
    const upstream = await started(startChild([plainJs('bench/slow-upstream.ts'), String(INTERVAL_MS), String(CHUNKS)]), 0);
    // A client's next stream can open before the proxy has let go of its last: room for twice N.
    const room = String(Math.max(256, streams * 2));
    const bare = await started(startChild([plainJs('bench/bare-proxy.ts'), upstream.url, room]), 1);
    const dbPath = join(scratch, 'bench.db');
    const key = issueBenchKey(dbPath);
    const tollgate = await started(
      startTollgate(
        {
          TOLLGATE_DB: dbPath,
          TOLLGATE_UPSTREAM_URL: upstream.url,
          TOLLGATE_UPSTREAM_KEY: UPSTREAM_KEY,
          TOLLGATE_LOG_LEVEL: 'info',
          // One upstream connection per open stream (the default pool of 128 would queue the rest).
          TOLLGATE_UPSTREAM_CONNECTIONS: room,
          // Every stream is the one key's: the default (64 in flight per key) would refuse some with 429.
          TOLLGATE_MAX_IN_FLIGHT: room,
        },
        options.nodeArgs,
      ),
      1,
    );
    targets.push(
      { name: 'direct', url: new URL(upstream.url), authorization: `Bearer ${UPSTREAM_KEY}` },
      { name: 'bare', url: new URL(bare.url), authorization: `Bearer ${UPSTREAM_KEY}` },
      { name: 'tollgate', url: new URL(tollgate.url), authorization: `Bearer ${key}` },
    );
  } catch (error) {
    await stop();
    throw error;
  }
  const rounds: Record<Name, Round[]> = { direct: [], bare: [], tollgate: [] };
  return {
    warmUp: async () => {
      for (const target of targets) if (target.name !== 'direct') await runRound(target.url, target.authorization, streams, 1, options.body);
    },
    round: async () => {
      for (const target of shuffled(targets)) {
        const began = nowMicros();
        const round = await runRound(target.url, target.authorization, streams, perClient, options.body);
        rounds[target.name].push(round);
        process.stderr.write(
          `targets: SSE gap ${target.name}, ${round.streams} streams in ${((nowMicros() - began) / 1e6).toFixed(1)} s, ` +
            `chunk gap p99 ${percentile(round.gaps, 99).toFixed(2)} ms, relay p99 ${percentile(round.relay, 99).toFixed(2)} ms, ${round.errors} errors\n`,
        );
        for (const [kind, n] of round.errorKinds) process.stderr.write(`  error: ${kind} × ${n}\n`);
      }
    },
    stop,
    results: () => gapResults(rounds, streams),
  };
}

/** Each percentile is the median over rounds of that round's; "added" subtracts direct's, "over the bare hop" the bare hop's. */
function gapResults(rounds: Record<Name, Round[]>, streams: number): BenchResult[] {
  const results: BenchResult[] = [];
  const load = `${streams} streams, a chunk every ${INTERVAL_MS} ms, ${CHUNKS} a stream; median of ${rounds.direct.length} rounds`;
  const metrics = [
    ['time to first byte', (r: Round) => r.ttfb],
    ['chunk gap', (r: Round) => r.gaps],
    ['chunk relay delay', (r: Round) => r.relay],
  ] as const;
  for (const [label, samples] of metrics) {
    for (const p of [50, 99]) {
      const at = (name: Name): number => median(rounds[name].map((round) => percentile(samples(round), p)));
      const [direct, bare, tollgate] = [at('direct'), at('bare'), at('tollgate')];
      const over = (value: number, base: number) => `${(value - base).toFixed(2)} ms`;
      results.push({ name: `SSE ${label} p${p}, direct`, value: direct, unit: 'ms', note: load });
      results.push({ name: `SSE ${label} p${p}, bare hop`, value: bare, unit: 'ms', note: `adds ${over(bare, direct)} over direct` });
      results.push({
        name: `SSE ${label} p${p}, tollgate`,
        value: tollgate,
        unit: 'ms',
        note: `adds ${over(tollgate, direct)} over direct, ${over(tollgate, bare)} over the bare hop`,
      });
      if (p !== 99) continue;
      results.push({ name: `SSE ${label} p99 added over direct, bare hop`, value: bare - direct, unit: 'ms', note: '' });
      results.push({ name: `SSE ${label} p99 added over direct, tollgate`, value: tollgate - direct, unit: 'ms', note: '' });
      const verdict = tollgate - bare <= 1 ? 'met' : 'missed';
      const target =
        label === 'chunk gap'
          ? `target "added chunk gap at p99 ≤ 1 ms over the bare hop's": ${verdict}`
          : label === 'chunk relay delay'
            ? `the same target read from the upstream's stamps: ${verdict}`
            : '';
      results.push({ name: `SSE ${label} p99, tollgate added over the bare hop`, value: tollgate - bare, unit: 'ms', note: target });
    }
  }
  const errors = (name: Name) => rounds[name].reduce((sum, r) => sum + r.errors, 0);
  const total = (name: Name) => rounds[name].reduce((sum, r) => sum + r.streams, 0);
  results.push({
    name: 'SSE gap streams with errors',
    value: errors('direct') + errors('bare') + errors('tollgate'),
    unit: 'streams',
    note: `direct ${errors('direct')}/${total('direct')}, bare hop ${errors('bare')}/${total('bare')}, tollgate ${errors('tollgate')}/${total('tollgate')}`,
  });
  return results;
}
