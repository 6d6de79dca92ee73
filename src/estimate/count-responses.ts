/**
 * Prompt tokens of a Responses API request. The API does not publish its framing; we count it
 * like chat (3 tokens + role per message, reply priming), which matches the usage observed for
 * simple inputs, and document the approximations:
 * - `instructions` count as a system message;
 * - function tools render like chat functions; built-in tools the client runs reserve a fixed
 *   amount for their definitions ({@link TOOL_DEFINITION_TOKENS});
 * - function calls and their outputs count like chat function calls (+3 each);
 * - reasoning items count their summary text (encrypted reasoning cannot be seen).
 * Input that lives upstream is noted as unseen (unseen.ts) with the ids it names:
 * `previous_response_id`, `conversation`, `item_reference` items, a reusable `prompt`, files by
 * id or URL, images by URL or file id, and hosted tools whose results come back as billed input
 * (MCP, web search, file search, code interpreter, computer use, and types this code does not know).
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
import { replyPrimingTokens } from './count-chat.js';
import { isJsonObject, readArray, readObject, readOptionalString, readString, type JsonObject } from './read-body.js';
import { readFunctionDefinition, renderFunctionDefinitions, type FunctionDefinition } from './render-functions.js';

const TOKENS_PER_MESSAGE = 3;
const TOKENS_PER_CALL = 3;
const FUNCTIONS_BLOCK_TOKENS = 9;

/**
 * Input tokens reserved for the definition of a built-in tool the client runs itself (its
 * results come back as visible input on the next request). An approximation.
 */
const TOOL_DEFINITION_TOKENS: Readonly<Record<string, number>> = {
  image_generation: 1_000,
  local_shell: 500,
  shell: 500,
  apply_patch: 500,
};

/** Hosted MCP servers: their tool lists and every call's result are billed as input. */
const MCP_TOOLS = new Set(['mcp']);

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
      const fileId = readOptionalString(object['file_id'], `${param}.file_id`);
      tallyImage(tally, context, url, readImageDetail(object['detail'], `${param}.detail`), fileId);
      return;
    }
    case 'input_file': {
      tally.tokens += tallyFile(
        {
          fileData: readOptionalString(object['file_data'], `${param}.file_data`),
          fileId: readOptionalString(object['file_id'], `${param}.file_id`),
          fileUrl: readOptionalString(object['file_url'], `${param}.file_url`),
        },
        context,
      );
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
      context.unseen.item(readString(object['id'], `${param}.id`));
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
    } else if (Object.hasOwn(TOOL_DEFINITION_TOKENS, type)) {
      tally.tokens += TOOL_DEFINITION_TOKENS[type] as number;
    } else {
      // Hosted tools (web search, file search, code interpreter, computer use, and any type
      // newer than this code): what they fetch or run is read by the model and billed as input.
      context.unseen.note(MCP_TOOLS.has(type) ? 'mcp' : 'tool_results');
    }
  });
  if (functions.length > 0) {
    tally.tokens += context.counter.count(renderFunctionDefinitions(functions)) + FUNCTIONS_BLOCK_TOKENS;
  }
}

/**
 * Stored input a body names at its top level: a previous response, a conversation, a reusable
 * prompt (its template is unseen; its variables are counted like input parts, so the files and
 * images they name are noted too).
 */
function noteStoredInput(body: JsonObject, context: CountContext, tally: PromptTally): void {
  const previous = readOptionalString(body['previous_response_id'], 'previous_response_id');
  if (previous !== undefined) context.unseen.previousResponse(previous);
  const conversation = body['conversation'];
  if (typeof conversation === 'string') context.unseen.conversation(conversation);
  else if (conversation !== undefined && conversation !== null) {
    context.unseen.conversation(readString(readObject(conversation, 'conversation')['id'], 'conversation.id'));
  }
  const prompt = body['prompt'];
  if (prompt !== undefined && prompt !== null) {
    const object = readObject(prompt, 'prompt');
    readString(object['id'], 'prompt.id');
    context.unseen.note('stored_prompt');
    const variables = object['variables'];
    if (variables !== undefined && variables !== null) {
      for (const [name, value] of Object.entries(readObject(variables, 'prompt.variables'))) {
        tallyInputPart(value, context, tally, `prompt.variables.${name}`);
      }
    }
  }
}

/** Prompt tokens (and the image share) of a Responses API body. */
export function countResponsesPrompt(body: JsonObject, context: CountContext): PromptTally {
  const tally: PromptTally = { tokens: 0, imageTokens: 0 };
  const { counter } = context;
  noteStoredInput(body, context, tally);
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
