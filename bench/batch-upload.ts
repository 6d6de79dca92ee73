/**
 * A batch input file streams through in bounded memory: JSONL files of 102,
 * 51 and 10 MB (50,000 chat lines of 2 KiB — OpenAI's most lines — 25,000
 * and 5,000) are uploaded as `POST /v1/files` (multipart, streamed from disk
 * with its content-length, never held by the client) through Tollgate — which
 * splits, checks and prices every line on the way (src/batch-jobs/upload.ts)
 * — and, as the baseline in the same run, through the bare node:http hop
 * (bench/bare-proxy.ts). Behind both sits bench/drain-upstream.ts, which
 * keeps nothing, so the memory measured is the proxy's own.
 *
 * Each measurement starts a fresh proxy process alone on core 1 (the client
 * and the upstream share core 0), warms it with a small upload (Tollgate's
 * tokenizer loads on its first estimate), reads its RSS at rest, resets its
 * peak (`/proc/<pid>/clear_refs`), and uploads: the peak RSS during the
 * upload is the larger of the kernel's high-water mark (`VmHWM`) and
 * `VmRSS` sampled every 20 ms. A fresh process per measurement keeps one
 * upload's pages from hiding the next one's. A second pass, in other fresh
 * processes, pauses the client at half and at 95% of the file for full
 * collections in the proxy (bench/gc-probe.ts): what the upload keeps alive,
 * garbage aside, which RSS alone cannot tell apart. Sizes, proxies and passes
 * are interleaved in a random order per round; medians of the rounds win.
 *
 * Run: npm run bench -- batch-upload   (or npx tsx bench/batch-upload.ts [--rounds 3] [--quick])
 *      [--line-bytes 4096]   (lines twice as long: files of 205, 102 and 20 MB, the largest near OpenAI's 200 MiB)
 *      [--priority -10]   (as bench/streams.ts: the bench's session raised over the machine's other work; needs root)
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { createReadStream, createWriteStream, existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { setPriority, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { Readable } from 'node:stream';
import { finished } from 'node:stream/promises';
import { pathToFileURL } from 'node:url';
import { Agent, request } from 'undici';
import {
  median,
  pin,
  plainJs,
  printTable,
  processCpuMicros,
  REPO_ROOT,
  shuffled,
  startChild,
  startTollgate,
  tollgateEntry,
  type BenchResult,
  type Child,
} from './support.js';

const UPSTREAM_KEY = 'sk-bench-upstream';
/** Every line's size with its newline, by default: 50,000 of them (OpenAI's most) make 102.4 MB. */
const LINE_BYTES = 2048;
/** The files' lines: the most a batch may have, half of it, and a tenth. */
const LINE_COUNTS = [50_000, 25_000, 5_000] as const;
const WARM_LINES = 200;
const SAMPLE_MS = 20;
const PROXIES = ['bare hop', 'tollgate'] as const;
type ProxyName = (typeof PROXIES)[number];

const WORDS = (
  'the of and to in is that for it as was with be by on not he this are or his from at which but have an they you were ' +
  'her she there been one all we their has would when if so no will more can out about what some them only could time ' +
  'summarize translate explain compare invoice contract shipment customer refund warranty battery latency throughput ' +
  'kubernetes postgres migration rollback quarterly forecast revenue margin churn onboarding tutorial diagram paragraph ' +
  'Paris Berlin Tokyo 2024 42 3.14 July Monday API JSON HTTP model prompt answer question bullet list table email'
).split(' ');

/**
 * One request line of exactly `lineBytes` bytes (its newline included):
 * a chat request whose message is made-up prose, different on every line, so
 * no count cache helps (as in a real file).
 */
