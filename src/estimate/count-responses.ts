/**
 * Prompt tokens of a Responses API request. The API does not publish its framing; we count it
 * like chat (3 tokens + role per message, reply priming), which matches the usage observed for
 * simple inputs, and document the approximations:
 * - `instructions` count as a system message;
 * - function tools render like chat functions; built-in tools reserve a fixed amount
 *   ({@link BUILTIN_TOOL_TOKENS}) — web search in particular bills retrieved content as input;
 * - function calls and their outputs count like chat function calls (+3 each);
 * - reasoning items count their summary text (encrypted reasoning cannot be seen);
 * - `previous_response_id` / `conversation` history lives upstream and is not counted here:
 *   reconciliation charges it when the usage comes back.
 */
import {
  approximateAudioTokens,
  approximateFileTokens,
  countArguments,
  countJsonSchemaFormat,
  countStringLeaves,
  countToolChoice,
  readImageDetail,
  tallyImage,
  type CountContext,
  type PromptTally,
} from './count-parts.js';
import { replyPrimingTokens } from './count-chat.js';
import { isJsonObject, readArray, readObject, readOptionalString, readString, type JsonObject } from './read-body.js';
import { readFunctionDefinition, renderFunctionDefinitions, type FunctionDefinition } from './render-functions.js';

const TOKENS_PER_MESSAGE = 3;
const TOKENS_PER_CALL = 3;
const FUNCTIONS_BLOCK_TOKENS = 9;

/**
 * Input tokens reserved per built-in tool (an approximation; the real cost depends on what the
 * tool fetches). Web search: OpenAI bills search content as input tokens (a fixed block of 8,000
 * per call on some models). Unknown tool types get the default.
 */
const BUILTIN_TOOL_TOKENS: Readonly<Record<string, number>> = {
  web_search: 8_000,
  web_search_preview: 8_000,
  file_search: 4_000,
  code_interpreter: 1_000,
  computer_use_preview: 1_000,
  image_generation: 1_000,
  mcp: 1_000,
  local_shell: 500,
  shell: 500,
  apply_patch: 500,
  default: 500,
};

function tallyInputPart(part: unknown, context: CountContext, tally: PromptTally, param: string): void {
  if (typeof part === 'string') {
    tally.tokens += context.counter.count(part);
    return;
  }
  const object = readObject(part, param);
  const type = readString(object['type'], `${param}.type`);
  switch (type) {
    case 'input_text':
    case 'output_text':
    case 'text':
      tally.tokens += context.counter.count(readString(object['text'], `${param}.text`));
      return;
    case 'refusal':
      tally.tokens += context.counter.count(readString(object['refusal'], `${param}.refusal`));
      return;
    case 'input_image': {
      const url = readOptionalString(object['image_url'], `${param}.image_url`);
      tallyImage(tally, context, url, readImageDetail(object['detail'], `${param}.detail`));
      return;
    }
    case 'input_file': {
      tally.tokens += approximateFileTokens(readOptionalString(object['file_data'], `${param}.file_data`));
      const filename = readOptionalString(object['filename'], `${param}.filename`);
      if (filename !== undefined) tally.tokens += context.counter.count(filename);
      return;
    }
    case 'input_audio': {
      const audio = isJsonObject(object['input_audio']) ? object['input_audio'] : object;
      const data = readOptionalString(audio['data'], `${param}.input_audio.data`) ?? '';
      const audioTokens = approximateAudioTokens(data.length, readOptionalString(audio['format'], `${param}.input_audio.format`));
      tally.tokens += audioTokens;
      tally.audioTokens = (tally.audioTokens ?? 0) + audioTokens;
      return;
    }
    default:
      tally.tokens += countStringLeaves(object, context, param);
  }
}

function tallyContent(content: unknown, context: CountContext, tally: PromptTally, param: string): void {
  if (content === undefined || content === null) return;
  if (typeof content === 'string') {
    tally.tokens += context.counter.count(content);
    return;
  }
  readArray(content, param).forEach((part, i) => tallyInputPart(part, context, tally, `${param}[${i}]`));
}

