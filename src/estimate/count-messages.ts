/**
 * Prompt tokens of an Anthropic Messages API body (`POST /v1/messages`), as an upper bound.
 *
 * Claude's tokenizer is not public, so text is counted with o200k_base and scaled by 1.5,
 * never beyond the text's UTF-8 bytes (no byte-level tokenizer makes
 * more tokens than bytes). Images use Anthropic's published rule, tools add the tool-use system
 * prompt, and every message and block a small framing allowance. The method, its constants and
 * why they bound the bill are in src/estimate/README.md ("Claude: an upper bound").
 * Settlement bills the usage the API reports, so the bound only has to be safe, not exact.
 */
import { approximateFileTokens, tallyFile, type CountContext, type PromptTally } from './count-parts.js';
import { readDataUrlImageSize } from './images.js';
import { EstimateInputError } from './errors.js';
import { MAX_NESTING_DEPTH, failDepth, failType, isJsonObject, readArray, readObject, readOptionalString, readString, type JsonObject } from './read-body.js';
import { renderCompactJson } from './render-functions.js';

/** o200k_base tokens × 3/2 bounds Claude's tokens of the same text (README: why 1.5). */
const CLAUDE_TEXT_FACTOR_NUMERATOR = 3;
const CLAUDE_TEXT_FACTOR_DENOMINATOR = 2;

/** Framing of the whole request (turn markers, the reply's start). */
const REQUEST_OVERHEAD = 16;
/** Framing per message (role marker, separators). */
const MESSAGE_OVERHEAD = 8;
/** Framing per content block. */
const BLOCK_OVERHEAD = 4;
/**
 * The system prompt Anthropic adds when `tools` are given: 346 tokens at most on its pricing page's
 * table ("Tool use system prompt token count"), rounded up for models it does not list yet.
 */
const TOOL_SYSTEM_PROMPT = 500;
/** An Anthropic-defined tool (bash, text editor, computer, web search …): its definition is theirs, up to ~735 tokens listed. */
const SERVER_TOOL_DEFINITION = 1_000;
/**
 * Anthropic's server tools, which run upstream and whose results (pages, fetched documents,
 * code output) the model reads as billed input: web search, web fetch, code execution.
 */
const SERVER_TOOLS_BILLED_AS_INPUT = /^(web_search|web_fetch|code_execution)_/;
/**
 * Anthropic's vision guide: an image is scaled down to fit 1568 px on its long edge and about
 * 1,600 tokens (1.2 megapixels), then billed width × height / 750 tokens (1092×1092 ≈ 1,590).
 */
const IMAGE_LONG_EDGE = 1_568;
const IMAGE_PIXELS_PER_TOKEN = 750;
/** An image whose size cannot be read (URL, file id): the largest image after scaling, its bound. */
const UNSEEN_IMAGE_TOKENS = 1_600;
const IMAGE_MAX_PIXELS = UNSEEN_IMAGE_TOKENS * IMAGE_PIXELS_PER_TOKEN;

/** Whether the request writes the prompt cache, and for how long at most. */
export type CacheWrite = 'none' | '5m' | '1h';

/** A counted Messages prompt: its tokens, and the longest cache write it asks for. */
export interface MessagesTally extends PromptTally {
  cacheWrite: CacheWrite;
}

/** Tokens of text, as an upper bound of Claude's count: min(UTF-8 bytes, ⌈o200k × 1.5⌉). */
export function claudeTextTokens(text: string, count: (text: string) => number): number {
  if (text === '') return 0;
  const scaled = Math.ceil((count(text) * CLAUDE_TEXT_FACTOR_NUMERATOR) / CLAUDE_TEXT_FACTOR_DENOMINATOR);
  return Math.min(Buffer.byteLength(text, 'utf8'), scaled);
}

