import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { BatchError } from '../../../src/batches/batch-errors.js';
import { OPENAI_BATCH_LIMITS, OpenAiBatchFile, openAiBatchTarget, readOpenAiBatchLine } from '../../../src/batches/batch-lines.js';
import { JsonlSplitter } from '../../../src/batches/jsonl-lines.js';

const encode = (text: string): Uint8Array => new TextEncoder().encode(text);

function chatLine(customId: string, overrides: Record<string, unknown> = {}): string {
  return JSON.stringify({
    custom_id: customId,
    method: 'POST',
    url: '/v1/chat/completions',
    body: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] },
    ...overrides,
  });
}

/** Every error a file gets, line by line, then the file's own. */
function errorsOf(file: string, batch = new OpenAiBatchFile(), maxLineBytes = 10_000): BatchError[] {
  const splitter = new JsonlSplitter(maxLineBytes);
  const errors: BatchError[] = [];
  for (const line of [...splitter.feed(encode(file)), ...splitter.end()]) {
    const result = batch.add(line);
    if (!result.ok) errors.push(result.error);
  }
  const last = batch.finish();
  if (last !== undefined) errors.push(last);
  return errors;
}

const codes = (errors: readonly BatchError[]): Array<[string, number | null, string | null]> => errors.map((e) => [e.code, e.line, e.param]);

describe('one OpenAI batch line', () => {
  it('reads custom_id, url, model and body of a good line', () => {
    const read = readOpenAiBatchLine(chatLine('req-1'), 7);
    expect(read).toEqual({
      ok: true,
      value: {
        line: 7,
        bodyParam: 'body',
        customId: 'req-1',
        target: { url: '/v1/chat/completions', endpoint: 'chat' },
        model: 'gpt-4o-mini',
        body: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] },
      },
    });
  });

  it('maps every batch url Tollgate serves to its dialect, and no other', () => {
    expect(openAiBatchTarget('/v1/chat/completions')?.endpoint).toBe('chat');
    expect(openAiBatchTarget('/v1/responses')?.endpoint).toBe('responses');
    expect(openAiBatchTarget('/v1/embeddings')).toEqual({ url: '/v1/embeddings', endpoint: 'embeddings', maxInputs: 50_000 });
    expect(openAiBatchTarget('/v1/completions')?.endpoint).toBe('completions');
    expect(openAiBatchTarget('/v1/moderations')).toBeUndefined();
    expect(openAiBatchTarget('/v1/messages')).toBeUndefined();
  });

  it.each([
    ['not JSON', '{"custom_id": "a",', 'invalid_json_line', null],
    ['not an object', '[1,2]', 'invalid_type', null],
    ['no custom_id', chatLine('x', { custom_id: undefined }), 'missing_required_parameter', 'custom_id'],
    ['a numeric custom_id', chatLine('x', { custom_id: 12 }), 'invalid_type', 'custom_id'],
    ['an empty custom_id', chatLine(''), 'invalid_value', 'custom_id'],
    ['no method', chatLine('x', { method: undefined }), 'missing_required_parameter', 'method'],
    ['method GET', chatLine('x', { method: 'GET' }), 'invalid_value', 'method'],
    ['a url Tollgate does not bill', chatLine('x', { url: '/v1/moderations' }), 'invalid_value', 'url'],
    ['no body', chatLine('x', { body: undefined }), 'missing_required_parameter', 'body'],
    ['a string body', chatLine('x', { body: '{}' }), 'invalid_type', 'body'],
    ['a body without model', chatLine('x', { body: { messages: [] } }), 'missing_required_parameter', 'body.model'],
    ['a numeric model', chatLine('x', { body: { model: 4 } }), 'invalid_type', 'body.model'],
  ])('refuses %s', (_name, text, code, param) => {
    const read = readOpenAiBatchLine(text, 3);
    expect(read.ok).toBe(false);
    if (!read.ok) expect([read.error.code, read.error.line, read.error.param]).toEqual([code, 3, param]);
  });
});

