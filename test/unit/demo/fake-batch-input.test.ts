/** The fake's batch inputs are read as the providers read them: uploads byte for byte, JSONL line by line, request lists whole. */
import fc from 'fast-check';
import { expect, it } from 'vitest';
import { readBatchRequests } from '../../../src/demo/fake-upstream/anthropic-batches.js';
import { batchTiming } from '../../../src/demo/fake-upstream/batch-run.js';
import { parseMultipart } from '../../../src/demo/fake-upstream/files.js';
import { readBatchInput } from '../../../src/demo/fake-upstream/openai-batches.js';

const customIds = fc.uniqueArray(fc.stringMatching(/^[a-zA-Z0-9_-]{1,12}$/), { minLength: 1, maxLength: 8 });
const line = (customId: string, url = '/v1/chat/completions') => JSON.stringify({ custom_id: customId, method: 'POST', url, body: { model: 'gpt-4o-mini' } });

it('reads back any uploaded file byte for byte, whatever it holds (CRLFs and dashes included)', async () => {
  await fc.assert(
    fc.asyncProperty(fc.uint8Array({ maxLength: 300 }), fc.constantFrom('batch', 'user_data'), async (bytes, purpose) => {
      const form = new FormData();
      form.append('purpose', purpose);
      form.append('file', new Blob([bytes]), 'in.jsonl');
      const encoded = new Response(form);
      const parsed = parseMultipart(Buffer.from(await encoded.arrayBuffer()), encoded.headers.get('content-type')!);
      expect(parsed?.fields.get('purpose')).toBe(purpose);
      expect(parsed?.file?.filename).toBe('in.jsonl');
      expect(Buffer.compare(parsed!.file!.content, Buffer.from(bytes))).toBe(0);
    }),
    { numRuns: 60 },
  );
});

it('reads valid lines in order, skipping blank ones, and finds a duplicate custom_id on its own line', () => {
  fc.assert(
    fc.property(customIds, fc.nat(), (ids, pick) => {
      const clean = readBatchInput(`${ids.map((id) => line(id)).join('\n')}\n\n`, '/v1/chat/completions');
      expect(clean.problems).toEqual([]);
      expect(clean.lines.map((l) => l.customId)).toEqual(ids);
      const duplicate = ids[pick % ids.length]!;
      const withDuplicate = readBatchInput([...ids, duplicate].map((id) => line(id)).join('\n'), '/v1/chat/completions');
      expect(withDuplicate.problems).toEqual([expect.objectContaining({ code: 'duplicate_custom_id', line: ids.length + 1 })]);
    }),
  );
});

it('names every line that is not JSON, not POST, not a Batch API url or not the batch endpoint, and an empty file', () => {
  const text = [
    '[]',
    JSON.stringify({ custom_id: 'm', method: 'PUT', url: '/v1/chat/completions', body: {} }),
    line('u', '/v1/images'),
    line('e', '/v1/embeddings'),
  ];
  expect(readBatchInput(text.join('\n'), '/v1/chat/completions').problems.map((p) => [p.code, p.param, p.line])).toEqual([
    ['invalid_json_line', null, 1],
    ['invalid_method', 'method', 2],
    ['invalid_url', 'url', 3],
    ['mismatched_endpoint', 'url', 4],
  ]);
  expect(readBatchInput('\n', '/v1/chat/completions').problems).toEqual([expect.objectContaining({ code: 'empty_file', line: null })]);
});

it('accepts a Message Batches list of unique, well-formed custom_ids and refuses any duplicate', () => {
  fc.assert(
    fc.property(customIds, fc.nat(), (ids, pick) => {
      const requests = ids.map((id) => ({ custom_id: id, params: {} }));
      expect(readBatchRequests({ requests })).toEqual({ ok: true, requests: ids.map((id) => ({ customId: id, params: {} })) });
      const again = readBatchRequests({ requests: [...requests, requests[pick % requests.length]] });
      expect(again).toMatchObject({ ok: false, message: expect.stringContaining('Duplicate custom_id') });
    }),
  );
  expect(readBatchRequests({ requests: [] }).ok).toBe(false);
  expect(readBatchRequests({ requests: [{ custom_id: 'x'.repeat(65), params: {} }] }).ok).toBe(false);
});

it('times a batch from its scenario: a tenth validating, the lines over eight tenths, and where it stops', () => {
  expect(batchTiming({}, 4)).toEqual({ validateMs: 10, stepMs: 20, finalizeMs: 10, end: 'completed', failFirst: 0 });
  expect(batchTiming({ batchEnd: 'cancelled' }, 5)).toMatchObject({ end: 'cancelled', stopAfter: 2 });
  expect(batchTiming({ batchExpireAfter: '3', batchEnd: 'completed' }, 5)).toMatchObject({ end: 'expired', stopAfter: 3 });
  expect(batchTiming({ batchMs: '1000', batchHoldAfter: '1', batchFail: '2' }, 1)).toMatchObject({ stepMs: 800, holdAfter: 1, failFirst: 2 });
});
