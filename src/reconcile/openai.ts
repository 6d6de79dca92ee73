/**
 * OpenAI's organization Usage and Costs APIs, read with an admin key
 * (`TOLLGATE_PROVIDER_ADMIN_KEY`):
 * - `GET /organization/usage/completions` and `/organization/usage/embeddings`,
 *   `bucket_width=1d`, `group_by=model` (and `project_id`): per UTC day,
 *   `input_tokens` (cached included), `input_cached_tokens`, `output_tokens`,
 *   `num_model_requests`;
 * - `GET /organization/costs`, `group_by=line_item` (and `project_id`): per UTC
 *   day, `amount.value` in USD per line item (`gpt-4o-mini-2024-07-18, input`).
 * Both page with `has_more` / `next_page` (passed back as `page`).
 *
 * The admin key goes in the Authorization header and nowhere else: errors
 * carry the status and the provider's message with the key masked, never the
 * request.
 */
import { redactUrl, redactUrlsIn } from '../redact-url.js';
import { ProviderReportError, type DayRange, type ProviderCostCell, type ProviderReport, type ProviderUsageCell, type UsageProvider } from './provider.js';

export interface OpenAIUsageOptions {
  /** The API's base URL including `/v1` (default https://api.openai.com/v1). */
  readonly baseUrl: string;
  readonly adminKey: string;
  /** Per HTTP call (default 30 s). */
  readonly timeoutMs?: number;
  /** Pages read per report at most, so a provider that never stops paging cannot hold the command forever. */
  readonly maxPages?: number;
}

const DAY_S = 86_400;

function startOfDaySeconds(day: string): number {
  return Date.parse(`${day}T00:00:00Z`) / 1000;
}

function utcDayOfSeconds(seconds: number): string {
  return new Date(seconds * 1000).toISOString().slice(0, 10);
}

/** Reads a line item into the model and kind it bills. */
export function parseLineItem(lineItem: string): { model: string | null; kind: ProviderCostCell['kind'] } {
  const match = /^(.+?),\s*(cached input|input|output)$/i.exec(lineItem.trim());
  if (match === null) return { model: null, kind: 'other' };
  const kind = match[2]!.toLowerCase();
  return { model: match[1]!.trim(), kind: kind === 'cached input' ? 'cached_input' : kind === 'input' ? 'input' : 'output' };
}

interface Bucket {
  readonly start_time: number;
  readonly results: ReadonlyArray<Record<string, unknown>>;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function integer(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) ? Math.max(0, Math.round(value)) : 0;
}

function text(value: unknown): string | null {
  return typeof value === 'string' && value !== '' ? value : null;
}

export function openAIUsageProvider(options: OpenAIUsageOptions): UsageProvider {
  const base = options.baseUrl.replace(/\/+$/, '');
  const maxPages = options.maxPages ?? 1000;
  const mask = (message: string) => (options.adminKey === '' ? message : message.split(options.adminKey).join('***'));

  async function get(path: string, query: URLSearchParams, signal: AbortSignal | undefined): Promise<Record<string, unknown>> {
    const url = `${base}${path}?${query.toString()}`;
    const timeout = AbortSignal.timeout(options.timeoutMs ?? 30_000);
    let response: Response;
    try {
      response = await fetch(url, {
        headers: { authorization: `Bearer ${options.adminKey}`, accept: 'application/json' },
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

  /** Every bucket of a report, page after page. */
  async function buckets(path: string, range: DayRange, params: ReadonlyArray<readonly [string, string]>, signal?: AbortSignal): Promise<Bucket[]> {
    const all: Bucket[] = [];
    let page: string | undefined;
    for (let pages = 0; pages < maxPages; pages += 1) {
      const entries: string[][] = [
        ['start_time', String(startOfDaySeconds(range.since))],
        ['end_time', String(startOfDaySeconds(range.until) + DAY_S)],
        ['bucket_width', '1d'],
        ...params.map(([name, value]) => [name, value]),
      ];
      const query = new URLSearchParams(entries);
      if (page !== undefined) query.set('page', page);
      const json = await get(path, query, signal);
      for (const raw of json.data as unknown[]) {
        if (!isRecord(raw) || typeof raw.start_time !== 'number') continue;
        // The reference names the list `results`; some versions of its schema say `result`.
        const results = Array.isArray(raw.results) ? raw.results : Array.isArray(raw.result) ? raw.result : [];
        all.push({ start_time: raw.start_time, results: results.filter(isRecord) });
      }
      const next = text(json.next_page);
      if (json.has_more !== true || next === null) return all;
      page = next;
    }
    throw new ProviderReportError(`${path} kept paging past ${maxPages} pages`);
  }

  return {
    name: 'openai',
    async fetchReport(range, { byProject, signal }): Promise<ProviderReport> {
      const usageGroups: Array<[string, string]> = [['group_by', 'model'], ...(byProject ? [['group_by', 'project_id'] as [string, string]] : [])];
      const usage: ProviderUsageCell[] = [];
      for (const path of ['/organization/usage/completions', '/organization/usage/embeddings']) {
        for (const bucket of await buckets(path, range, [...usageGroups, ['limit', '31']], signal)) {
          const day = utcDayOfSeconds(bucket.start_time);
          for (const result of bucket.results) {
            usage.push({
              day,
              model: text(result.model) ?? '(unknown)',
              project: byProject ? text(result.project_id) : null,
              requests: integer(result.num_model_requests),
              inputTokens: integer(result.input_tokens),
              cachedInputTokens: integer(result.input_cached_tokens),
              outputTokens: integer(result.output_tokens),
            });
          }
        }
      }
      const costGroups: Array<[string, string]> = [['group_by', 'line_item'], ...(byProject ? [['group_by', 'project_id'] as [string, string]] : [])];
      const costs: ProviderCostCell[] = [];
      for (const bucket of await buckets('/organization/costs', range, [...costGroups, ['limit', '180']], signal)) {
        const day = utcDayOfSeconds(bucket.start_time);
        for (const result of bucket.results) {
          const amount = isRecord(result.amount) ? result.amount : {};
          const currency = text(amount.currency) ?? 'usd';
          if (currency.toLowerCase() !== 'usd') throw new ProviderReportError(`/organization/costs reports ${currency}, not usd`);
          // A JSON number of dollars (some answers carry a decimal string), to the nearest micro-dollar.
          const value = typeof amount.value === 'number' ? amount.value : typeof amount.value === 'string' ? Number(amount.value) : 0;
          const costMicros = Number.isFinite(value) ? Math.round(value * 1_000_000) : 0;
          const lineItem = text(result.line_item) ?? '(none)';
          costs.push({ day, project: byProject ? text(result.project_id) : null, lineItem, ...parseLineItem(lineItem), costMicros });
        }
      }
      return { usage, costs };
    },
  };
}
