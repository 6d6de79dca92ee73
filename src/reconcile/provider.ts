/**
 * What reconciliation needs from a provider: its own usage and cost reports
 * for a range of UTC days. OpenAI's organization Usage and Costs APIs are the
 * first implementation (openai.ts); another provider plugs in by returning
 * the same cells.
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
  readonly outputTokens: number;
}

/** One line of the provider's bill for one UTC day (and project). */
export interface ProviderCostCell {
  readonly day: string;
  readonly project: string | null;
  /** The provider's own line item text (`gpt-4o-mini-2024-07-18, input`). */
  readonly lineItem: string;
  /** The model and kind the line item bills, when it names them (token line items do). */
  readonly model: string | null;
  readonly kind: 'input' | 'cached_input' | 'output' | 'other';
  /** Integer micro-USD. */
  readonly costMicros: number;
}

export interface ProviderReport {
  readonly usage: readonly ProviderUsageCell[];
  readonly costs: readonly ProviderCostCell[];
}

export interface UsageProvider {
  /** Short name stored with the result (`openai`). */
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
