/**
 * The floor under Tollgate's CPU per request: the least a proxy on Tollgate's stack does, in steps,
 * so bench/floor.ts can put each beside the bare node:http hop and Tollgate.
 *
 * - `stack`: hono on @hono/node-server, the body read from Node's request, sent on with an undici
 *   Pool, the answer read whole and returned (Tollgate's stack with none of Tollgate's work).
 * - `count`: `stack`, plus a key looked up in a Map and the prompt's messages counted with
 *   Tollgate's own tokenizer (`countTextTokens`, o200k_base) and priced: what a token limit and a
 *   budget need before admitting.
 * - `exact`: `count`, plus the two ledger writes exactness needs: a pending row committed to SQLite
 *   (WAL, synchronous NORMAL, as Tollgate opens it) before the request is sent, and the row settled
 *   with the answer's usage after, each grouped with the rest of its event-loop turn into one
 *   transaction, as Tollgate's writer does.
 * - `tollgate-estimate`, `tollgate-ledger`, `tollgate-both`: `exact` with Tollgate's own estimate
 *   (`openBody` and its estimate, src/estimate/index.ts), its own ledger writer (its schema,
 *   rollups and name bounds, src/storage/sqlite/ledger-writer.ts), or both, in place of the least.
 *
 * No limits, budgets, logging, metrics, headers of its own or error handling beyond what the stack
 * does: a floor, not a gateway. Run as plain JavaScript (bench/floor.ts transpiles it beside
 * node_modules, and Tollgate's modules come from its build), never under tsx, whose closure
 * wrappers would raise the floor.
 *
 * Usage: node floor-hop.mjs <upstream-base-url> <mode> <tollgate-dist-dir> [db-path] [key]
 * (prints {"url": …} when listening)
 */
