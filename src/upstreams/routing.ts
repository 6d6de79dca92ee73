/**
 * Which upstreams serve a model, in the order they are tried (README,
 * "Upstreams"). Pure: no I/O, the table is the config's.
 *
 * 1. A `routes` entry whose pattern matches the model (an exact name before
 *    any pattern, patterns in the file's order) lists the upstreams in order:
 *    the first answers, the next ones are its fallbacks. Listing an upstream
 *    there means it serves the model (under its alias, if it has one).
 * 2. Otherwise the first upstream in the file's order that serves the model:
 *    by alias, by exact name, or by a `*` pattern. No fallback unless a route
 *    says so: a fallback may answer at another price, which the operator chooses.
 *
 * Upstreams of kind `anthropic` speak Anthropic's Messages API, the others
 * OpenAI's: a request is only routed to upstreams of its own dialect.
 */
import type { UpstreamKind } from './upstream-config.js';

/** The API a request speaks: OpenAI's routes, or Anthropic's `/v1/messages`. */
export type Dialect = 'openai' | 'anthropic';

interface RoutingUpstream {
  readonly name: string;
  readonly kind: UpstreamKind;
  readonly models: readonly string[];
  readonly aliases: Readonly<Record<string, string>>;
}

export interface RoutingTable {
  readonly upstreams: readonly RoutingUpstream[];
  readonly routes: readonly { readonly pattern: string; readonly upstreams: readonly string[] }[];
}

/** One upstream a request may go to, and the model name it is sent with there. */
export interface Candidate {
  readonly upstream: string;
  readonly upstreamModel: string;
}

/** A pattern split at its stars once: the request path only compares strings. */
interface CompiledPattern {
  readonly exact: boolean;
  readonly parts: readonly string[];
}

const compiled = new Map<string, CompiledPattern>();

function compile(pattern: string): CompiledPattern {
  let found = compiled.get(pattern);
  if (found === undefined) {
    found = { exact: !pattern.includes('*'), parts: pattern.split('*') };
    // Patterns come from the config and routes; the bound only guards against a caller passing names.
    if (compiled.size >= 10_000) compiled.clear();
    compiled.set(pattern, found);
  }
  return found;
}

/** True when `name` matches `pattern`, where `*` stands for any run of characters (none included). */
export function matchesPattern(pattern: string, name: string): boolean {
  const { exact, parts } = compile(pattern);
  if (exact) return pattern === name;
  const first = parts[0]!;
  const last = parts[parts.length - 1]!;
  if (name.length < first.length + last.length || !name.startsWith(first) || !name.endsWith(last)) return false;
  let at = first.length;
  const end = name.length - last.length;
  for (let i = 1; i < parts.length - 1; i += 1) {
    const found = name.indexOf(parts[i]!, at);
    if (found < 0 || found + parts[i]!.length > end) return false;
    at = found + parts[i]!.length;
  }
  return true;
}

/** The name `upstream` knows `model` by, or undefined when it does not serve it. */
function servedAs(upstream: RoutingUpstream, model: string): string | undefined {
  const alias = upstream.aliases[model];
  if (alias !== undefined && Object.hasOwn(upstream.aliases, model)) return alias;
  return upstream.models.some((pattern) => matchesPattern(pattern, model)) ? model : undefined;
}

function dialectOf(kind: UpstreamKind): Dialect {
  return kind === 'anthropic' ? 'anthropic' : 'openai';
}

/** The upstreams to try for `model`, in order; empty when none of the dialect serves it. */
export function candidatesFor(table: RoutingTable, model: string, dialect: Dialect): Candidate[] {
  const byName = upstreamsByName(table);
  const route = table.routes.find((r) => r.pattern === model) ?? table.routes.find((r) => r.pattern.includes('*') && matchesPattern(r.pattern, model));
  if (route !== undefined) {
    const listed: Candidate[] = [];
    for (const name of route.upstreams) {
      const upstream = byName.get(name);
      if (upstream === undefined || dialectOf(upstream.kind) !== dialect) continue;
      listed.push({ upstream: name, upstreamModel: servedAs(upstream, model) ?? model });
    }
    return listed;
  }
  for (const upstream of table.upstreams) {
    if (dialectOf(upstream.kind) !== dialect) continue;
    const upstreamModel = servedAs(upstream, model);
    if (upstreamModel !== undefined) return [{ upstream: upstream.name, upstreamModel }];
  }
  return [];
}

const indexes = new WeakMap<RoutingTable, ReadonlyMap<string, RoutingUpstream>>();

function upstreamsByName(table: RoutingTable): ReadonlyMap<string, RoutingUpstream> {
  let index = indexes.get(table);
  if (index === undefined) {
    index = new Map(table.upstreams.map((upstream) => [upstream.name, upstream]));
    indexes.set(table, index);
  }
  return index;
}

/**
 * The models a listing can name without asking anyone: exact names, aliases and
 * exact route names, each with the first upstream that serves it (`*` patterns name no model).
 */
export function namedModels(table: RoutingTable, dialect: Dialect): Array<{ model: string; upstream: string }> {
  const seen = new Map<string, string>();
  const note = (model: string): void => {
    if (model.includes('*') || seen.has(model)) return;
    const first = candidatesFor(table, model, dialect)[0];
    if (first !== undefined) seen.set(model, first.upstream);
  };
  for (const upstream of table.upstreams) {
    for (const model of Object.keys(upstream.aliases)) note(model);
    for (const model of upstream.models) note(model);
  }
  for (const route of table.routes) note(route.pattern);
  return [...seen].map(([model, upstream]) => ({ model, upstream }));
}
