/**
 * Prompt tokens of a chat completions request, the way the API bills it: per message 3 tokens
 * plus role, content and name (+1 for a name); 3 tokens priming the reply (2 for reasoning
 * models); function/tool definitions rendered as a TypeScript namespace (+9, −4 when a system
 * message exists, whose content then gains a trailing newline); `function_call` messages +3,
 * `function` role messages −2 (sources and the recorded fixtures: src/estimate/README.md and
 * test/fixtures/estimate). Approximations (documented where they
 * are made): tool calls and tool messages (treated like function calls / messages), audio,
 * files, `response_format` schemas, `tool_choice`.
 */
import {
  approximateAudioTokens,
  countArguments,
  countJsonSchemaFormat,
  countStringLeaves,
  countToolChoice,
  readImageDetail,
  tallyFile,
  tallyImage,
  type CountContext,
  type PromptTally,
} from './count-parts.js';
import { EstimateInputError } from './errors.js';
import { isReasoningModel } from './models.js';
import { isJsonObject, readArray, readObject, readOptionalString, readOwnField, readString, type JsonObject } from './read-body.js';
import { readFunctionDefinition, renderFunctionDefinitions, type FunctionDefinition } from './render-functions.js';

const CHAT_ROLES = new Set(['system', 'developer', 'user', 'assistant', 'tool', 'function']);

/** Tokens every message carries (`<|start|>{role}<|message|>…<|end|>` minus the role itself). */
const TOKENS_PER_MESSAGE = 3;
/** Extra tokens of a message `name`. */
const TOKENS_PER_NAME = 1;
/** Tokens of a function definitions block beyond its rendered text. */
const FUNCTIONS_BLOCK_TOKENS = 9;
/** Tokens saved when the definitions join an existing system message. */
const FUNCTIONS_WITH_SYSTEM_SAVING = 4;
/** Extra tokens of an assistant `function_call` / each tool call. */
const TOKENS_PER_FUNCTION_CALL = 3;

/** Reply priming: `<|start|>assistant<|message|>`; reasoning models are observed to bill one less. */
export function replyPrimingTokens(model: string): number {
  return isReasoningModel(model) ? 2 : 3;
}

function readChatFunctions(body: JsonObject): FunctionDefinition[] {
  const definitions: FunctionDefinition[] = [];
  if (body['functions'] !== undefined && body['functions'] !== null) {
    const functions = readArray(body['functions'], 'functions');
    functions.forEach((fn, i) => definitions.push(readFunctionDefinition(fn, `functions[${i}]`)));
  }
  if (body['tools'] !== undefined && body['tools'] !== null) {
    const tools = readArray(body['tools'], 'tools');
    tools.forEach((tool, i) => {
      const param = `tools[${i}]`;
      const object = readObject(tool, param);
      if (object['type'] === 'function' || object['type'] === undefined) {
        definitions.push(readFunctionDefinition(object['function'], `${param}.function`));
      } else if (isJsonObject(readOwnField(object, String(object['type'])))) {
        // Custom (free-form) tools: rendered as a function without parameters — an approximation.
        const inner = readOwnField(object, String(object['type'])) as JsonObject;
        const name = readOptionalString(inner['name'], `${param}.${String(object['type'])}.name`) ?? String(object['type']);
        const description = readOptionalString(inner['description'], `${param}.${String(object['type'])}.description`);
        definitions.push({ name, ...(description === undefined ? {} : { description }), param });
      }
    });
  }
  return definitions;
}

function tallyContentPart(part: unknown, context: CountContext, tally: PromptTally, param: string, padNewline: boolean): void {
  const object = readObject(part, param);
  const type = readString(object['type'], `${param}.type`);
  switch (type) {
    case 'text': {
      const text = readString(object['text'], `${param}.text`);
      tally.tokens += context.counter.count(padNewline ? `${text}\n` : text);
      return;
    }
    case 'refusal':
      tally.tokens += context.counter.count(readString(object['refusal'], `${param}.refusal`));
      return;
    case 'image_url': {
      const image = object['image_url'];
      if (typeof image === 'string') {
        tallyImage(tally, context, image, 'auto');
        return;
      }
      const imageObject = readObject(image, `${param}.image_url`);
      const url = readString(imageObject['url'], `${param}.image_url.url`);
      tallyImage(tally, context, url, readImageDetail(imageObject['detail'], `${param}.image_url.detail`));
      return;
    }
    case 'input_audio': {
      const audio = readObject(object['input_audio'], `${param}.input_audio`);
      const data = readString(audio['data'], `${param}.input_audio.data`);
      const format = readOptionalString(audio['format'], `${param}.input_audio.format`);
      const audioTokens = approximateAudioTokens(data.length, format);
      tally.tokens += audioTokens;
      tally.audioTokens = (tally.audioTokens ?? 0) + audioTokens;
      return;
    }
    case 'file': {
      const file = readObject(object['file'], `${param}.file`);
      tally.tokens += tallyFile(
        { fileData: readOptionalString(file['file_data'], `${param}.file.file_data`), fileId: readOptionalString(file['file_id'], `${param}.file.file_id`) },
        context,
      );
      const filename = readOptionalString(file['filename'], `${param}.file.filename`);
      if (filename !== undefined) tally.tokens += context.counter.count(filename);
      return;
    }
    default:
      // A part type newer than this code: count its text rather than refuse the request.
      tally.tokens += countStringLeaves(object, context, param);
  }
}