function batchLine(index: number, lineBytes: number, random: () => number): string {
  const frame = (content: string): string =>
    JSON.stringify({
      custom_id: `q-${index}`,
      method: 'POST',
      url: '/v1/chat/completions',
      body: { model: 'gpt-4o-mini', messages: [{ role: 'user', content }], max_tokens: 100 },
    });
  const room = lineBytes - 1 - frame('').length;
  let content = `Request ${index}:`;
  while (content.length < room) content += ` ${WORDS[Math.floor(random() * WORDS.length)]!}`;
  return frame(content.slice(0, room));
}

/** A small deterministic generator (mulberry32), so every run uploads the same files. */
function seeded(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
}

/** Writes `lines` lines to `path`, a few at a time (the bench holds no file either); its size. */
async function writeBatchFile(path: string, lines: number, lineBytes: number): Promise<number> {
  const out = createWriteStream(path);
  const random = seeded(lines);
  for (let i = 0; i < lines; i += 1) {
    if (!out.write(`${batchLine(i, lineBytes, random)}\n`)) await once(out, 'drain');
  }
  out.end();
  await finished(out);
  return statSync(path).size;
}

interface Upload {
  readonly status: number;
  readonly ms: number;
  /** The multipart body's bytes. */
  readonly bytes: number;
  readonly answer: string;
}

/** What an upload has sent so far, and where to pause it (once each) to look at the proxy. */
interface Progress {
  bytes: number;
  readonly pauses: { readonly atBytes: number; readonly run: () => Promise<void> }[];
}

/** `POST {baseUrl}/files`, the multipart body streamed from disk with its content-length. */
async function upload(dispatcher: Agent, baseUrl: string, key: string, file: string, progress: Progress = { bytes: 0, pauses: [] }): Promise<Upload> {
  const boundary = `tollgate-bench-${randomUUID()}`;
  const head = Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="purpose"\r\n\r\nbatch\r\n` +
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="batch.jsonl"\r\nContent-Type: application/jsonl\r\n\r\n`,
  );
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  const bytes = head.byteLength + statSync(file).size + tail.byteLength;
  async function* parts(): AsyncGenerator<Buffer> {
    for (const chunk of [head, createReadStream(file, { highWaterMark: 64 * 1024 }), tail]) {
      for await (const piece of Buffer.isBuffer(chunk) ? [chunk] : (chunk as AsyncIterable<Buffer>)) {
        progress.bytes += piece.byteLength;
        yield piece;
        while (progress.pauses[0] !== undefined && progress.bytes >= progress.pauses[0].atBytes) await progress.pauses.shift()!.run();
      }
    }
  }
  const started = performance.now();
  const res = await request(`${baseUrl}/files`, {
    method: 'POST',
    dispatcher,
    headers: { authorization: `Bearer ${key}`, 'content-type': `multipart/form-data; boundary=${boundary}`, 'content-length': String(bytes) },
    body: Readable.from(parts(), { objectMode: false }),
  });
  const answer = await res.body.text();
  return { status: res.statusCode, ms: performance.now() - started, bytes, answer };
}

/** A process's resident set now and its high-water mark since the last reset, KiB. */
function memoryKiB(pid: number): { rss: number; hwm: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const field = (name: string): number => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? Number.NaN);
  return { rss: field('VmRSS'), hwm: field('VmHWM') };
}

