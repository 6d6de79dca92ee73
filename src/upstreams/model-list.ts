/**
 * `GET /v1/models` across upstreams (a config with an `upstreams` list): the
 * models a key may use, wherever they are served. Each OpenAI-dialect
 * upstream is asked for its own list; a model it names is listed when
 * requests for it are routed to that upstream under that name. The names the
 * config gives (exact names, aliases, exact routes) are listed whether or not
 * an upstream lists them (an Azure deployment's public name, a local model).
 * An upstream that cannot answer is left out: the listing is what is known now.
 */
import { candidatesFor, namedModels } from './routing.js';
import type { Router } from './router.js';
import type { UpstreamRequest } from './pool.js';

export interface ModelEntry {
  readonly id: string;
  readonly object: 'model';
  readonly created: number;
  readonly owned_by: string;
}

/** Every model served, sorted by id, that `allowed` lets through. */
export async function listRoutedModels(
  router: Router,
  request: Omit<UpstreamRequest, 'method' | 'path' | 'body'>,
  allowed: (model: string) => boolean,
): Promise<ModelEntry[]> {
  const found = new Map<string, ModelEntry>();
  const add = (id: string, owner: string, created = 0): void => {
    if (!found.has(id) && allowed(id)) found.set(id, { id, object: 'model', created, owned_by: owner });
  };
  for (const { model, upstream } of namedModels(router.table, 'openai')) add(model, upstream);
  const lists = await Promise.all(
    router.upstreams
      .filter((upstream) => upstream.spec.kind !== 'anthropic')
      .map(async (upstream) => {
        try {
          const response = await upstream.send({ ...request, method: 'GET', path: '/models' });
          const chunks: Buffer[] = [];
          for await (const chunk of response.body) chunks.push(chunk as Buffer);
          const bytes = Buffer.concat(chunks);
          if (response.status !== 200) return [];
          const data = (JSON.parse(bytes.toString('utf8')) as { data?: unknown }).data;
          if (!Array.isArray(data)) return [];
          return data.flatMap((item) => {
            const id = (item as { id?: unknown } | null)?.id;
            const created = (item as { created?: unknown } | null)?.created;
            return typeof id === 'string' && id.length <= 200 ? [{ id, created: typeof created === 'number' ? created : 0, upstream: upstream.name }] : [];
          });
        } catch {
          return [];
        }
      }),
  );
  for (const list of lists) {
    for (const item of list) {
      const first = candidatesFor(router.table, item.id, 'openai')[0];
      if (first?.upstream === item.upstream && first.upstreamModel === item.id) add(item.id, item.upstream, item.created);
    }
  }
  return [...found.values()].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}