function tallyMessage(message: unknown, index: number, context: CountContext, tally: PromptTally, padNewline: boolean): void {
  const param = `messages[${index}]`;
  const object = readObject(message, param);
  const role = readString(object['role'], `${param}.role`);
  if (!CHAT_ROLES.has(role)) {
    throw new EstimateInputError(
      `Invalid value for '${param}.role': expected one of ${[...CHAT_ROLES].join(', ')}, but got '${role}'.`,
      `${param}.role`,
      'invalid_value',
    );
  }
  const { counter } = context;
  tally.tokens += TOKENS_PER_MESSAGE + counter.count(role);
  const content = object['content'];
  if (typeof content === 'string') {
    tally.tokens += counter.count(padNewline ? `${content}\n` : content);
  } else if (Array.isArray(content)) {
    // The system-message padding goes to its last text part.
    let lastText = -1;
    content.forEach((part, i) => {
      if (isJsonObject(part) && part['type'] === 'text') lastText = i;
    });
    content.forEach((part, i) => tallyContentPart(part, context, tally, `${param}.content[${i}]`, padNewline && i === lastText));
  } else if (content !== undefined && content !== null) {
    throw new EstimateInputError(
      `Invalid type for '${param}.content': expected a string, an array of content parts or null.`,
      `${param}.content`,
      'invalid_type',
    );
  }
  const name = readOptionalString(object['name'], `${param}.name`);
  if (name !== undefined && name.length > 0) tally.tokens += counter.count(name) + TOKENS_PER_NAME;
  if (role === 'function') tally.tokens -= 2;
  const functionCall = object['function_call'];
  if (functionCall !== undefined && functionCall !== null) {
    const call = readObject(functionCall, `${param}.function_call`);
    tally.tokens += counter.count(readString(call['name'], `${param}.function_call.name`));
    tally.tokens += countArguments(call['arguments'], context, `${param}.function_call.arguments`);
    tally.tokens += TOKENS_PER_FUNCTION_CALL;
  }
  const toolCalls = object['tool_calls'];
  if (toolCalls !== undefined && toolCalls !== null) {
    readArray(toolCalls, `${param}.tool_calls`).forEach((toolCall, i) => {
      const callParam = `${param}.tool_calls[${i}]`;
      const call = readObject(toolCall, callParam);
      const type = typeof call['type'] === 'string' ? call['type'] : 'function';
      const inner = readObject(readOwnField(call, type), `${callParam}.${type}`);
      tally.tokens += counter.count(readString(inner['name'], `${callParam}.${type}.name`));
      tally.tokens += countArguments(inner['arguments'] ?? inner['input'], context, `${callParam}.${type}.arguments`);
      tally.tokens += TOKENS_PER_FUNCTION_CALL;
    });
  }
}

/** Prompt tokens (and the image share of them) of a chat completions body. */
export function countChatPrompt(body: JsonObject, context: CountContext): PromptTally {
  if (body['messages'] === undefined) {
    throw new EstimateInputError("Missing required parameter: 'messages'.", 'messages', 'missing_required_parameter');
  }
  const messages = readArray(body['messages'], 'messages');
  const functions = readChatFunctions(body);
  const tally: PromptTally = { tokens: 0, imageTokens: 0 };
  let systemSeen = false;
  messages.forEach((message, i) => {
    const role = isJsonObject(message) ? message['role'] : undefined;
    const isSystem = role === 'system' || role === 'developer';
    const pad = functions.length > 0 && isSystem && !systemSeen;
    if (isSystem) systemSeen = true;
    tallyMessage(message, i, context, tally, pad);
  });
  tally.tokens += replyPrimingTokens(context.model);
  if (functions.length > 0) {
    tally.tokens += context.counter.count(renderFunctionDefinitions(functions)) + FUNCTIONS_BLOCK_TOKENS;
    if (systemSeen) tally.tokens -= FUNCTIONS_WITH_SYSTEM_SAVING;
  }
  tally.tokens += countToolChoice(body['function_call'], context, 'function_call');
  tally.tokens += countToolChoice(body['tool_choice'], context, 'tool_choice');
  tally.tokens += countJsonSchemaFormat(body['response_format'], context, 'response_format');
  return tally;
}
