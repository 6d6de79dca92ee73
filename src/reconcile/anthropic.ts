/**
 * Anthropic's Admin API usage and cost reports, read with an admin key
 * (`TOLLGATE_ANTHROPIC_ADMIN_KEY`, `sk-ant-admin…`) sent as `x-api-key` with
 * `anthropic-version: 2023-06-01`:
 * - `GET /v1/organizations/usage_report/messages`, `bucket_width=1d`,
 *   `group_by[]=model` and `group_by[]=service_tier`: per UTC day,
 *   `uncached_input_tokens`, `cache_read_input_tokens`,
 *   `cache_creation.ephemeral_5m_input_tokens` / `…1h…`, `output_tokens`.
 *   It counts no requests, so requests are not compared.
 * - `GET /v1/organizations/cost_report`, `group_by[]=description`: per UTC
 *   day and line item (`model`, `token_type`, `cost_type`), `amount` in
 *   cents as a decimal string (`"123.45"` is $1.2345).
 * Both page with `has_more` / `next_page` (passed back as `page`); buckets
 * carry `starting_at` as RFC 3339.
 *
 * Cells are compared by day and model only: Anthropic's workspaces are not
 * the OpenAI projects `reconcile.projects` maps keys to. The admin key goes
 * in its header and nowhere else: errors carry the status and the API's
 * message with the key masked, never the request.
 */
import { redactUrl, redactUrlsIn } from '../redact-url.js';
import { ProviderReportError, type DayRange, type ProviderCostCell, type ProviderReport, type ProviderUsageCell, type UsageProvider } from './provider.js';

export interface AnthropicUsageOptions {
  /** The API's origin, as TOLLGATE_ANTHROPIC_URL (default https://api.anthropic.com); a trailing `/v1` is dropped. */
  readonly baseUrl: string;
  readonly adminKey: string;
  /** `anthropic-version` (default 2023-06-01). */
  readonly version?: string;
  /** Per HTTP call (default 30 s). */
  readonly timeoutMs?: number;
  /** Pages read per report at most, so an API that never stops paging cannot hold the command forever. */
  readonly maxPages?: number;
}

const DAY_MS = 86_400_000;
/** Most daily buckets a page may hold (the API's maximum for `1d`). */
const PAGE_LIMIT = '31';
const USAGE_PATH = '/v1/organizations/usage_report/messages';
const COST_PATH = '/v1/organizations/cost_report';

/** The cost report's `token_type` as a cost cell's kind. */
const TOKEN_KINDS: Readonly<Record<string, ProviderCostCell['kind']>> = {
  uncached_input_tokens: 'input',
  cache_read_input_tokens: 'cached_input',
  'cache_creation.ephemeral_5m_input_tokens': 'cache_write_5m',
  'cache_creation.ephemeral_1h_input_tokens': 'cache_write_1h',
  output_tokens: 'output',
};

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function integer(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) ? Math.max(0, Math.round(value)) : 0;
}

function text(value: unknown): string | null {
  return typeof value === 'string' && value !== '' ? value : null;
}

/** Cents as a decimal string (a number is accepted too) to integer micro-USD: 1 cent is 10,000 µUSD. */
export function centsToMicros(amount: unknown): number {
  const cents = typeof amount === 'number' ? amount : typeof amount === 'string' && /^-?\d+(\.\d+)?$/.test(amount.trim()) ? Number(amount) : NaN;
  return Number.isFinite(cents) ? Math.round(cents * 10_000) : 0;
}

/** A cost report line as a cost cell (without its day). */
export function costLine(result: Record<string, unknown>): Omit<ProviderCostCell, 'day'> {
  const tokenType = text(result.token_type);
  const kind = (tokenType === null ? undefined : TOKEN_KINDS[tokenType]) ?? 'other';
  const model = kind === 'other' ? null : text(result.model);
  const lineItem = text(result.description) ?? [text(result.cost_type), model, tokenType].filter((part) => part !== null).join(', ');
  return {
    project: null,
    lineItem: lineItem === '' ? '(none)' : lineItem,
    model,
    kind: model === null ? 'other' : kind,
    costMicros: centsToMicros(result.amount),
  };
}