/** `node …args` (plain JS, no loader), resolved with the URL of the first {"url"} line it prints. */
async function startNode(args: string[], env: Record<string, string>): Promise<Child & { url: string }> {
  const child = spawn(process.execPath, args, { cwd: REPO_ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
  const url = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout! }).on('line', (line) => {
      const parsed = (line.startsWith('{') ? JSON.parse(line) : {}) as { url?: string };
      if (parsed.url !== undefined) resolve(parsed.url);
    });
    child.once('exit', (code) => reject(new Error(`${args.join(' ')} exited with ${String(code)} before it listened`)));
  });
  return {
    process: child,
    url,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

interface Measurement {
  /** RSS of the fresh process before its warm-up upload, and at rest after it, KiB. */
  readonly startKiB: number;
  readonly restKiB: number;
  /** The most RSS the process had during the upload, KiB. */
  readonly peakKiB: number;
  /** The most RSS sampled while the client sent the first half of the body, and the second, KiB. */
  readonly firstHalfKiB: number;
  readonly secondHalfKiB: number;
  readonly ms: number;
  readonly mbPerS: number;
  readonly cpuS: number;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Uploads `file` once through `proxy` (a fresh process), measuring its memory; throws on any answer but a whole upload. */
async function measure(proxy: Child & { url: string }, key: string, warmFile: string, file: string): Promise<Measurement> {
  const pid = proxy.process.pid!;
  pin(pid, 1);
  const dispatcher = new Agent({ connections: 1, headersTimeout: 600_000, bodyTimeout: 600_000 });
  try {
    const startKiB = memoryKiB(pid).rss;
    for (let i = 0; i < 2; i += 1) check(await upload(dispatcher, proxy.url, key, warmFile), 'warm-up');
    await sleep(500);
    const restKiB = memoryKiB(pid).rss;
    writeFileSync(`/proc/${pid}/clear_refs`, '5'); // resets VmHWM to the current RSS
    const half = statSync(file).size / 2;
    const sent: Progress = { bytes: 0, pauses: [] };
    const sampled = [restKiB, restKiB];
    const sampler = setInterval(() => {
      const at = sent.bytes <= half ? 0 : 1;
      sampled[at] = Math.max(sampled[at]!, memoryKiB(pid).rss);
    }, SAMPLE_MS);
    const cpuBefore = processCpuMicros(pid) / 1e6;
    const result = await upload(dispatcher, proxy.url, key, file, sent).finally(() => clearInterval(sampler));
    const cpuS = processCpuMicros(pid) / 1e6 - cpuBefore;
    const after = memoryKiB(pid);
    check(result, file);
    return {
      startKiB,
      restKiB,
      peakKiB: Math.max(...sampled, after.hwm, after.rss),
      firstHalfKiB: sampled[0]!,
      secondHalfKiB: Math.max(sampled[1]!, after.rss),
      ms: result.ms,
      mbPerS: result.bytes / 1e6 / (result.ms / 1000),
      cpuS,
    };
  } finally {
    await dispatcher.close();
  }
}

interface Collected {
  readonly rss: number;
  readonly heapUsed: number;
  readonly external: number;
}

/** Asks a proxy's bench/gc-probe.ts for a full collection; resolves with its memory after it (as bench/streams.ts). */
async function collected(pid: number, file: string): Promise<Collected> {
  const lines = (): string[] => (existsSync(file) ? readFileSync(file, 'utf8').trim().split('\n').filter(Boolean) : []);
  const before = lines().length;
  process.kill(pid, 'SIGUSR2');
  const deadline = Date.now() + 30_000;
  for (;;) {
    const now = lines();
    if (now.length > before) return JSON.parse(now.at(-1)!) as Collected;
    if (Date.now() > deadline) throw new Error(`no answer from bench/gc-probe.ts in process ${pid} within 30 s`);
    await sleep(20);
  }
}

/**
 * What a full collection leaves, once it has settled: the smallest of three,
 * 250 ms apart, while the client waits (nothing else runs in the proxy then).
 * V8 frees array buffers' memory after the collection returns, so one
 * collection alone may still count the socket buffers of the last moments as
 * `external` (10–25 MB for the bare hop at full speed).
 */
async function settled(pid: number, file: string): Promise<Collected> {
  let least: Collected | undefined;
  for (let i = 0; i < 3; i += 1) {
    if (i > 0) await sleep(250);
    const now = await collected(pid, file);
    if (least === undefined || liveMB(now) < liveMB(least)) least = now;
  }
  return least!;
}

/** What the proxy keeps alive (V8 heap and the buffers outside it) after a full collection, MB. */
const liveMB = (c: Collected): number => (c.heapUsed + c.external) / 1e6;

interface Live {
  /** Live memory at rest after the warm-up, MB. */
  readonly restMB: number;
  /** Live memory over rest, with half the file sent and with 95% of it sent, MB. */
  readonly halfMB: number;
  readonly nearEndMB: number;
}

/**
 * Uploads `file` once through `proxy` (started with bench/gc-probe.ts), pausing
 * the client at half and at 95% of the file for a full collection in the
 * proxy: what the upload keeps alive at that point, garbage aside. A memory
 * that does not grow with the file is the same at both points and at every size.
 */
async function measureLive(proxy: Child & { url: string }, gcFile: string, key: string, warmFile: string, file: string): Promise<Live> {
  const pid = proxy.process.pid!;
  pin(pid, 1);
  const dispatcher = new Agent({ connections: 1, headersTimeout: 600_000, bodyTimeout: 600_000 });
  try {
    for (let i = 0; i < 2; i += 1) check(await upload(dispatcher, proxy.url, key, warmFile), 'warm-up');
    await sleep(500);
    const rest = await settled(pid, gcFile);
    const size = statSync(file).size;
    const seen: Collected[] = [];
    const pauses = [0.5, 0.95].map((fraction) => ({ atBytes: fraction * size, run: async () => void seen.push(await settled(pid, gcFile)) }));
    check(await upload(dispatcher, proxy.url, key, file, { bytes: 0, pauses }), file);
    const [half, nearEnd] = seen;
    if (half === undefined || nearEnd === undefined) throw new Error('the upload ended before both collections');
    return { restMB: liveMB(rest), halfMB: liveMB(half) - liveMB(rest), nearEndMB: liveMB(nearEnd) - liveMB(rest) };
  } finally {
    await dispatcher.close();
  }
}

/** A 200 whose file object says the upstream received the whole multipart body. */
function check(result: Upload, what: string): void {
  let bytes: unknown;
  try {
    bytes = (JSON.parse(result.answer) as { bytes?: unknown }).bytes;
  } catch {
    // not JSON: reported below
  }
  if (result.status !== 200 || bytes !== result.bytes) {
    throw new Error(`upload of ${what} answered ${result.status} (upstream saw ${String(bytes)} of ${result.bytes} bytes): ${result.answer.slice(0, 500)}`);
  }
}

/** A key issued as an operator would, with the CLI, on the bench's database. */
function issueKeyWithCli(dbPath: string): string {
  const out = execFileSync(
    process.execPath,
    [tollgateEntry(), 'keys', 'create', '--name', 'bench', '--limit', 'requests:100000/min', '--budget-usd', '1000000', '--budget-period', 'month', '--json'],
    { env: { ...process.env, TOLLGATE_DB: dbPath }, encoding: 'utf8' },
  );
  return (JSON.parse(out) as { key: string }).key;
}

const mb = (kib: number): number => (kib * 1024) / 1e6;

export async function runBatchUploadBench(
  options: {
    quick?: boolean;
    rounds?: number;
    priority?: number;
    /** Each line's bytes (default 2048; 4096 makes the largest file 205 MB). */
    lineBytes?: number;
  } = {},
): Promise<BenchResult[]> {
  if (options.priority !== undefined) {
    setPriority(options.priority);
    if (existsSync('/proc/self/autogroup')) writeFileSync('/proc/self/autogroup', String(options.priority));
  }
  const rounds = options.rounds ?? (options.quick ? 1 : 3);
  const lineBytes = options.lineBytes ?? LINE_BYTES;
  // The client and the upstream on core 0 (children inherit it), each proxy alone on core 1.
  spawnSync('taskset', ['-p', '-c', '0', String(process.pid)], { stdio: 'ignore' });
  const scratch = mkdtempSync(join(tmpdir(), 'tollgate-bench-batch-'));
  const dbPath = join(scratch, 'bench.db');
  let upstream: (Child & { url: string }) | undefined;
  try {
    const files = new Map<string, { path: string; bytes: number }>();
    const sizes = LINE_COUNTS.map((lines) => ({ lines, label: `${Math.round((lines * lineBytes) / 1e6)} MB` }));
    for (const size of sizes) {
      const path = join(scratch, `${size.lines}.jsonl`);
      files.set(size.label, { path, bytes: await writeBatchFile(path, size.lines, lineBytes) });
    }
    const warmFile = join(scratch, 'warm.jsonl');
    await writeBatchFile(warmFile, WARM_LINES, lineBytes);
    const key = issueKeyWithCli(dbPath);
    upstream = await startChild([plainJs('bench/drain-upstream.ts')]);
    const upstreamUrl = upstream.url;
    const gcProbe = plainJs('bench/gc-probe.ts');
    /** A fresh proxy; with `gcFile`, it answers bench/gc-probe.ts's full collections. */
    const start = (proxy: ProxyName, gcFile?: string): Promise<Child & { url: string }> => {
      const probe = gcFile === undefined ? [] : ['--expose-gc', '--import', gcProbe];
      const env: Record<string, string> = gcFile === undefined ? {} : { TOLLGATE_BENCH_GC_FILE: gcFile };
      return proxy === 'bare hop'
        ? startNode([...probe, plainJs('bench/bare-proxy.ts'), upstreamUrl], env)
        : startTollgate(
            {
              ...env,
              TOLLGATE_UPSTREAM_URL: upstreamUrl,
              TOLLGATE_UPSTREAM_KEY: UPSTREAM_KEY,
              TOLLGATE_DB: dbPath,
              TOLLGATE_LOG_LEVEL: 'info',
              TOLLGATE_MAX_BATCH_FILE: '256mb',
            },
            gcFile === undefined ? [] : ['--expose-gc'],
            gcFile === undefined ? [] : ['bench/gc-probe.ts'],
          );
    };
    // The bare hop forwards the client's authorization; the drain upstream reads none.
    const keyOf = (proxy: ProxyName): string => (proxy === 'bare hop' ? UPSTREAM_KEY : key);
    const peaks = new Map<string, Measurement[]>();
    const lives = new Map<string, Live[]>();
    const add = <T>(map: Map<string, T[]>, name: string, value: T): void => void map.set(name, [...(map.get(name) ?? []), value]);
    for (let round = 0; round < rounds; round += 1) {
      const cases = shuffled(
        sizes.flatMap((size) => PROXIES.flatMap((proxy) => (['peak', 'live'] as const).map((pass) => ({ size: size.label, proxy, pass })))),
      );
      for (const { size, proxy, pass } of cases) {
        const file = files.get(size)!.path;
        const gcFile = pass === 'live' ? join(scratch, `gc-${round}-${proxy.replace(' ', '-')}-${size.replace(' ', '')}.ndjson`) : undefined;
        const server = await start(proxy, gcFile);
        try {
          const what = `batch-upload round ${round + 1}: ${size} through the ${proxy}`;
          if (gcFile === undefined) {
            const m = await measure(server, keyOf(proxy), warmFile, file);
            add(peaks, `${size} ${proxy}`, m);
            process.stderr.write(
              `${what}: RSS at rest ${mb(m.restKiB).toFixed(1)} MB, peak ${mb(m.peakKiB).toFixed(1)} MB (+${mb(m.peakKiB - m.restKiB).toFixed(1)}; ` +
                `sampled over the first half ${mb(m.firstHalfKiB).toFixed(1)}, the second ${mb(m.secondHalfKiB).toFixed(1)}), ` +
                `${(m.ms / 1000).toFixed(2)} s, ${m.mbPerS.toFixed(1)} MB/s, CPU ${m.cpuS.toFixed(2)} s\n`,
            );
          } else {
            const l = await measureLive(server, gcFile, keyOf(proxy), warmFile, file);
            add(lives, `${size} ${proxy}`, l);
            process.stderr.write(
              `${what}: live after a full GC at rest ${l.restMB.toFixed(1)} MB, over it at half the file ${l.halfMB.toFixed(2)} MB, at 95% ${l.nearEndMB.toFixed(2)} MB\n`,
            );
          }
        } finally {
          await server.stop();
        }
      }
    }
    const results: BenchResult[] = [];
    const growth = (s: Measurement[]): number => median(s.map((m) => mb(m.peakKiB - m.restKiB)));
    const of = <T>(map: Map<string, T[]>, size: string, proxy: ProxyName): T[] => map.get(`${size} ${proxy}`)!;
    for (const size of sizes) {
      const bare = of(peaks, size.label, 'bare hop');
      for (const proxy of PROXIES) {
        const s = of(peaks, size.label, proxy);
        const l = of(lives, size.label, proxy);
        const ratio = proxy === 'tollgate' ? `; ${(growth(s) / Math.max(growth(bare), 0.1)).toFixed(1)}× the bare hop's growth` : '';
        results.push(
          {
            name: `batch upload ${size.label} ${proxy}: peak RSS growth`,
            value: growth(s),
            unit: 'MB',
            note:
              `at rest ${median(s.map((m) => mb(m.restKiB))).toFixed(1)} MB (fresh ${median(s.map((m) => mb(m.startKiB))).toFixed(1)}), peak ${median(s.map((m) => mb(m.peakKiB))).toFixed(1)} MB ` +
              `(first half ${median(s.map((m) => mb(m.firstHalfKiB))).toFixed(1)}, second ${median(s.map((m) => mb(m.secondHalfKiB))).toFixed(1)})${ratio}; median of ${rounds}`,
          },
          {
            name: `batch upload ${size.label} ${proxy}: live growth at 95%`,
            value: median(l.map((m) => m.nearEndMB)),
            unit: 'MB',
            note: `heap + external after a full GC, over ${median(l.map((m) => m.restMB)).toFixed(1)} MB at rest; at half the file ${median(l.map((m) => m.halfMB)).toFixed(2)} MB; median of ${rounds}`,
          },
          {
            name: `batch upload ${size.label} ${proxy}: throughput`,
            value: median(s.map((m) => m.mbPerS)),
            unit: 'MB/s',
            note: `${(median(s.map((m) => m.ms)) / 1000).toFixed(2)} s, proxy CPU ${median(s.map((m) => m.cpuS)).toFixed(2)} s; median of ${rounds}`,
          },
        );
      }
    }
    const big = sizes[0]!;
    const small = sizes[sizes.length - 1]!;
    results.push({
      name: `batch upload tollgate: peak growth ${big.label} ÷ ${small.label}`,
      value: growth(of(peaks, big.label, 'tollgate')) / Math.max(growth(of(peaks, small.label, 'tollgate')), 0.1),
      unit: '×',
      note: `the file is ${(files.get(big.label)!.bytes / files.get(small.label)!.bytes).toFixed(0)}× larger; the bare hop's: ${(growth(of(peaks, big.label, 'bare hop')) / Math.max(growth(of(peaks, small.label, 'bare hop')), 0.1)).toFixed(2)}×`,
    });
    return results;
  } finally {
    await upstream?.stop();
    rmSync(scratch, { recursive: true, force: true });
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const arg = (name: string): string | undefined => {
    const i = process.argv.indexOf(name);
    return i === -1 ? undefined : process.argv[i + 1];
  };
  printTable(
    await runBatchUploadBench({
      quick: process.argv.includes('--quick'),
      ...(arg('--rounds') === undefined ? {} : { rounds: Number(arg('--rounds')) }),
      ...(arg('--priority') === undefined ? {} : { priority: Number(arg('--priority')) }),
      ...(arg('--line-bytes') === undefined ? {} : { lineBytes: Number(arg('--line-bytes')) }),
    }),
  );
}