/** Tokens of an image of a known size, by Anthropic's rule. */
export function claudeImageTokens(width: number, height: number): number {
  let w = Math.max(1, width);
  let h = Math.max(1, height);
  const edge = Math.max(w, h);
  if (edge > IMAGE_LONG_EDGE) {
    w = (w * IMAGE_LONG_EDGE) / edge;
    h = (h * IMAGE_LONG_EDGE) / edge;
  }
  if (w * h > IMAGE_MAX_PIXELS) {
    const shrink = Math.sqrt(IMAGE_MAX_PIXELS / (w * h));
    w *= shrink;
    h *= shrink;
  }
  return Math.min(UNSEEN_IMAGE_TOKENS, Math.ceil((Math.ceil(w) * Math.ceil(h)) / IMAGE_PIXELS_PER_TOKEN));
}

class MessagesCounter {
  readonly tally: MessagesTally = { tokens: REQUEST_OVERHEAD, imageTokens: 0, cacheWrite: 'none' };
  constructor(private readonly context: CountContext) {}

  text(text: string): void {
    this.tally.tokens += claudeTextTokens(text, (t) => this.context.counter.count(t));
  }

  noteCache(holder: JsonObject, param: string): void {
    const control = holder['cache_control'];
    if (control === undefined || control === null) return;
    const object = readObject(control, `${param}.cache_control`);
    const ttl = object['ttl'];
    if (ttl === '1h') this.tally.cacheWrite = '1h';
    else if (this.tally.cacheWrite === 'none') this.tally.cacheWrite = '5m';
  }

  image(source: unknown, param: string): void {
    let tokens = UNSEEN_IMAGE_TOKENS;
    let sized = false;
    if (isJsonObject(source) && source['type'] === 'base64' && typeof source['data'] === 'string') {
      const media = typeof source['media_type'] === 'string' ? source['media_type'] : 'image/png';
      const size = readDataUrlImageSize(`data:${media};base64,${source['data']}`);
      if (size !== null) {
        tokens = claudeImageTokens(size.width, size.height);
        sized = true;
      } else this.context.unseen.note('image');
    } else if (isJsonObject(source) && source['type'] === 'file') {
      this.context.unseen.file(readString(source['file_id'], `${param}.source.file_id`), 'image');
    } else if (source !== undefined && !isJsonObject(source)) {
      failType(`${param}.source`, 'an object', source);
    } else {
      this.context.unseen.note('image');
    }
    this.tally.tokens += tokens;
    this.tally.imageTokens += tokens;
    if (!sized) this.tally.unsizedImageTokens = (this.tally.unsizedImageTokens ?? 0) + tokens;
  }

  document(block: JsonObject, param: string, depth: number): void {
    for (const field of ['title', 'context'] as const) this.text(readOptionalString(block[field], `${param}.${field}`) ?? '');
    const source = block['source'];
    if (!isJsonObject(source)) {
      this.tally.tokens += tallyFile({}, this.context);
      return;
    }
    if (source['type'] === 'text' && typeof source['data'] === 'string') this.text(source['data']);
    else if (source['type'] === 'content') this.content(source['content'], `${param}.source.content`, depth + 1);
    else if (source['type'] === 'base64' && typeof source['data'] === 'string') this.tally.tokens += approximateFileTokens(source['data']);
    else if (source['type'] === 'file') this.tally.tokens += tallyFile({ fileId: readString(source['file_id'], `${param}.source.file_id`) }, this.context);
    // A document by URL (PDF, text): fetched upstream, its text and pages billed as input.
    else if (source['type'] === 'url') this.tally.tokens += tallyFile({ fileUrl: readString(source['url'], `${param}.source.url`) }, this.context);
    else this.tally.tokens += tallyFile({}, this.context);
  }

  /** A message's or tool result's content: a string, or an array of blocks. */
  content(value: unknown, param: string, depth = 0): void {
    if (depth > MAX_NESTING_DEPTH) failDepth(param);
    if (typeof value === 'string') {
      this.text(value);
      return;
    }
    if (value === undefined || value === null) return;
    const blocks = readArray(value, param);
    for (let i = 0; i < blocks.length; i += 1) this.block(blocks[i], `${param}[${i}]`, depth + 1);
  }