function tallyItem(item: unknown, context: CountContext, tally: PromptTally, param: string): void {
  const object = readObject(item, param);
  const type = object['type'];
  const { counter } = context;
  if (type === undefined || type === 'message') {
    const role = readString(object['role'], `${param}.role`);
    tally.tokens += TOKENS_PER_MESSAGE + counter.count(role);
    tallyContent(object['content'], context, tally, `${param}.content`);
    return;
  }
  if (typeof type !== 'string') {
    readString(type, `${param}.type`);
    return;
  }
  switch (type) {
    case 'function_call':
      tally.tokens += TOKENS_PER_CALL + counter.count(readString(object['name'], `${param}.name`));
      tally.tokens += countArguments(object['arguments'], context, `${param}.arguments`);
      return;
    case 'custom_tool_call':
      tally.tokens += TOKENS_PER_CALL + counter.count(readString(object['name'], `${param}.name`));
      tally.tokens += countArguments(object['input'], context, `${param}.input`);
      return;
    case 'function_call_output':
    case 'custom_tool_call_output': {
      tally.tokens += TOKENS_PER_CALL;
      const output = object['output'];
      if (typeof output === 'string') tally.tokens += counter.count(output);
      else tallyContent(output, context, tally, `${param}.output`);
      return;
    }
    case 'reasoning': {
      const summary = object['summary'];
      if (Array.isArray(summary)) {
        summary.forEach((entry, i) => {
          if (isJsonObject(entry) && typeof entry['text'] === 'string') tally.tokens += counter.count(entry['text']);
          else if (!isJsonObject(entry)) readObject(entry, `${param}.summary[${i}]`);
        });
      }
      return;
    }
    case 'item_reference':
      return;
    default:
      // Built-in tool calls and their outputs (web_search_call, computer_call_output, …).
      tally.tokens += TOKENS_PER_CALL + countStringLeaves(object, context, param);
  }
}

function readResponsesTools(body: JsonObject, context: CountContext, tally: PromptTally): void {
  const tools = body['tools'];
  if (tools === undefined || tools === null) return;
  const functions: FunctionDefinition[] = [];
  readArray(tools, 'tools').forEach((tool, i) => {
    const param = `tools[${i}]`;
    const object = readObject(tool, param);
    const type = readString(object['type'], `${param}.type`);
    if (type === 'function') functions.push(readFunctionDefinition(object, param));
    else if (type === 'custom') {
      const name = readString(object['name'], `${param}.name`);
      const description = readOptionalString(object['description'], `${param}.description`);
      functions.push({ name, ...(description === undefined ? {} : { description }), param });
    } else {
      const known = Object.hasOwn(BUILTIN_TOOL_TOKENS, type) ? BUILTIN_TOOL_TOKENS[type] : undefined;
      tally.tokens += known ?? (BUILTIN_TOOL_TOKENS['default'] as number);
    }
  });
  if (functions.length > 0) {
    tally.tokens += context.counter.count(renderFunctionDefinitions(functions)) + FUNCTIONS_BLOCK_TOKENS;
  }
}

/** Prompt tokens (and the image share) of a Responses API body. */
export function countResponsesPrompt(body: JsonObject, context: CountContext): PromptTally {
  const tally: PromptTally = { tokens: 0, imageTokens: 0 };
  const { counter } = context;
  const instructions = readOptionalString(body['instructions'], 'instructions');
  if (instructions !== undefined) tally.tokens += TOKENS_PER_MESSAGE + counter.count('system') + counter.count(instructions);
  const input = body['input'];
  if (typeof input === 'string') {
    tally.tokens += TOKENS_PER_MESSAGE + counter.count('user') + counter.count(input);
  } else if (input !== undefined && input !== null) {
    readArray(input, 'input').forEach((item, i) => tallyItem(item, context, tally, `input[${i}]`));
  }
  readResponsesTools(body, context, tally);
  tally.tokens += countToolChoice(body['tool_choice'], context, 'tool_choice');
  const text = body['text'];
  if (text !== undefined && text !== null) {
    const textObject = readObject(text, 'text');
    tally.tokens += countJsonSchemaFormat(textObject['format'], context, 'text.format');
  }
  tally.tokens += replyPrimingTokens(context.model);
  return tally;
}
