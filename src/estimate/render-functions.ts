/**
 * Function and tool definitions as the API puts them in the prompt: not as JSON, but as a
 * TypeScript namespace (`namespace functions { type f = (_: {…}) => any; }`). The rendering rules
 * (comment lines for descriptions at the top two levels, `?` for optional properties, enums as
 * literal unions, arrays as `T[]`, anyOf as unions) are checked against recorded API usage in
 * test/fixtures/estimate; src/estimate/README.md says where the rules come from.
 */
import { MAX_NESTING_DEPTH, failDepth, isJsonObject, readObject, readOptionalString, readString, type JsonObject } from './read-body.js';

/** A function definition as read from a request. */
export interface FunctionDefinition {
  readonly name: string;
  readonly description?: string;
  readonly parameters?: JsonObject;
  /** Path of `parameters`, for errors. */
  readonly param: string;
}

/** Reads `{ name, description?, parameters? }` at `param`. */
export function readFunctionDefinition(value: unknown, param: string): FunctionDefinition {
  const fn = readObject(value, param);
  const name = readString(fn['name'], `${param}.name`);
  const description = readOptionalString(fn['description'], `${param}.description`);
  const parameters = fn['parameters'] === undefined || fn['parameters'] === null ? undefined : readObject(fn['parameters'], `${param}.parameters`);
  return {
    name,
    ...(description === undefined ? {} : { description }),
    ...(parameters === undefined ? {} : { parameters }),
    param: `${param}.parameters`,
  };
}

function renderLiteral(value: unknown): string {
  if (typeof value === 'string') return `"${value}"`;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (value === null) return 'null';
  return 'any';
}

function renderEnum(values: unknown[], quoteStrings: boolean): string {
  return values.map((v) => (quoteStrings ? renderLiteral(v) : typeof v === 'string' ? v : renderLiteral(v))).join(' | ');
}

function renderType(schema: unknown, indent: number, depth: number, param: string): string {
  if (depth > MAX_NESTING_DEPTH) failDepth(param);
  if (!isJsonObject(schema)) return 'any';
  const anyOf = schema['anyOf'] ?? schema['oneOf'];
  if (Array.isArray(anyOf)) {
    return anyOf.map((option) => renderType(option, indent, depth + 1, param)).join(' | ');
  }
  const type = schema['type'];
  if (Array.isArray(type)) {
    return type.map((t) => renderType({ ...schema, type: t }, indent, depth + 1, param)).join(' | ');
  }
  const values = schema['enum'];
  switch (type) {
    case 'string':
      return Array.isArray(values) ? renderEnum(values, true) : 'string';
    case 'number':
    case 'integer':
      return Array.isArray(values) ? renderEnum(values, false) : 'number';
    case 'boolean':
      return 'boolean';
    case 'null':
      return 'null';
    case 'object':
      return ['{', renderProperties(schema, indent + 2, depth + 1, param), '}'].join('\n');
    case 'array': {
      const items = schema['items'];
      return items === undefined ? 'any[]' : `${renderType(items, indent, depth + 1, param)}[]`;
    }
    default:
      return Array.isArray(values) ? renderEnum(values, true) : 'any';
  }
}

function renderProperties(schema: JsonObject, indent: number, depth: number, param: string): string {
  if (depth > MAX_NESTING_DEPTH) failDepth(param);
  const properties = isJsonObject(schema['properties']) ? schema['properties'] : {};
  const required = Array.isArray(schema['required']) ? schema['required'] : [];
  const lines: string[] = [];
  for (const [name, property] of Object.entries(properties)) {
    // Descriptions appear as comments only on the first two levels, as the API renders them.
    const description = isJsonObject(property) ? property['description'] : undefined;
    if (typeof description === 'string' && description.length > 0 && indent < 2) lines.push(`// ${description}`);
    const optional = required.includes(name) ? '' : '?';
    lines.push(`${name}${optional}: ${renderType(property, indent, depth + 1, param)},`);
  }
  const pad = ' '.repeat(indent);
  return lines.map((line) => pad + line).join('\n');
}

/** The namespace text the API adds to the prompt for these function definitions. */
export function renderFunctionDefinitions(functions: readonly FunctionDefinition[]): string {
  const lines = ['namespace functions {', ''];
  for (const fn of functions) {
    if (fn.description) lines.push(`// ${fn.description}`);
    const properties = fn.parameters?.['properties'];
    if (fn.parameters && isJsonObject(properties) && Object.keys(properties).length > 0) {
      lines.push(`type ${fn.name} = (_: {`);
      lines.push(renderProperties(fn.parameters, 0, 1, fn.param));
      lines.push('}) => any;');
    } else {
      lines.push(`type ${fn.name} = () => any;`);
    }
    lines.push('');
  }
  lines.push('} // namespace functions');
  return lines.join('\n');
}

/**
 * Compact JSON of a value with a depth bound (JSON.stringify recurses without one and throws a
 * RangeError on deep input). Used to approximate `response_format` schemas.
 */
export function renderCompactJson(value: unknown, param: string, depth = 0): string {
  if (depth > MAX_NESTING_DEPTH) failDepth(param);
  if (Array.isArray(value)) return `[${value.map((v) => renderCompactJson(v, param, depth + 1)).join(',')}]`;
  if (isJsonObject(value)) {
    const parts = Object.entries(value).map(([k, v]) => `${JSON.stringify(k)}:${renderCompactJson(v, param, depth + 1)}`);
    return `{${parts.join(',')}}`;
  }
  if (value === undefined) return 'null';
  return JSON.stringify(value) ?? 'null';
}
