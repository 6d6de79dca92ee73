/**
 * Estimator benchmark: `npx tsx bench/estimate.ts [--quick]`. Prints medians of several runs;
 * the machines are small and shared, so read single-digit-percent differences as noise.
 */
import { pathToFileURL } from 'node:url';
import { Tiktoken } from 'js-tiktoken/lite';
import o200kRanks from 'js-tiktoken/ranks/o200k_base';
import {
  builtinPriceTable,
  clearEstimateCache,
  closeEstimator,
  configureEstimator,
  estimateRequest,
  estimateRequestSync,
  warmEstimator,
} from '../src/estimate/index.js';
import type { Endpoint } from '../src/endpoints.js';
import { countTextTokens, loadEncoding, loadEncodingSync, peekEncoding } from '../src/estimate/tokenizer.js';
import { uniquePrompt } from './support.js';

/** One benchmark result row. */
export interface BenchResult {
  name: string;
  value: number;
  unit: string;
  note?: string;
}

const options = { prices: builtinPriceTable, defaultMaxCompletionTokens: 1_000 };

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? (sorted[middle] as number) : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2;
}

const WORDS = [
  'the',
  'request',
  'budget',
  'token',
  'ledger',
  'function',
  'return',
  'value',
  'const',
  '{"id": 42,',
  '"name": "x"}',
  'quickly',
  'because',
  'system',
  'prompt',
  'users',
  'weather',
  'Paris',
  'données',
  '日本語',
  '😀',
  'x = y + 1;',
  '\n',
];

function prose(chars: number, seed: number): string {
  const parts: string[] = [];
  let length = 0;
  let state = seed >>> 0 || 1;
  while (length < chars) {
    state = (state * 1103515245 + 12345) >>> 0;
    const word = WORDS[state % WORDS.length] as string;
    parts.push(word);
    length += word.length + 1;
  }
  return parts.join(' ').slice(0, chars);
}

function randomBase64(chars: number): string {
  const bytes = Buffer.alloc(Math.ceil((chars * 3) / 4));
  let state = 7;
  for (let i = 0; i < bytes.length; i++) {
    state = (state * 1103515245 + 12345) >>> 0;
    bytes[i] = state >>> 24;
  }
  return bytes.toString('base64').slice(0, chars);
}

/** A ~1.3 KB chat body: system prompt, a tool, three turns. `salt` makes its texts unseen. */
function smallChatBody(salt: string): Record<string, unknown> {
  return {
    model: 'gpt-4o-mini',
    messages: [
      { role: 'system', content: `You are a helpful assistant for an online shop. Answer briefly and cite the order id. ${salt}` },
      { role: 'user', content: `Where is my order 1234? It was supposed to arrive on Monday and I still have nothing. ${salt}` },
      { role: 'assistant', content: `Let me check the status of order 1234 for you. One moment please. ${salt}` },
      { role: 'user', content: `Thanks. Also, can I change the delivery address to my office? ${salt}` },
      {
        role: 'assistant',
        content: `Order 1234 left our warehouse on Friday and is with the carrier; the address can still be changed until it is out for delivery. ${salt}`,
      },
      { role: 'user', content: `Great, please use 221B Baker Street, London NW1 6XE, and tell me the new delivery date. ${salt}` },
    ],
    tools: [
      {
        type: 'function',
        function: {
          name: 'get_order_status',
          description: 'Look up the shipping status of an order by its id',
          parameters: {
            type: 'object',
            properties: {
              order_id: { type: 'string', description: 'The order id, digits only' },
              include_history: { type: 'boolean', description: 'Whether to include every tracking event' },
              address: { type: 'object', properties: { street: { type: 'string' }, city: { type: 'string' }, zip: { type: 'string' } } },
            },
            required: ['order_id'],
          },
        },
      },
    ],
    max_tokens: 300,
  };
}

function longChatBody(turns: number, charsPerTurn: number, salt: number): Record<string, unknown> {
  const messages = [{ role: 'system', content: prose(1_000, 1) }];
  for (let i = 0; i < turns; i++) messages.push({ role: i % 2 ? 'assistant' : 'user', content: prose(charsPerTurn, salt * 1_000 + i) });
  return { model: 'gpt-4.1', messages, max_tokens: 500 };
}

function timeMicros(run: () => unknown, iterations: number): number {
  const started = performance.now();
  for (let i = 0; i < iterations; i++) run();
  return ((performance.now() - started) * 1_000) / iterations;
}

async function worstBlock(work: () => Promise<unknown>): Promise<{ blockedMs: number; totalMs: number }> {
  let worst = 0;
  let last = performance.now();
  const timer = setInterval(() => {
    const now = performance.now();
    worst = Math.max(worst, now - last);
    last = now;
  }, 1);
  const started = performance.now();
  await work();
  const totalMs = performance.now() - started;
  // One more tick so a block at the very end is seen.
  await new Promise((resolve) => setTimeout(resolve, 2));
  clearInterval(timer);
  return { blockedMs: worst, totalMs };
}