/** A usage report result as a usage cell (without its day). */
export function usageLine(result: Record<string, unknown>): Omit<ProviderUsageCell, 'day'> {
  const creation = isRecord(result.cache_creation) ? result.cache_creation : {};
  const uncached = integer(result.uncached_input_tokens);
  const read = integer(result.cache_read_input_tokens);
  const write5m = integer(creation.ephemeral_5m_input_tokens);
  const write1h = integer(creation.ephemeral_1h_input_tokens);
  return {
    model: text(result.model) ?? '(unknown)',
    project: null,
    requests: 0,
    inputTokens: uncached + read + write5m + write1h,
    cachedInputTokens: read,
    cacheWrite5mTokens: write5m,
    cacheWrite1hTokens: write1h,
    outputTokens: integer(result.output_tokens),
    batch: result.service_tier === 'batch',
  };
}

interface Bucket {
  readonly day: string;
  readonly results: ReadonlyArray<Record<string, unknown>>;
}

export function anthropicUsageProvider(options: AnthropicUsageOptions): UsageProvider {
  const base = options.baseUrl.replace(/\/+$/, '').replace(/\/v1$/, '');
  const maxPages = options.maxPages ?? 1000;
  const mask = (message: string) => (options.adminKey === '' ? message : message.split(options.adminKey).join('***'));

  async function get(path: string, query: URLSearchParams, signal: AbortSignal | undefined): Promise<Record<string, unknown>> {
    const timeout = AbortSignal.timeout(options.timeoutMs ?? 30_000);
    let response: Response;
    try {
      response = await fetch(`${base}${path}?${query.toString()}`, {
        headers: { 'x-api-key': options.adminKey, 'anthropic-version': options.version ?? '2023-06-01', accept: 'application/json' },
        signal: signal === undefined ? timeout : AbortSignal.any([signal, timeout]),
      });
    } catch (error) {
      throw new ProviderReportError(`cannot reach ${redactUrl(base)}${path}: ${redactUrlsIn(mask((error as Error).message))}`);
    }
    const body = await response.text();
    let json: unknown;
    try {
      json = JSON.parse(body);
    } catch {
      json = undefined;
    }
    if (!response.ok) {
      const message = isRecord(json) && isRecord(json.error) && typeof json.error.message === 'string' ? json.error.message : body.slice(0, 200);
      throw new ProviderReportError(`${path} answered ${response.status}: ${mask(message)}`, response.status);
    }
    if (!isRecord(json) || !Array.isArray(json.data)) throw new ProviderReportError(`${path} answered something that is not a page of buckets`);
    return json;
  }

  /** Every daily bucket of a report over `range`, page after page. */
  async function buckets(path: string, range: DayRange, groups: readonly string[], signal?: AbortSignal): Promise<Bucket[]> {
    const all: Bucket[] = [];
    const endingAt = new Date(Date.parse(`${range.until}T00:00:00Z`) + DAY_MS).toISOString().replace('.000Z', 'Z');
    let page: string | undefined;
    for (let pages = 0; pages < maxPages; pages += 1) {
      const query = new URLSearchParams([
        ['starting_at', `${range.since}T00:00:00Z`],
        ['ending_at', endingAt],
        ['bucket_width', '1d'],
        ['limit', PAGE_LIMIT],
        ...groups.map((group) => ['group_by[]', group]),
      ]);
      if (page !== undefined) query.set('page', page);
      const json = await get(path, query, signal);
      for (const raw of json.data as unknown[]) {
        if (!isRecord(raw) || typeof raw.starting_at !== 'string') continue;
        const start = Date.parse(raw.starting_at);
        if (Number.isNaN(start)) continue;
        all.push({ day: new Date(start).toISOString().slice(0, 10), results: (Array.isArray(raw.results) ? raw.results : []).filter(isRecord) });
      }
      const next = text(json.next_page);
      if (json.has_more !== true || next === null) return all;
      page = next;
    }
    throw new ProviderReportError(`${path} kept paging past ${maxPages} pages`);
  }

  return {
    name: 'anthropic',
    async fetchReport(range, { signal }): Promise<ProviderReport> {
      const usage: ProviderUsageCell[] = [];
      for (const bucket of await buckets(USAGE_PATH, range, ['model', 'service_tier'], signal)) {
        for (const result of bucket.results) usage.push({ day: bucket.day, ...usageLine(result) });
      }
      const costs: ProviderCostCell[] = [];
      for (const bucket of await buckets(COST_PATH, range, ['description'], signal)) {
        for (const result of bucket.results) {
          const currency = text(result.currency) ?? 'USD';
          if (currency.toUpperCase() !== 'USD') throw new ProviderReportError(`${COST_PATH} reports ${currency}, not USD`);
          costs.push({ day: bucket.day, ...costLine(result) });
        }
      }
      return { usage, costs, requestsCounted: false };
    },
  };
}