import { serve } from '@hono/node-server';
import Database from 'better-sqlite3';
import { Hono } from 'hono';
import { Pool } from 'undici';
import type { IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type * as EstimateModule from '../src/estimate/index.js';
import type * as WriterModule from '../src/storage/sqlite/ledger-writer.js';
import type * as OpenModule from '../src/storage/sqlite/open.js';
import type { LoadedEncoding } from '../src/estimate/tokenizer.js';

/** How the prompt is counted and how the ledger is written: not at all, the floor's least, or Tollgate's own code. */
type Part = 'none' | 'floor' | 'tollgate';
const MODES: Record<string, { count: Part; ledger: Part }> = {
  stack: { count: 'none', ledger: 'none' },
  count: { count: 'floor', ledger: 'none' },
  exact: { count: 'floor', ledger: 'floor' },
  'tollgate-estimate': { count: 'tollgate', ledger: 'floor' },
  'tollgate-ledger': { count: 'floor', ledger: 'tollgate' },
  'tollgate-both': { count: 'tollgate', ledger: 'tollgate' },
};
const [upstreamArg, modeArg, distDir, dbPath, keyArg] = process.argv.slice(2);
const upstream = new URL(upstreamArg ?? 'http://127.0.0.1:1/v1');
const mode = MODES[modeArg ?? ''];
if (mode === undefined) throw new Error(`mode must be one of ${Object.keys(MODES).join(', ')}, not ${modeArg}`);
const basePath = upstream.pathname.replace(/\/+$/, '');
const pool = new Pool(upstream.origin, { connections: 256 });
const upstreamKey = 'sk-bench-upstream';
const built = (module: string): Promise<unknown> => import(pathToFileURL(join(distDir!, module)).href);

interface Tokenizer {
  loadEncodingSync(name: 'o200k_base'): LoadedEncoding;
  countTextTokens(text: string, encoding: LoadedEncoding): number;
}
const tokenizer = mode.count === 'floor' ? ((await built('estimate/tokenizer.js')) as Tokenizer) : undefined;
const encoding = tokenizer?.loadEncodingSync('o200k_base');
type Estimator = Pick<typeof EstimateModule, 'openBody' | 'builtinPriceTable' | 'warmEstimator'>;
const estimator = mode.count === 'tollgate' ? ((await built('estimate/index.js')) as Estimator) : undefined;
await estimator?.warmEstimator({ encodings: ['o200k_base'] });
const prices = estimator?.builtinPriceTable;
const keys = new Map([[keyArg ?? 'tg-floor-key', { id: 'k1', inputMicrosPerToken: 0.15, outputMicrosPerToken: 0.6 }]]);

/** The prompt's tokens and their price, counted as {@link mode} says. */
async function countPrompt(bytes: Buffer, key: { inputMicrosPerToken: number }): Promise<{ model: string; tokens: number; costMicros: number }> {
  if (estimator !== undefined) {
    const opened = await estimator.openBody('chat', bytes);
    const estimate = await opened.estimate({ prices: prices!, defaultMaxCompletionTokens: 4096 });
    return { model: estimate.model, tokens: estimate.promptTokens, costMicros: estimate.reservedMicroUsd };
  }
  const body = JSON.parse(bytes.toString('utf8')) as { model: string; messages?: Array<{ content?: unknown }> };
  const tokens = countMessages(body);
  return { model: body.model, tokens, costMicros: Math.ceil(tokens * key.inputMicrosPerToken) };
}

/** The prompt's tokens: each message's text, plus the chat format's 3 per message and 3 for the reply. */
function countMessages(body: { messages?: Array<{ content?: unknown }> }): number {
  let tokens = 3;
  for (const message of body.messages ?? []) {
    tokens += 3;
    if (typeof message.content === 'string') tokens += tokenizer!.countTextTokens(message.content, encoding!);
  }
  return tokens;
}

interface Settlement {
  readonly id: string;
  readonly promptTokens: number;
  readonly completionTokens: number;
  readonly costMicros: number;
}

interface FloorLedger {
  begin(id: string, keyId: string, model: string, promptTokens: number, costMicros: number): Promise<void>;
  complete(settlement: Settlement): void;
}

/** The least: one table, writes grouped per event-loop turn into one transaction; `begin` resolves once committed. */
class LeastLedger implements FloorLedger {
  private readonly sqlite: Database.Database;
  private readonly insert: Database.Statement;
  private readonly settle: Database.Statement;
  private pending: Array<{ row: unknown[]; done: () => void }> = [];
  private settlements: unknown[][] = [];
  private scheduled = false;

  constructor(path: string) {
    this.sqlite = new Database(path);
    this.sqlite.pragma('journal_mode = WAL');
    this.sqlite.pragma('synchronous = NORMAL');
    this.sqlite.exec(`CREATE TABLE IF NOT EXISTS floor_ledger (
      id TEXT PRIMARY KEY, key_id TEXT NOT NULL, model TEXT NOT NULL, status TEXT NOT NULL,
      est_prompt_tokens INTEGER NOT NULL, est_cost_micros INTEGER NOT NULL,
      prompt_tokens INTEGER, completion_tokens INTEGER, cost_micros INTEGER,
      created_at INTEGER NOT NULL, settled_at INTEGER)`);
    this.insert = this.sqlite.prepare(
      `INSERT INTO floor_ledger (id, key_id, model, status, est_prompt_tokens, est_cost_micros, created_at) VALUES (?, ?, ?, 'pending', ?, ?, ?)`,
    );
    this.settle = this.sqlite.prepare(
      `UPDATE floor_ledger SET status = 'ok', prompt_tokens = ?, completion_tokens = ?, cost_micros = ?, settled_at = ? WHERE id = ? AND status = 'pending'`,
    );
  }

  begin(id: string, keyId: string, model: string, promptTokens: number, costMicros: number): Promise<void> {
    return new Promise((done) => {
      this.pending.push({ row: [id, keyId, model, promptTokens, costMicros, Date.now()], done });
      this.schedule();
    });
  }

  complete(settlement: Settlement): void {
    this.settlements.push([settlement.promptTokens, settlement.completionTokens, settlement.costMicros, Date.now(), settlement.id]);
    this.schedule();
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      const [pending, settlements] = [this.pending, this.settlements];
      this.pending = [];
      this.settlements = [];
      this.sqlite.transaction(() => {
        for (const { row } of pending) this.insert.run(row);
        for (const row of settlements) this.settle.run(row);
      })();
      for (const { done } of pending) done();
    });
  }
}