describe('an OpenAI batch input file', () => {
  it('accepts a good file and counts its requests and bytes', () => {
    const file = `${chatLine('a')}\n${chatLine('b')}\n`;
    const batch = new OpenAiBatchFile();
    expect(errorsOf(file, batch)).toEqual([]);
    expect(batch.requests).toBe(2);
    expect(batch.bytes).toBe(encode(file).length);
    expect(batch.url).toBe('/v1/chat/completions');
    expect(batch.model).toBe('gpt-4o-mini');
  });

  it('refuses a custom_id used twice, naming the second line', () => {
    expect(codes(errorsOf([chatLine('a'), chatLine('b'), chatLine('a')].join('\n')))).toEqual([['duplicate_custom_id', 3, 'custom_id']]);
  });

  it('tells long custom_ids apart and finds them again (they are kept as digests)', () => {
    const long = (c: string): string => c.repeat(500);
    expect(errorsOf([chatLine(long('a')), chatLine(long('b'))].join('\n'))).toEqual([]);
    expect(codes(errorsOf([chatLine(long('a')), chatLine(long('a'))].join('\n')))).toEqual([['duplicate_custom_id', 2, 'custom_id']]);
  });

  it('refuses a second url or a second model', () => {
    const otherUrl = chatLine('b', { url: '/v1/responses', body: { model: 'gpt-4o-mini', input: 'hi' } });
    expect(codes(errorsOf([chatLine('a'), otherUrl].join('\n')))).toEqual([['url_mismatch', 2, 'url']]);
    const otherModel = chatLine('b', { body: { model: 'gpt-4o', messages: [] } });
    expect(codes(errorsOf([chatLine('a'), otherModel].join('\n')))).toEqual([['model_mismatch', 2, 'body.model']]);
  });

  it("holds every line to the batch's endpoint when it is known", () => {
    const batch = new OpenAiBatchFile({ url: '/v1/embeddings' });
    expect(codes(errorsOf(chatLine('a'), batch))).toEqual([['url_mismatch', 1, 'url']]);
  });

  it('refuses blank lines, lines over the byte limit and invalid UTF-8, by line', () => {
    const file = new Uint8Array([...encode(`${chatLine('a')}\n\n${chatLine('b')}\n${'x'.repeat(500)}\n{`), 0xff, ...encode('}\n')]);
    const splitter = new JsonlSplitter(400);
    const batch = new OpenAiBatchFile();
    const errors = [...splitter.feed(file), ...splitter.end()].flatMap((line) => {
      const result = batch.add(line);
      return result.ok ? [] : [result.error];
    });
    expect(codes(errors)).toEqual([
      ['invalid_json_line', 2, null],
      ['line_too_long', 4, null],
      ['invalid_json_line', 5, null],
    ]);
    expect(errors[2]?.message).toContain('UTF-8');
  });

  it('refuses the request past the request limit and the line past the byte limit', () => {
    const file = [chatLine('a'), chatLine('b'), chatLine('c')].join('\n');
    expect(codes(errorsOf(file, new OpenAiBatchFile({ limits: { maxRequests: 2, maxBytes: 1_000_000 } })))).toEqual([['too_many_tasks', 3, null]]);
    const lineBytes = chatLine('a').length + 1;
    expect(codes(errorsOf(file, new OpenAiBatchFile({ limits: { maxRequests: 10, maxBytes: lineBytes * 2 } })))).toEqual([['file_too_large', 3, null]]);
  });

  it("uses OpenAI's documented limits by default: 50,000 requests, 200 MB", () => {
    expect(OPENAI_BATCH_LIMITS).toEqual({ maxRequests: 50_000, maxBytes: 200 * 1024 * 1024 });
    const batch = new OpenAiBatchFile();
    const line = { kind: 'line', text: '', bytes: 1 } as const;
    for (let n = 1; n <= 50_000; n += 1) batch.add({ ...line, number: n, text: chatLine(`r${n}`) });
    expect(batch.requests).toBe(50_000);
    const next = batch.add({ ...line, number: 50_001, text: chatLine('r50001') });
    expect(next.ok ? undefined : next.error.code).toBe('too_many_tasks');
    const big = new OpenAiBatchFile().add({ kind: 'line', number: 1, text: chatLine('a'), bytes: 200 * 1024 * 1024 + 1 });
    expect(big.ok ? undefined : big.error.code).toBe('file_too_large');
  });

  it('refuses an empty file', () => {
    expect(codes(errorsOf(''))).toEqual([['empty_file', null, null]]);
  });

  it('never throws on arbitrary bytes, however chunked: every line is a request or an error', () => {
    const lineLike = fc.oneof(
      fc.uint8Array({ maxLength: 60 }),
      fc.jsonValue({ maxDepth: 3 }).map((value) => encode(JSON.stringify(value) ?? 'null')),
      fc
        .record(
          {
            custom_id: fc.oneof(fc.string(), fc.integer()),
            method: fc.constantFrom('POST', 'GET'),
            url: fc.constantFrom('/v1/embeddings', '/x'),
            body: fc.jsonValue({ maxDepth: 2 }),
          },
          { requiredKeys: [] },
        )
        .map((value) => encode(JSON.stringify(value))),
    );
    fc.assert(
      fc.property(fc.array(lineLike, { maxLength: 8 }), fc.array(fc.nat(), { maxLength: 6 }), (lines, cuts) => {
        const bytes = new Uint8Array(lines.flatMap((line) => [...line, 0x0a]));
        const splitter = new JsonlSplitter(48);
        const batch = new OpenAiBatchFile({ limits: { maxRequests: 5, maxBytes: 300 } });
        const points = [...new Set(cuts.map((cut) => cut % (bytes.length + 1)))].sort((a, b) => a - b);
        let start = 0;
        for (const point of [...points, bytes.length]) {
          for (const line of splitter.feed(bytes.subarray(start, point))) {
            const result = batch.add(line);
            expect(result.ok || (typeof result.error.code === 'string' && result.error.line === line.number)).toBe(true);
          }
          start = point;
        }
        for (const line of splitter.end()) batch.add(line);
        batch.finish();
      }),
      { numRuns: 300 },
    );
  });
});
