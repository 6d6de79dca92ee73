/**
 * The ledger against the provider's own reports, cell by cell: one cell per
 * UTC day, model and (with a project mapping) project. Pure: no I/O, the
 * price table comes in as a function.
 *
 * - Models are compared by their undated name (`gpt-4o-mini-2024-07-18` and
 *   `gpt-4o-mini` are one model), lower-case.
 * - A cell matches when its requests, tokens (input, cache reads, cache
 *   writes, output) and USD agree within the tolerance (a percentage of the
 *   larger side); USD may also differ by one micro-dollar per request, since
 *   the ledger rounds each request up to the micro-dollar and the provider
 *   sums exact amounts. Requests are not compared when the provider's report
 *   does not count them (Anthropic's).
 * - A price entry is flagged when the provider's cost of a model's input or
 *   output tokens over the whole range, divided by those tokens, is not the
 *   table's price within the tolerance. Input is priced as the table blends
 *   it: cache reads at the cached price, cache writes at 1.25× (5 minutes) or
 *   2× (1 hour) the input price (src/estimate/price-cost.ts), batch tokens at
 *   half.
 * - Cost line items that name no model (tool calls, storage, fine-tuning)
 *   are listed apart, not compared: the ledger prices tool calls inside a
 *   request's cost.
 */
import type { TokenPrices } from '../estimate/price-types.js';
import { cacheWrite1hPrice, cacheWrite5mPrice } from '../estimate/price-cost.js';
import { formatMicrosExact } from '../domain/money.js';
import type { ProviderCostCell, ProviderReport, ProviderUsageCell } from './provider.js';

/** What the ledger recorded for one UTC day, model and project. */
export interface LedgerCell {
  readonly day: string;
  readonly model: string;
  readonly project: string | null;
  readonly requests: number;
  /** Prompt tokens, cached ones included (as the provider counts input). */
  readonly inputTokens: number;
  readonly cachedInputTokens: number;
  /** Parts of inputTokens written to the prompt cache (Anthropic); absent: none. */
  readonly cacheWriteTokens?: number;
  readonly outputTokens: number;
  readonly costMicros: number;
}

/** One side of a cell. */
export interface CellSide {
  readonly requests: number;
  readonly inputTokens: number;
  readonly cachedInputTokens: number;
  /** Absent from reports stored before cache writes were compared. */
  readonly cacheWriteTokens?: number;
  readonly outputTokens: number;
  readonly costMicros: number;
}

type CellStatus = 'match' | 'differs' | 'missing_at_provider' | 'missing_in_ledger';

export interface ReconcileRow {
  readonly day: string;
  readonly model: string;
  readonly project: string | null;
  readonly ledger: CellSide | null;
  readonly provider: CellSide | null;
  readonly status: CellStatus;
  /** (ledger − provider) ÷ provider × 100; null without a provider side (or a zero one). */
  readonly tokensDiffPercent: number | null;
  readonly costDiffPercent: number | null;
  /** Which side is missing what, in words. */
  readonly note: string;
}

interface PriceFlag {
  readonly model: string;
  readonly kind: 'input' | 'output';
  readonly tokens: number;
  readonly providerCostMicros: number;
  /** What the table says those tokens cost. */
  readonly tableCostMicros: number;
  /** µUSD per 1M tokens: the provider's effective price and the table's. */
  readonly effectiveMicroUsdPer1M: number;
  readonly tableMicroUsdPer1M: number;
  readonly diffPercent: number;
  readonly note: string;
}

interface UnattributedCost {
  readonly day: string;
  readonly project: string | null;
  readonly lineItem: string;
  readonly costMicros: number;
}

export interface ReconcileReport {
  readonly provider: string;
  readonly since: string;
  readonly until: string;
  readonly generatedAt: number;
  /** Cells include the project (a mapping was configured). */
  readonly byProject: boolean;
  readonly tolerancePercent: number;
  /** False when the provider counts no requests (Anthropic): its side's requests are 0 and not compared. Absent: true. */
  readonly requestsCompared?: boolean;
  /** Every cell, differing ones first, then by day, model and project. */
  readonly rows: readonly ReconcileRow[];
  readonly differences: number;
  readonly priceFlags: readonly PriceFlag[];
  readonly unattributedCosts: readonly UnattributedCost[];
  readonly totals: { readonly ledger: CellSide; readonly provider: CellSide };
}

