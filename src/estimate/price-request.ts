/**
 * What a request asks for beyond text tokens, read from its body before it is sent, so its
 * reservation covers every dimension the upstream may bill (README, "Estimation and pricing"):
 *
 * - `service_tier`: `priority` is reserved at priority prices, `flex` at flex prices; `auto`,
 *   `default` or nothing at the standard price (a project whose default tier is priority is billed
 *   priority on settlement, but reserved at the standard price).
 * - audio output (chat `modalities` with `"audio"`, or an `audio` object): every reserved
 *   completion token at the audio output price.
 * - built-in tools (Responses `tools`): `max_tool_calls` calls of the dearest declared tool when
 *   the request sets it, else {@link DEFAULT_TOOL_CALLS} calls of each declared search or image
 *   tool; one container per Code Interpreter tool.
 * - Chat Completions search models (`gpt-4o-search-preview` …) search once per request: one web
 *   search call, reserved and billed whatever the answer says ({@link RequestExtras.toolCallsPerRequest}).
 * - Anthropic's Messages API: its server-side web search tool, `max_uses` searches each.
 */
import { baseModelOf, isReasoningModel } from './models.js';
import { defaultToolRates } from './prices.js';
import type { ToolCalls, ToolPrices, ToolRates } from './price-types.js';
import { isJsonObject, readOptionalPositiveInteger, type JsonObject } from './read-body.js';

/**
 * Calls reserved per declared search or image tool when the request sets no `max_tool_calls`:
 * a model may search several times per answer (about two on average on OpenAI's forum), so one
 * call would under-reserve; settlement bills the calls the response actually made.
 */
export const DEFAULT_TOOL_CALLS = 3;

/** The tier a request asks for, as priced. */
export type RequestedTier = 'standard' | 'priority' | 'flex';

/** What a request asks for beyond text, and the rates of its tools. */
export interface RequestExtras {
  readonly serviceTier: RequestedTier;
  /** The request asks for spoken output (chat `modalities` with `"audio"` or an `audio` object). */
  readonly audioOutput: boolean;
  /** Tool units reserved (zero when the request declares no built-in tool). */
  readonly toolCalls: ToolCalls;
  /** Per-unit prices of this request's tools, as its tools' settings choose them. */
  readonly toolRates: ToolRates;
  /** Tool units every answer to this request costs, reported or not (chat search models). */
  readonly toolCallsPerRequest: ToolCalls;
}

/** Chat Completions models that search the web on every request. */
function isChatSearchModel(model: string): boolean {
  return /-search-(preview|api)\b/.test(baseModelOf(model));
}

function readTier(body: JsonObject): RequestedTier {
  const tier = body['service_tier'];
  return tier === 'priority' ? 'priority' : tier === 'flex' ? 'flex' : 'standard';
}

function wantsAudio(body: JsonObject): boolean {
  const modalities = body['modalities'];
  if (Array.isArray(modalities) && modalities.includes('audio')) return true;
  return isJsonObject(body['audio']);
}

function maxValue(values: Iterable<number>): number {
  let highest = 0;
  for (const value of values) highest = Math.max(highest, value);
  return highest;
}

/** The price of one image for an `image_generation` tool; `auto` and unknown settings take the dearest. */
function imageRate(tool: JsonObject, prices: ToolPrices): number {
  const model = typeof tool['model'] === 'string' ? tool['model'] : 'gpt-image-1';
  const qualities = Object.hasOwn(prices.imageGeneration, model) ? prices.imageGeneration[model] : undefined;
  if (qualities === undefined) return maxValue(Object.values(prices.imageGeneration).flatMap((q) => Object.values(q).flatMap((s) => Object.values(s))));
  const quality = typeof tool['quality'] === 'string' ? tool['quality'] : 'auto';
  const sizes = Object.hasOwn(qualities, quality) ? qualities[quality] : undefined;
  const candidates = sizes === undefined ? Object.values(qualities) : [sizes];
  const size = typeof tool['size'] === 'string' ? tool['size'] : 'auto';
  return maxValue(candidates.map((bySize) => (Object.hasOwn(bySize, size) ? (bySize[size] as number) : maxValue(Object.values(bySize)))));
}

/** The price of one container for a `code_interpreter` tool, by its `memory_limit` (default 1 GB). */
function containerRate(tool: JsonObject, prices: ToolPrices): number {
  const container = tool['container'];
  const limit = isJsonObject(container) && typeof container['memory_limit'] === 'string' ? container['memory_limit'] : '1g';
  const rate = Object.hasOwn(prices.codeInterpreterContainer, limit) ? prices.codeInterpreterContainer[limit] : undefined;
  return rate ?? maxValue(Object.values(prices.codeInterpreterContainer));
}

/**
 * Anthropic's server-side web search (`tools: [{type: "web_search_20250305", max_uses}]`), billed per
 * search at the table's `webSearchCall` ($10 / 1k, Anthropic's price too): `max_uses` searches per
 * tool, else {@link DEFAULT_TOOL_CALLS}. Settlement bills `usage.server_tool_use.web_search_requests`.
 */
