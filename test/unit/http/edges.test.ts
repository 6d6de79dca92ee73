/** Cheap edges of hostile input: hop-by-hop headers a message names, forwarded query parameters, terminal-safe CLI cells. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { printable, table } from '../../../src/cli/format.js';
import { toClientHeaders, toUpstreamHeaders } from '../../../src/http/headers.js';
import { modelNameProblem } from '../../../src/http/client-strings.js';
import { upstreamPath } from '../../../src/pipeline/forward.js';

describe('headers named in Connection', () => {
  it('are not forwarded upstream, whatever their case or spacing', () => {
    const out = toUpstreamHeaders(
      { connection: 'X-Secret-Route , keep-alive,openai-beta', 'x-secret-route': 'internal', 'openai-beta': 'assistants=v2', 'x-stainless-os': 'Linux' },
      true,
    );
    expect(out['x-secret-route']).toBeUndefined();
    expect(out['openai-beta']).toBeUndefined();
    expect(out.connection).toBeUndefined();
    expect(out['x-stainless-os']).toBe('Linux');
  });

  it('are not relayed to the client either', () => {
    const out = toClientHeaders({ connection: 'x-upstream-debug', 'x-upstream-debug': '1', 'openai-processing-ms': '12' }, 'req_1', false);
    expect(out['x-upstream-debug']).toBeUndefined();
    expect(out['openai-processing-ms']).toBe('12');
  });

  it('leaves everything else alone when Connection names nothing', () => {
    const out = toUpstreamHeaders({ connection: 'close', 'openai-beta': 'x' }, false);
    expect(out['openai-beta']).toBe('x');
  });
});

describe('query parameters sent upstream', () => {
  it('are none of the client’s for the endpoints proxied today', () => {
    expect(upstreamPath('http://proxy.test/v1/chat/completions?weight=0&api-key=x')).toBe('/chat/completions');
    expect(upstreamPath('http://proxy.test/v1/models/gpt-4o?x=1')).toBe('/models/gpt-4o');
    expect(upstreamPath('http://proxy.test/v1/embeddings')).toBe('/embeddings');
  });

  it('are only those an endpoint defines, when it defines some', () => {
    expect(upstreamPath('http://proxy.test/v1/responses/resp_1?include[]=a&weight=3&stream=true', ['include[]', 'stream'])).toBe(
      '/responses/resp_1?include%5B%5D=a&stream=true',
    );
    expect(upstreamPath('http://proxy.test/v1/responses/resp_1?weight=3', ['stream'])).toBe('/responses/resp_1');
  });
});

describe('CLI tables', () => {
  it('show no control character a tenant could have put in a cell', () => {
    fc.assert(
      fc.property(fc.array(fc.string({ unit: 'binary' }), { minLength: 1, maxLength: 4 }), (cells) => {
        const out = table(
          cells.map((_, i) => `h${i}`),
          [cells],
        );
        // Only the table's own newlines remain.
        const controls = [...out].filter((ch) => ch !== '\n' && (ch.charCodeAt(0) < 0x20 || (ch.charCodeAt(0) >= 0x7f && ch.charCodeAt(0) <= 0x9f)));
        expect(controls).toEqual([]);
        expect(out.split('\n')).toHaveLength(3);
      }),
      { numRuns: 50 },
    );
  });

  it('replace escape sequences and carriage returns visibly', () => {
    expect(printable('gpt\u001b[2J\r-4o\u0085')).toBe('gpt\ufffd[2J\ufffd-4o\ufffd');
    expect(printable('plain ✓ text')).toBe('plain ✓ text');
  });
});

describe('model names', () => {
  it('accept the shapes real providers use and refuse the rest', () => {
    for (const ok of ['gpt-4o', 'ft:gpt-4o-mini:org::abc', 'meta-llama/Llama-3.1-8B', 'llama3:8b', 'claude@2024', 'a+b=c', 'm'.repeat(256)]) {
      expect(modelNameProblem(ok), ok).toBeUndefined();
    }
    for (const bad of ['m'.repeat(257), ' gpt', 'gpt 4', 'gpt\n', '-x', '.x', 'é', '<b>', 'a"b']) {
      expect(modelNameProblem(bad), bad).toBeDefined();
    }
  });
});

describe('the upstream path of any request URL', () => {
  /** What upstreamPath computed before it had a fast way for plain paths. */
  function parsed(requestUrl: string, queryParameters: readonly string[] = []): string {
    const url = new URL(requestUrl);
    const path = url.pathname.slice(url.pathname.indexOf('/v1/') + '/v1'.length);
    if (queryParameters.length === 0 || url.search === '') return path;
    const kept = new URLSearchParams();
    for (const [name, value] of url.searchParams) if (queryParameters.includes(name)) kept.append(name, value);
    const query = kept.toString();
    return query === '' ? path : `${path}?${query}`;
  }

  it('is what parsing it as a URL gives, dot segments, escapes and queries included (property)', () => {
    const piece = fc.oneof(
      fc.constantFrom('v1', 'chat', 'completions', 'responses', 'resp_1', '.', '..', '', '%2e', '%2F', 'a b', 'é', '\\', '?x=1', '#f', '?stream=true&w=2', ':'),
      fc.string({ unit: 'grapheme-ascii', maxLength: 6 }),
    );
    fc.assert(
      fc.property(
        fc.constantFrom('http://proxy.test', 'https://proxy.test:8443', 'http://127.0.0.1:4000'),
        fc.array(piece, { maxLength: 6 }),
        fc.constantFrom([], ['stream']),
        (origin, pieces, query) => {
          const requestUrl = `${origin}/v1/${pieces.join('/')}`;
          let expected: string;
          try {
            expected = parsed(requestUrl, query);
          } catch {
            return; // not a URL: the request never got this far
          }
          expect(upstreamPath(requestUrl, query)).toBe(expected);
        },
      ),
      { numRuns: 500 },
    );
  });
});