  block(value: unknown, param: string, depth: number): void {
    const block = readObject(value, param);
    this.tally.tokens += BLOCK_OVERHEAD;
    this.noteCache(block, param);
    switch (block['type']) {
      case 'text':
        this.text(readOptionalString(block['text'], `${param}.text`) ?? '');
        return;
      case 'image':
        this.image(block['source'], param);
        return;
      case 'document':
        this.document(block, param, depth);
        return;
      case 'tool_use':
      case 'server_tool_use':
        this.text(readOptionalString(block['name'], `${param}.name`) ?? '');
        if (block['input'] !== undefined) this.text(renderCompactJson(block['input'], `${param}.input`));
        return;
      case 'tool_result':
        this.content(block['content'], `${param}.content`, depth + 1);
        return;
      case 'thinking':
        this.text(readOptionalString(block['thinking'], `${param}.thinking`) ?? '');
        return;
      case 'container_upload':
        // A file put into the code execution container: read there, as billed input.
        this.context.unseen.file(readString(block['file_id'], `${param}.file_id`), 'file');
        return;
      default:
        // Blocks we do not model (redacted thinking, search results, tool results of server
        // tools …): every string in them, as text. Signatures are opaque and not billed as text.
        this.leaves(block, param, depth + 1);
    }
  }

  leaves(value: unknown, param: string, depth: number): void {
    if (depth > MAX_NESTING_DEPTH) failDepth(param);
    if (typeof value === 'string') {
      if (!value.startsWith('data:')) this.text(value);
    } else if (Array.isArray(value)) {
      for (let i = 0; i < value.length; i += 1) this.leaves(value[i], `${param}[${i}]`, depth + 1);
    } else if (isJsonObject(value)) {
      for (const [key, child] of Object.entries(value)) {
        if (key === 'signature' || key === 'type' || key === 'cache_control') continue;
        this.leaves(child, `${param}.${key}`, depth + 1);
      }
    }
  }

  tools(value: unknown): void {
    if (value === undefined || value === null) return;
    const tools = readArray(value, 'tools');
    if (tools.length === 0) return;
    this.tally.tokens += TOOL_SYSTEM_PROMPT;
    for (let i = 0; i < tools.length; i += 1) {
      const param = `tools[${i}]`;
      const tool = readObject(tools[i], param);
      this.noteCache(tool, param);
      const type = tool['type'];
      const definition = Object.fromEntries(Object.entries(tool).filter(([key]) => key !== 'cache_control'));
      if (type !== undefined && type !== null && type !== 'custom') this.tally.tokens += SERVER_TOOL_DEFINITION;
      if (typeof type === 'string' && SERVER_TOOLS_BILLED_AS_INPUT.test(type)) this.context.unseen.note('tool_results');
      this.text(renderCompactJson(definition, param));
    }
  }
}

/** Counts a Messages body's prompt: system, messages, tools, tool_choice. Validates the shapes it reads. */
export function countMessagesPrompt(body: JsonObject, context: CountContext): MessagesTally {
  const counter = new MessagesCounter(context);
  const system = body['system'];
  if (typeof system === 'string') counter.text(system);
  else if (system !== undefined && system !== null) counter.content(system, 'system');
  const messages = body['messages'];
  if (messages === undefined || messages === null) {
    throw new EstimateInputError('messages: Field required', 'messages', 'missing_required_parameter');
  }
  const list = readArray(messages, 'messages');
  for (let i = 0; i < list.length; i += 1) {
    const param = `messages[${i}]`;
    const message = readObject(list[i], param);
    counter.tally.tokens += MESSAGE_OVERHEAD;
    counter.content(message['content'], `${param}.content`);
  }
  counter.tools(body['tools']);
  // MCP servers (beta): their tool lists and the results of their calls are billed as input.
  const servers = body['mcp_servers'];
  if (servers !== undefined && servers !== null) context.unseen.note('mcp', readArray(servers, 'mcp_servers').length);
  const choice = body['tool_choice'];
  if (choice !== undefined && choice !== null) counter.text(renderCompactJson(choice, 'tool_choice'));
  if (isJsonObject(body['cache_control'])) counter.noteCache(body, '(body)');
  return counter.tally;
}