/** A model's prices as the table has them, or undefined when the table does not know it. */
type PriceLookup = (model: string) => TokenPrices | undefined;

export interface CompareOptions {
  readonly provider: string;
  readonly since: string;
  readonly until: string;
  readonly generatedAt: number;
  readonly byProject: boolean;
  readonly tolerancePercent: number;
  readonly priceOf: PriceLookup;
}

/** The name two sides share: lower-case, without a snapshot's date (OpenAI's `-2024-07-18`, Anthropic's `-20250929`). */
export function normalizeModel(model: string): string {
  return model
    .trim()
    .toLowerCase()
    .replace(/-(\d{4}-\d{2}-\d{2}|\d{8})$/, '');
}

const EMPTY: CellSide = Object.freeze({ requests: 0, inputTokens: 0, cachedInputTokens: 0, cacheWriteTokens: 0, outputTokens: 0, costMicros: 0 });

function add(a: CellSide, b: Partial<CellSide>): CellSide {
  return {
    requests: a.requests + (b.requests ?? 0),
    inputTokens: a.inputTokens + (b.inputTokens ?? 0),
    cachedInputTokens: a.cachedInputTokens + (b.cachedInputTokens ?? 0),
    cacheWriteTokens: (a.cacheWriteTokens ?? 0) + (b.cacheWriteTokens ?? 0),
    outputTokens: a.outputTokens + (b.outputTokens ?? 0),
    costMicros: a.costMicros + (b.costMicros ?? 0),
  };
}

/** Whether two amounts agree: within `slack`, or within `percent` of the larger. */
export function agrees(a: number, b: number, percent: number, slack = 0): boolean {
  const diff = Math.abs(a - b);
  return diff <= slack || diff <= (percent / 100) * Math.max(Math.abs(a), Math.abs(b));
}

function diffPercent(ledger: number, provider: number): number | null {
  if (provider === 0) return ledger === 0 ? 0 : null;
  return Math.round(((ledger - provider) / provider) * 10_000) / 100;
}

function cellKey(day: string, model: string, project: string | null): string {
  return `${day}\u0000${model}\u0000${project ?? ''}`;
}

function describe(ledger: CellSide, provider: CellSide, tolerancePercent: number, requestsCounted: boolean): string[] {
  const parts: string[] = [];
  const more = (what: string, l: number, p: number, slack = 0) => {
    if (agrees(l, p, tolerancePercent, slack)) return;
    parts.push(l > p ? `ledger has ${l - p} more ${what}` : `provider has ${p - l} more ${what}`);
  };
  if (requestsCounted) more('requests', ledger.requests, provider.requests);
  more('input tokens', ledger.inputTokens, provider.inputTokens);
  more('cache read tokens', ledger.cachedInputTokens, provider.cachedInputTokens);
  more('cache write tokens', ledger.cacheWriteTokens ?? 0, provider.cacheWriteTokens ?? 0);
  more('output tokens', ledger.outputTokens, provider.outputTokens);
  if (!agrees(ledger.costMicros, provider.costMicros, tolerancePercent, Math.max(ledger.requests, provider.requests))) {
    const d = ledger.costMicros - provider.costMicros;
    parts.push(d > 0 ? `ledger has ${formatMicrosExact(d)} more` : `provider billed ${formatMicrosExact(-d)} more`);
  }
  return parts;
}

