/**
 * The ledger against the provider's own reports, cell by cell: one cell per
 * UTC day, model and (with a project mapping) project. Pure: no I/O, the
 * price table comes in as a function.
 *
 * - Models are compared by their undated name (`gpt-4o-mini-2024-07-18` and
 *   `gpt-4o-mini` are one model), lower-case.
 * - A cell matches when its requests, tokens (input + output) and USD agree
 *   within the tolerance (a percentage of the larger side); USD may also
 *   differ by one micro-dollar per request, since the ledger rounds each
 *   request up to the micro-dollar and the provider sums exact amounts.
 * - A price entry is flagged when the provider's cost of a model's input or
 *   output tokens over the whole range, divided by those tokens, is not the
 *   table's price within the tolerance.
 * - Cost line items that name no model (tool calls, storage, fine-tuning)
 *   are listed apart, not compared: the ledger prices tool calls inside a
 *   request's cost.
 */
import type { TokenPrices } from '../estimate/price-types.js';
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
  readonly outputTokens: number;
  readonly costMicros: number;
}

/** One side of a cell. */
export interface CellSide {
  readonly requests: number;
  readonly inputTokens: number;
  readonly cachedInputTokens: number;
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

/** The name two sides share: lower-case, without a snapshot's date. */
export function normalizeModel(model: string): string {
  return model
    .trim()
    .toLowerCase()
    .replace(/-\d{4}-\d{2}-\d{2}$/, '');
}

const EMPTY: CellSide = Object.freeze({ requests: 0, inputTokens: 0, cachedInputTokens: 0, outputTokens: 0, costMicros: 0 });

function add(a: CellSide, b: Partial<CellSide>): CellSide {
  return {
    requests: a.requests + (b.requests ?? 0),
    inputTokens: a.inputTokens + (b.inputTokens ?? 0),
    cachedInputTokens: a.cachedInputTokens + (b.cachedInputTokens ?? 0),
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

function describe(ledger: CellSide, provider: CellSide, tolerancePercent: number): string[] {
  const parts: string[] = [];
  const more = (what: string, l: number, p: number, slack = 0) => {
    if (agrees(l, p, tolerancePercent, slack)) return;
    parts.push(l > p ? `ledger has ${l - p} more ${what}` : `provider has ${p - l} more ${what}`);
  };
  more('requests', ledger.requests, provider.requests);
  more('input tokens', ledger.inputTokens, provider.inputTokens);
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
      note = `the ledger has nothing for this cell; the provider reports ${providerSide.requests} requests`;
    } else {
      const parts = describe(ledgerSide, providerSide, tolerancePercent);
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
    rows,
    differences: rows.filter((row) => row.status !== 'match').length,
    priceFlags,
    unattributedCosts,
    totals: { ledger: totalLedger, provider: totalProvider },
  };
}

function usageSide(cell: ProviderUsageCell): Partial<CellSide> {
  return { requests: cell.requests, inputTokens: cell.inputTokens, cachedInputTokens: cell.cachedInputTokens, outputTokens: cell.outputTokens };
}

function isEmpty(side: CellSide): boolean {
  return side.requests === 0 && side.inputTokens === 0 && side.outputTokens === 0 && side.costMicros === 0;
}

/** Price entries the provider's costs disagree with, per model over the whole range. */
function flagPrices(report: ProviderReport, options: CompareOptions): PriceFlag[] {
  const tokens = new Map<string, { input: number; cached: number; output: number; requests: number }>();
  for (const cell of report.usage) {
    const model = normalizeModel(cell.model);
    const t = tokens.get(model) ?? { input: 0, cached: 0, output: 0, requests: 0 };
    tokens.set(model, {
      input: t.input + cell.inputTokens,
      cached: t.cached + cell.cachedInputTokens,
      output: t.output + cell.outputTokens,
      requests: t.requests + cell.requests,
    });
  }
  const costs = new Map<string, { input: number; output: number; seen: Set<ProviderCostCell['kind']> }>();
  for (const cost of report.costs) {
    if (cost.model === null || cost.kind === 'other') continue;
    const model = normalizeModel(cost.model);
    const c = costs.get(model) ?? { input: 0, output: 0, seen: new Set() };
    c.seen.add(cost.kind);
    if (cost.kind === 'output') c.output += cost.costMicros;
    else c.input += cost.costMicros;
    costs.set(model, c);
  }
  const flags: PriceFlag[] = [];
  for (const [model, cost] of [...costs.entries()].sort((a, b) => a[0].localeCompare(b[0]))) {
    const used = tokens.get(model);
    if (used === undefined) continue;
    const price = options.priceOf(model);
    const check = (kind: 'input' | 'output', tokenCount: number, providerCostMicros: number, tableCostMicros: number, tablePer1M: number) => {
      if (tokenCount === 0) return;
      // Rounding: the provider's amounts are rounded to the micro-dollar per line item and day.
      if (price !== undefined && agrees(providerCostMicros, tableCostMicros, options.tolerancePercent, 2 * Math.max(1, used.requests))) return;
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
    const uncached = Math.max(0, used.input - used.cached);
    const inputPer1M = price?.inputMicroUsdPer1M ?? 0;
    const cachedPer1M = price?.cachedInputMicroUsdPer1M ?? 0;
    const tableInput = (uncached * inputPer1M + used.cached * cachedPer1M) / 1_000_000;
    // With cached tokens the effective input price is a blend; the table's blend is what it is compared with.
    const blended = used.input === 0 ? inputPer1M : Math.round((tableInput / used.input) * 1_000_000);
    if (cost.seen.has('input') || cost.seen.has('cached_input')) check('input', used.input, cost.input, Math.round(tableInput), blended);
    if (cost.seen.has('output'))
      check('output', used.output, cost.output, Math.round((used.output * (price?.outputMicroUsdPer1M ?? 0)) / 1_000_000), price?.outputMicroUsdPer1M ?? 0);
  }
  return flags;
}