/** Runs the estimator benchmarks and returns one row per measurement. */
export async function runEstimateBench(opts: { quick?: boolean } = {}): Promise<BenchResult[]> {
  const quick = opts.quick ?? false;
  const runs = quick ? 3 : 7;
  const results: BenchResult[] = [];

  // Memory and load time of the encoders, measured first, before anything else loads them.
  if (!peekEncoding('o200k_base')) {
    const gc = (globalThis as { gc?: () => void }).gc;
    gc?.();
    const before = process.memoryUsage();
    const started = performance.now();
    loadEncodingSync('o200k_base');
    const loadMs = performance.now() - started;
    gc?.();
    const after = process.memoryUsage();
    results.push({ name: 'o200k_base load (sync)', value: loadMs, unit: 'ms', note: 'once per process and thread' });
    results.push({
      name: 'o200k_base heap delta',
      value: (after.heapUsed - before.heapUsed) / 1e6,
      unit: 'MB',
      note: gc ? 'after gc' : 'no --expose-gc: upper bound',
    });
    results.push({ name: 'o200k_base RSS delta', value: (after.rss - before.rss) / 1e6, unit: 'MB' });
  }
  if (!peekEncoding('cl100k_base')) {
    const { blockedMs, totalMs } = await worstBlock(() => loadEncoding('cl100k_base'));
    results.push({
      name: 'cl100k_base load (async, sliced)',
      value: totalMs,
      unit: 'ms',
      note: `worst event-loop block ${blockedMs.toFixed(1)} ms (module compile)`,
    });
  }

  // Small chat body: warm (seen before) and cold (every text new).
  const warmBody = smallChatBody('warm');
  results.push({ name: 'small chat body size', value: JSON.stringify(warmBody).length, unit: 'bytes' });
  estimateRequestSync('chat', warmBody, options);
  const iterations = quick ? 2_000 : 10_000;
  results.push({
    name: 'small chat estimate, warm (sync)',
    value: median(Array.from({ length: runs }, () => timeMicros(() => estimateRequestSync('chat', warmBody, options), iterations))),
    unit: 'µs',
    note: 'history and tools seen before',
  });
  const asyncSamples: number[] = [];
  for (let r = 0; r < runs; r++) {
    const started = performance.now();
    for (let i = 0; i < iterations / 10; i++) await estimateRequest('chat', warmBody, options);
    asyncSamples.push(((performance.now() - started) * 1_000) / (iterations / 10));
  }
  results.push({ name: 'small chat estimate, warm (async)', value: median(asyncSamples), unit: 'µs' });
  let salt = 0;
  results.push({
    name: 'small chat estimate, cold texts',
    value: median(Array.from({ length: runs }, () => timeMicros(() => estimateRequestSync('chat', smallChatBody(`#${salt++}`), options), quick ? 200 : 1_000))),
    unit: 'µs',
    note: 'every message new; tools block cached',
  });

  // Long conversation: 50 turns, ~60 KB.
  const longBody = longChatBody(50, 1_200, 1);
  results.push({ name: 'long chat body size', value: JSON.stringify(longBody).length, unit: 'bytes', note: '50 turns' });
  const coldLong = Array.from({ length: runs }, (_, r) => {
    const body = longChatBody(50, 1_200, 100 + r);
    return timeMicros(() => estimateRequestSync('chat', body, options), 1) / 1_000;
  });
  results.push({ name: 'long chat estimate, cold (sync)', value: median(coldLong), unit: 'ms' });
  const longMessages = longBody['messages'] as unknown[];
  const nextTurn = { ...longBody, messages: [...longMessages, { role: 'user', content: prose(1_200, 999_999) }] };
  estimateRequestSync('chat', longBody, options);
  results.push({
    name: 'long chat estimate, next turn (sync)',
    value: median(Array.from({ length: runs }, () => timeMicros(() => estimateRequestSync('chat', nextTurn, options), quick ? 50 : 200))),
    unit: 'µs',
    note: 'earlier 50 turns cached',
  });

  // Raw tokenizer throughput on normal text, against js-tiktoken on the same text.
  const encoding = loadEncodingSync('o200k_base');
  const megabyte = prose(1_000_000, 42);
  const mbps = Array.from({ length: runs }, () => {
    encoding.pieceCache.clear();
    const started = performance.now();
    countTextTokens(megabyte, encoding);
    return 1 / ((performance.now() - started) / 1_000);
  });
  results.push({ name: 'tokenizer throughput, cold piece cache', value: median(mbps), unit: 'MB/s', note: '1 MB mixed prose/code/JSON/CJK/emoji' });
  const reference = new Tiktoken(o200kRanks);
  const sample = megabyte.slice(0, quick ? 100_000 : 300_000);
  const referenceMbps = median(
    Array.from({ length: quick ? 1 : 3 }, () => {
      const started = performance.now();
      reference.encode(sample, [], []);
      return sample.length / 1e6 / ((performance.now() - started) / 1_000);
    }),
  );
  results.push({ name: 'js-tiktoken encode throughput (reference)', value: referenceMbps, unit: 'MB/s', note: 'same text' });

  // One unique 1 KB prompt at a time, as a proxy counts them (docs/performance.md, "The tokenizer
  // reads bytes"): all ASCII, with a few chars beyond it, half CJK. Best of several passes, each over
  // prompts no pass has counted.
  const fillers = {
    ascii: undefined, // the prose of every bench's unique body (support.ts)
    'a few chars beyond ASCII': 'The “quick” brown fox jumps over the lazy dog near the café at dawn. ',
    'half CJK': '日本語のテキスト and some English words 中文字符 here. ',
  };
  const prompts = quick ? 1_000 : 2_000;
  for (const [name, filler] of Object.entries(fillers)) {
    const texts = Array.from({ length: prompts * (runs + 1) }, (_, i) => uniquePrompt(i, filler));
    const perPrompt = Array.from({ length: runs + 1 }, (_, pass) => {
      const started = performance.now();
      for (let i = pass * prompts; i < (pass + 1) * prompts; i++) countTextTokens(texts[i]!, encoding);
      return ((performance.now() - started) * 1_000) / prompts;
    });
    results.push({
      name: `tokenizer, one unique 1 KB prompt: ${name}`,
      value: Math.min(...perPrompt.slice(1)),
      unit: 'µs',
      note: 'best pass after one of warm-up',
    });
  }

  // Worst event-loop block on hostile or huge bodies through the async path.
  configureEstimator({ workerThreads: 1 });
  await warmEstimator({ startWorkers: true });
  clearEstimateCache();
  // Each sample gets its own text (a numbered prefix) so neither thread's cache answers it.
  const hostile: Array<[string, Endpoint, (sample: number) => Record<string, unknown>]> = [
    ['10 KB of "a"', 'chat', (i) => ({ model: 'gpt-4o', messages: [{ role: 'user', content: `${i} ${'a'.repeat(10_000)}` }] })],
    ['1 MB of "a"', 'chat', (i) => ({ model: 'gpt-4.1', messages: [{ role: 'user', content: `${i} ${'a'.repeat(1_000_000)}` }] })],
    [
      '1 MB random letters',
      'chat',
      (i) => ({ model: 'gpt-4.1', messages: [{ role: 'user', content: `${i} ${randomBase64(1_000_000).replace(/[^a-z]/g, 'q')}` }] }),
    ],
    ['5 MB random base64 text', 'chat', (i) => ({ model: 'gpt-5.4', messages: [{ role: 'user', content: `${i} ${randomBase64(5_000_000)}` }] })],
    ['10k tiny messages', 'chat', (i) => ({ model: 'gpt-4.1', messages: Array.from({ length: 10_000 }, (_, j) => ({ role: 'user', content: `m${i}.${j}` })) })],
    [
      '4 KB random letters (inline, just under offload)',
      'chat',
      (i) => ({ model: 'gpt-4o', messages: [{ role: 'user', content: `${i} ${randomBase64(4_000).replace(/[^a-z]/g, 'q')}` }] }),
    ],
  ];
  let sampleId = 0;
  for (const [name, endpoint, makeBody] of hostile) {
    const samples = [];
    for (let r = 0; r < (quick ? 1 : 3); r++) {
      const body = makeBody(sampleId++);
      samples.push(await worstBlock(() => estimateRequest(endpoint, body, options)));
    }
    const blocked = median(samples.map((s) => s.blockedMs));
    results.push({
      name: `worst event-loop block: ${name}`,
      value: blocked,
      unit: 'ms',
      note: `latency ${median(samples.map((s) => s.totalMs)).toFixed(0)} ms`,
    });
  }
  const syncHuge =
    timeMicros(() => estimateRequestSync('chat', { model: 'gpt-4.1', messages: [{ role: 'user', content: 'a'.repeat(1_000_000) }] }, options), 1) / 1_000;
  results.push({ name: 'sync estimate of 1 MB of "a" (no offload)', value: syncHuge, unit: 'ms', note: 'what the worker spends' });
  await closeEstimator();
  return results;
}

function printTable(rows: BenchResult[]): void {
  const nameWidth = Math.max(...rows.map((r) => r.name.length));
  for (const row of rows) {
    const value = row.value >= 100 ? row.value.toFixed(0) : row.value >= 10 ? row.value.toFixed(1) : row.value.toFixed(2);
    console.log(`${row.name.padEnd(nameWidth)}  ${value.padStart(9)} ${row.unit.padEnd(5)} ${row.note ?? ''}`);
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  printTable(await runEstimateBench({ quick: process.argv.includes('--quick') }));
}