/** Compares the ledger's cells with the provider's report. */
export function compareWithProvider(ledgerCells: readonly LedgerCell[], report: ProviderReport, options: CompareOptions): ReconcileReport {
  const { tolerancePercent } = options;
  const requestsCounted = report.requestsCounted !== false;
  const project = (value: string | null) => (options.byProject ? value : null);
  const ledgerSides = new Map<string, { day: string; model: string; project: string | null; side: CellSide }>();
  const providerSides = new Map<string, { day: string; model: string; project: string | null; side: CellSide }>();
  const put = (map: typeof ledgerSides, day: string, model: string, proj: string | null, side: Partial<CellSide>) => {
    const key = cellKey(day, model, proj);
    const entry = map.get(key) ?? { day, model, project: proj, side: EMPTY };
    map.set(key, { ...entry, side: add(entry.side, side) });
  };
  for (const cell of ledgerCells) put(ledgerSides, cell.day, normalizeModel(cell.model), project(cell.project), cell);
  for (const cell of report.usage) put(providerSides, cell.day, normalizeModel(cell.model), project(cell.project), usageSide(cell));
  const unattributedCosts: UnattributedCost[] = [];
  for (const cost of report.costs) {
    if (cost.model === null || cost.kind === 'other') {
      if (cost.costMicros !== 0)
        unattributedCosts.push({ day: cost.day, project: project(cost.project), lineItem: cost.lineItem, costMicros: cost.costMicros });
      continue;
    }
    put(providerSides, cost.day, normalizeModel(cost.model), project(cost.project), { costMicros: cost.costMicros });
  }

  const keys = new Set([...ledgerSides.keys(), ...providerSides.keys()]);
  const rows: ReconcileRow[] = [];
  let totalLedger = EMPTY;
  let totalProvider = EMPTY;
  for (const key of keys) {
    const l = ledgerSides.get(key);
    const p = providerSides.get(key);
    const where = (l ?? p)!;
    if (l) totalLedger = add(totalLedger, l.side);
    if (p) totalProvider = add(totalProvider, p.side);
    const ledgerSide = l && !isEmpty(l.side) ? l.side : null;
    const providerSide = p && !isEmpty(p.side) ? p.side : null;
    if (ledgerSide === null && providerSide === null) continue;
    let status: CellStatus;
    let note: string;
    if (providerSide === null) {
      status = 'missing_at_provider';
      note = `the provider reports nothing for this cell; the ledger has ${ledgerSide!.requests} requests`;
    } else if (ledgerSide === null) {
      status = 'missing_in_ledger';
      note = `the ledger has nothing for this cell; the provider reports ${
        requestsCounted ? `${providerSide.requests} requests` : `${providerSide.inputTokens + providerSide.outputTokens} tokens`
      }`;
    } else {
      const parts = describe(ledgerSide, providerSide, tolerancePercent, requestsCounted);
      status = parts.length === 0 ? 'match' : 'differs';
      note = parts.length === 0 ? 'agrees' : parts.join('; ');
    }
    const ls = ledgerSide ?? EMPTY;
    const ps = providerSide ?? EMPTY;
    rows.push({
      day: where.day,
      model: where.model,
      project: where.project,
      ledger: ledgerSide,
      provider: providerSide,
      status,
      tokensDiffPercent: providerSide === null ? null : diffPercent(ls.inputTokens + ls.outputTokens, ps.inputTokens + ps.outputTokens),
      costDiffPercent: providerSide === null ? null : diffPercent(ls.costMicros, ps.costMicros),
      note,
    });
  }
  rows.sort(
    (a, b) =>
      Number(a.status === 'match') - Number(b.status === 'match') ||
      a.day.localeCompare(b.day) ||
      a.model.localeCompare(b.model) ||
      (a.project ?? '').localeCompare(b.project ?? ''),
  );
  const priceFlags = flagPrices(report, options);
  return {
    provider: options.provider,
    since: options.since,
    until: options.until,
    generatedAt: options.generatedAt,
    byProject: options.byProject,
    tolerancePercent,
    requestsCompared: requestsCounted,
    rows,
    differences: rows.filter((row) => row.status !== 'match').length,
    priceFlags,
    unattributedCosts,
    totals: { ledger: totalLedger, provider: totalProvider },
  };
}

function usageSide(cell: ProviderUsageCell): Partial<CellSide> {
  return {
    requests: cell.requests,
    inputTokens: cell.inputTokens,
    cachedInputTokens: cell.cachedInputTokens,
    cacheWriteTokens: (cell.cacheWrite5mTokens ?? 0) + (cell.cacheWrite1hTokens ?? 0),
    outputTokens: cell.outputTokens,
  };
}

function isEmpty(side: CellSide): boolean {
  return side.requests === 0 && side.inputTokens === 0 && side.outputTokens === 0 && side.costMicros === 0;
}

/** What the table says a model's usage over the range costs (exact µUSD), and its tokens. */
interface TableUse {
  input: number;
  output: number;
  tableInput: number;
  tableOutput: number;
  requests: number;
}