function anthropicSearches(body: JsonObject): Pick<RequestExtras, 'toolCalls' | 'toolCallsPerRequest'> {
  const tools = body['tools'];
  let searches = 0;
  if (Array.isArray(tools)) {
    for (const tool of tools) {
      if (!isJsonObject(tool) || typeof tool['type'] !== 'string' || !tool['type'].startsWith('web_search')) continue;
      const maxUses = tool['max_uses'];
      searches += typeof maxUses === 'number' && Number.isSafeInteger(maxUses) && maxUses > 0 ? maxUses : DEFAULT_TOOL_CALLS;
    }
  }
  return { toolCalls: searches > 0 ? { webSearch: searches } : {}, toolCallsPerRequest: {} };
}

/** Chat Completions: the tier, audio output, and a search model's one search per request. */
export function chatExtras(body: JsonObject, model: string, prices: ToolPrices): RequestExtras {
  const base = defaultToolRates(prices);
  const serviceTier = readTier(body);
  const audioOutput = wantsAudio(body);
  if (isChatSearchModel(model)) {
    const search = { webSearch: 1 };
    const webSearchCall = isReasoningModel(model) ? prices.webSearchCall : prices.webSearchPreviewCall;
    return { serviceTier, audioOutput, toolCalls: search, toolRates: { ...base, webSearchCall }, toolCallsPerRequest: search };
  }
  return { serviceTier, audioOutput, toolCalls: {}, toolRates: base, toolCallsPerRequest: {} };
}

/** Completions and embeddings: the tier only. */
export function plainExtras(body: JsonObject, _model: string, prices: ToolPrices): RequestExtras {
  return { serviceTier: readTier(body), audioOutput: false, toolCalls: {}, toolRates: defaultToolRates(prices), toolCallsPerRequest: {} };
}

/** Anthropic's Messages API: its server-side web searches. */
export function messagesExtras(body: JsonObject, _model: string, prices: ToolPrices): RequestExtras {
  return { serviceTier: readTier(body), audioOutput: false, toolRates: defaultToolRates(prices), ...anthropicSearches(body) };
}

/** The Responses API: the tier and its built-in tools (validated loosely: the upstream judges). */
export function responsesExtras(body: JsonObject, model: string, prices: ToolPrices): RequestExtras {
  const tools = body['tools'];
  if (!Array.isArray(tools)) return plainExtras(body, model, prices);
  const base = defaultToolRates(prices);
  const extras = { serviceTier: readTier(body), audioOutput: false };

  let webSearchCall: number | undefined;
  let fileSearchCall: number | undefined;
  let containerCall: number | undefined;
  let imageCall: number | undefined;
  for (const tool of tools) {
    if (!isJsonObject(tool) || typeof tool['type'] !== 'string') continue;
    const type = tool['type'];
    if (type.startsWith('web_search_preview')) {
      const rate = isReasoningModel(model) ? prices.webSearchCall : prices.webSearchPreviewCall;
      webSearchCall = Math.max(webSearchCall ?? 0, rate);
    } else if (type.startsWith('web_search')) {
      webSearchCall = Math.max(webSearchCall ?? 0, prices.webSearchCall);
    } else if (type === 'file_search') {
      fileSearchCall = prices.fileSearchCall;
    } else if (type === 'code_interpreter') {
      containerCall = Math.max(containerCall ?? 0, containerRate(tool, prices));
    } else if (type === 'image_generation') {
      imageCall = Math.max(imageCall ?? 0, imageRate(tool, prices));
    }
  }
  const toolRates: ToolRates = {
    webSearchCall: webSearchCall ?? base.webSearchCall,
    fileSearchCall: fileSearchCall ?? base.fileSearchCall,
    codeInterpreterContainer: containerCall ?? base.codeInterpreterContainer,
    imageGenerationCall: imageCall ?? base.imageGenerationCall,
  };
  const perCall = (
    [
      ['webSearch', webSearchCall],
      ['fileSearch', fileSearchCall],
      ['imageGeneration', imageCall],
    ] as const
  ).filter((entry): entry is readonly ['webSearch' | 'fileSearch' | 'imageGeneration', number] => entry[1] !== undefined);
  const containers = containerCall === undefined ? {} : { codeInterpreter: 1 };
  const maxToolCalls = readOptionalPositiveInteger(body['max_tool_calls'], 'max_tool_calls');
  if (maxToolCalls !== undefined) {
    // At most max_tool_calls calls in all: the bound is all of them on the dearest tool.
    const dearest = perCall.reduce<(typeof perCall)[number] | undefined>((best, entry) => (best === undefined || entry[1] > best[1] ? entry : best), undefined);
    return {
      ...extras,
      toolRates,
      toolCalls: { ...containers, ...(dearest === undefined ? {} : { [dearest[0]]: maxToolCalls }) },
      toolCallsPerRequest: {},
    };
  }
  return {
    ...extras,
    toolRates,
    toolCalls: { ...containers, ...Object.fromEntries(perCall.map(([name]) => [name, DEFAULT_TOOL_CALLS])) },
    toolCallsPerRequest: {},
  };
}