/** Tollgate's own writer (its schema, rollups, name bounds) on a database made by bench/floor.ts with one key in it. */
async function tollgateLedger(path: string): Promise<FloorLedger> {
  const { openDatabase } = (await built('storage/sqlite/open.js')) as typeof OpenModule;
  const { SqliteLedgerWriter } = (await built('storage/sqlite/ledger-writer.js')) as typeof WriterModule;
  const database = openDatabase(path);
  const keyId = (database.sqlite.prepare('SELECT id FROM api_keys').get() as { id: string }).id;
  const writer = new SqliteLedgerWriter(database);
  return {
    begin: (id, _keyId, model, promptTokens, costMicros) =>
      writer.begin({
        requestId: id,
        keyId,
        tenantId: null,
        createdAt: Date.now(),
        endpoint: 'chat',
        model,
        stream: false,
        estPromptTokens: promptTokens,
        estCompletionTokens: 0,
        estCostMicros: costMicros,
        priceKnown: true,
      }),
    complete: (settlement) =>
      writer.complete({
        requestId: settlement.id,
        completedAt: Date.now(),
        status: 'ok',
        httpStatus: 200,
        promptTokens: settlement.promptTokens,
        cachedTokens: 0,
        completionTokens: settlement.completionTokens,
        reasoningTokens: 0,
        costMicros: settlement.costMicros,
        usageSource: 'reported',
        latencyMs: 1,
        ttftMs: null,
        upstreamRequestId: null,
        errorCode: null,
      }),
  };
}

const ledger = mode.ledger === 'floor' ? new LeastLedger(dbPath!) : mode.ledger === 'tollgate' ? await tollgateLedger(dbPath!) : undefined;
let serial = 0;

/** The body from Node's request, as Tollgate reads it (src/http/client-request.ts: no web stream). */
function readBody(incoming: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    incoming.on('data', (chunk: Buffer) => chunks.push(chunk));
    incoming.once('end', () => resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)));
    incoming.once('error', reject);
  });
}

const app = new Hono<{ Bindings: { incoming: IncomingMessage } }>();
app.post('/v1/*', async (c) => {
  const bytes = await readBody(c.env.incoming);
  let id: string | undefined;
  let key: { id: string; inputMicrosPerToken: number; outputMicrosPerToken: number } | undefined;
  if (mode.count !== 'none') {
    key = keys.get((c.req.header('authorization') ?? '').replace(/^Bearer /, ''));
    if (key === undefined) return c.json({ error: { message: 'unknown key' } }, 401);
    const prompt = await countPrompt(bytes, key);
    if (ledger !== undefined) {
      id = `req-${process.pid}-${(serial += 1)}`;
      await ledger.begin(id, key.id, prompt.model, prompt.tokens, prompt.costMicros);
    }
  }
  const answer = await pool.request({
    method: 'POST',
    path: basePath + c.req.path.replace(/^\/v1/, ''),
    headers: { 'content-type': 'application/json', authorization: `Bearer ${upstreamKey}` },
    body: bytes,
  });
  const reply = Buffer.from(await answer.body.arrayBuffer());
  if (ledger !== undefined && key !== undefined && answer.statusCode === 200) {
    const usage = (JSON.parse(reply.toString('utf8')) as { usage: { prompt_tokens: number; completion_tokens: number } }).usage;
    const cost = Math.ceil(usage.prompt_tokens * key.inputMicrosPerToken + usage.completion_tokens * key.outputMicrosPerToken);
    ledger.complete({ id: id!, promptTokens: usage.prompt_tokens, completionTokens: usage.completion_tokens, costMicros: cost });
  }
  return c.body(reply, answer.statusCode as 200, { 'content-type': 'application/json' });
});

const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, (info: AddressInfo) => {
  process.stdout.write(`${JSON.stringify({ url: `http://127.0.0.1:${info.port}/v1` })}\n`);
});
server.on('error', (error) => {
  throw error;
});
process.on('SIGTERM', () => process.exit(0));