/** A usage cell priced by the table: input blended (uncached, cache reads, cache writes), output; batch cells at half. */
function tableCostOf(cell: ProviderUsageCell, price: TokenPrices | undefined): { input: number; output: number } {
  if (price === undefined) return { input: 0, output: 0 };
  const write5m = cell.cacheWrite5mTokens ?? 0;
  const write1h = cell.cacheWrite1hTokens ?? 0;
  const uncached = Math.max(0, cell.inputTokens - cell.cachedInputTokens - write5m - write1h);
  const factor = cell.batch === true ? 0.5 : 1;
  const input =
    uncached * price.inputMicroUsdPer1M +
    cell.cachedInputTokens * price.cachedInputMicroUsdPer1M +
    write5m * cacheWrite5mPrice(price) +
    write1h * cacheWrite1hPrice(price);
  return { input: (input * factor) / 1_000_000, output: (cell.outputTokens * price.outputMicroUsdPer1M * factor) / 1_000_000 };
}

/** Price entries the provider's costs disagree with, per model over the whole range. */
function flagPrices(report: ProviderReport, options: CompareOptions): PriceFlag[] {
  const used = new Map<string, TableUse>();
  for (const cell of report.usage) {
    const model = normalizeModel(cell.model);
    const u = used.get(model) ?? { input: 0, output: 0, tableInput: 0, tableOutput: 0, requests: 0 };
    const table = tableCostOf(cell, options.priceOf(model));
    used.set(model, {
      input: u.input + cell.inputTokens,
      output: u.output + cell.outputTokens,
      tableInput: u.tableInput + table.input,
      tableOutput: u.tableOutput + table.output,
      requests: u.requests + cell.requests,
    });
  }
  const costs = new Map<string, { input: number; output: number; lines: number; seen: Set<ProviderCostCell['kind']> }>();
  for (const cost of report.costs) {
    if (cost.model === null || cost.kind === 'other') continue;
    const model = normalizeModel(cost.model);
    const c = costs.get(model) ?? { input: 0, output: 0, lines: 0, seen: new Set() };
    c.seen.add(cost.kind);
    c.lines += 1;
    if (cost.kind === 'output') c.output += cost.costMicros;
    else c.input += cost.costMicros;
    costs.set(model, c);
  }
  const flags: PriceFlag[] = [];
  for (const [model, cost] of [...costs.entries()].sort((a, b) => a[0].localeCompare(b[0]))) {
    const use = used.get(model);
    if (use === undefined) continue;
    const price = options.priceOf(model);
    // Rounding: the provider's amounts are rounded to the micro-dollar per line item and day.
    const slack = 2 * Math.max(1, use.requests, cost.lines);
    const check = (kind: 'input' | 'output', tokenCount: number, providerCostMicros: number, tableCostMicros: number, tablePer1M: number) => {
      if (tokenCount === 0) return;
      if (price !== undefined && agrees(providerCostMicros, tableCostMicros, options.tolerancePercent, slack)) return;
      const effective = Math.round((providerCostMicros / tokenCount) * 1_000_000);
      flags.push({
        model,
        kind,
        tokens: tokenCount,
        providerCostMicros,
        tableCostMicros,
        effectiveMicroUsdPer1M: effective,
        tableMicroUsdPer1M: tablePer1M,
        diffPercent: tableCostMicros === 0 ? 100 : Math.round(((providerCostMicros - tableCostMicros) / tableCostMicros) * 10_000) / 100,
        note:
          price === undefined
            ? `${model} is not in the price table (it is priced at the fallback)`
            : `the provider charged ${formatMicrosExact(effective)} per 1M ${kind} tokens; the table says ${formatMicrosExact(tablePer1M)}`,
      });
    };
    // With cache reads, cache writes or batches the effective price is a blend; the table's blend is what it is compared with.
    const per1M = (micros: number, tokens: number, listed: number) => (tokens === 0 ? listed : Math.round((micros / tokens) * 1_000_000));
    if (cost.seen.has('input') || cost.seen.has('cached_input') || cost.seen.has('cache_write_5m') || cost.seen.has('cache_write_1h'))
      check('input', use.input, cost.input, Math.round(use.tableInput), per1M(use.tableInput, use.input, price?.inputMicroUsdPer1M ?? 0));
    if (cost.seen.has('output'))
      check('output', use.output, cost.output, Math.round(use.tableOutput), per1M(use.tableOutput, use.output, price?.outputMicroUsdPer1M ?? 0));
  }
  return flags;
}
