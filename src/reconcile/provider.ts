/**
 * What reconciliation needs from a provider: its own usage and cost reports
 * for a range of UTC days. OpenAI's organization Usage and Costs APIs
 * (openai.ts) and Anthropic's Admin API Usage and Cost reports (anthropic.ts)
 * implement it; another provider plugs in by returning the same cells.
 */

/** A range of whole UTC days, `until` included. */
export interface DayRange {
  /** YYYY-MM-DD (UTC). */
  readonly since: string;
  readonly until: string;
}

/** Tokens and requests the provider counted for one UTC day, model and project. */
export interface ProviderUsageCell {
  readonly day: string;
  /** As the provider names it (often a dated snapshot: `gpt-4o-mini-2024-07-18`). */
  readonly model: string;
  /** The provider's project, or null when not grouped by project. */
  readonly project: string | null;
  readonly requests: number;
  /** Input tokens, cached ones included. */
  readonly inputTokens: number;
  readonly cachedInputTokens: number;
  /** Parts of inputTokens written to the prompt cache (Anthropic), by TTL; absent: none. */
  readonly cacheWrite5mTokens?: number;
  readonly cacheWrite1hTokens?: number;
  readonly outputTokens: number;
  /** Tokens billed at the batch rate (half the table's, as both providers bill batches). */
  readonly batch?: boolean;
}

/** One line of the provider's bill for one UTC day (and project). */
export interface ProviderCostCell {
  readonly day: string;
  readonly project: string | null;
  /** The provider's own line item text (`gpt-4o-mini-2024-07-18, input`). */
  readonly lineItem: string;
  /** The model and kind the line item bills, when it names them (token line items do). */
  readonly model: string | null;
  readonly kind: 'input' | 'cached_input' | 'cache_write_5m' | 'cache_write_1h' | 'output' | 'other';
  /** Integer micro-USD. */
  readonly costMicros: number;
}

export interface ProviderReport {
  readonly usage: readonly ProviderUsageCell[];
  readonly costs: readonly ProviderCostCell[];
  /** False when the usage report counts no requests (Anthropic's): requests are then not compared. Default true. */
  readonly requestsCounted?: boolean;
}

export interface UsageProvider {
  /**
   * Short name stored with the result (`openai`, `anthropic`). `anthropic` is compared with the
   * ledger's Anthropic rows, by day and model (no project mapping); any other name with the rest.
   */
  readonly name: string;
  /** The provider's usage and costs over `range`, `byProject`: grouped by project too. */
  fetchReport(range: DayRange, options: { readonly byProject: boolean; readonly signal?: AbortSignal }): Promise<ProviderReport>;
}

/** A provider report could not be read (HTTP status, bad shape); its message never holds the admin key. */
export class ProviderReportError extends Error {
  override readonly name = 'ProviderReportError';
  readonly status: number | undefined;
  constructor(message: string, status?: number) {
    super(message);
    this.status = status;
  }
}
