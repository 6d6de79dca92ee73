/**
 * Input the estimate cannot count — stored history, conversations, stored items, files by id or
 * URL, remote images, MCP servers, hosted tools' results — is noted by kind with the ids the
 * request names, and reserved at the most the model can bill for it (src/estimate/unseen.ts).
 */
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import {
  builtinPriceTable,
  closeEstimator,
  configureEstimator,
  estimateRequest,
  estimateRequestSync,
  getEstimatorStats,
  mergePriceTable,
  priceTableOverrideSchema,
  withStoredHistory,
} from '../../../src/estimate/index.js';
import { imageTokensForSize, maxImageTokens } from '../../../src/estimate/images.js';
import { imagePricingForModel } from '../../../src/estimate/models.js';
import { costMicroUsd } from '../../../src/estimate/prices.js';
import { reservationOf } from '../../../src/budgets/output-cap.js';
import { promptTokensFor, parseScenario } from '../../../src/demo/fake-upstream/scenario.js';
import { fakeImageTokens, unseenInputTokens } from '../../../src/demo/fake-upstream/unseen-input.js';

const options = { prices: builtinPriceTable, defaultMaxCompletionTokens: 1000 };

describe('what the estimate cannot count, by kind, with the ids the request names', () => {
  it('notes every kind a Responses body can name, and its ids once each', () => {
    const estimate = estimateRequestSync(
      'responses',
      {
        model: 'gpt-4o',
        previous_response_id: 'resp_prev',
        conversation: { id: 'conv_1' },
        prompt: { id: 'pmpt_1', variables: { doc: { type: 'input_file', file_id: 'file-var' } } },
        input: [
          {
            role: 'user',
            content: [
              { type: 'input_text', text: 'Read these.' },
              { type: 'input_file', file_id: 'file-a' },
              { type: 'input_file', file_url: 'https://example.com/report.pdf' },
              { type: 'input_image', file_id: 'file-img' },
              { type: 'input_image', image_url: 'https://example.com/cat.png' },
            ],
          },
          { type: 'item_reference', id: 'msg_1' },
          { type: 'item_reference', id: 'msg_1' },
          { type: 'item_reference', id: 'rs_2' },
        ],
        tools: [
          { type: 'mcp', server_label: 'x', server_url: 'https://mcp.example.com' },
          { type: 'web_search' },
          { type: 'file_search' },
          { type: 'function', name: 'f' },
        ],
      },
      options,
    );
    expect(estimate.unseen.kinds).toEqual({
      stored_history: 1,
      conversation: 1,
      stored_prompt: 1,
      file: 3,
      image: 2,
      item_reference: 3,
      mcp: 1,
      tool_results: 2,
    });
    expect(estimate.references).toEqual({
      previousResponseId: 'resp_prev',
      conversationId: 'conv_1',
      itemIds: ['msg_1', 'rs_2'],
      fileIds: ['file-var', 'file-a', 'file-img'],
    });
  });

  it('reads a conversation given as a plain id too', () => {
    expect(estimateRequestSync('responses', { model: 'gpt-4o', conversation: 'conv_9', input: 'Hi' }, options).references.conversationId).toBe('conv_9');
  });

  it('notes chat files by id and remote images, and nothing for a plain chat', () => {
    const plain = estimateRequestSync('chat', { model: 'gpt-4o', messages: [{ role: 'user', content: 'Hi' }] }, options);
    expect(plain.unseen).toEqual({ kinds: {}, imageTokens: 0, reservedTokens: 0, boundTokens: 0, room: 128_000 - plain.promptTokens });
    expect(plain.references).toEqual({ itemIds: [], fileIds: [] });
    const estimate = estimateRequestSync(
      'chat',
      {
        model: 'gpt-4o',
        messages: [
          {
            role: 'user',
            content: [
              { type: 'file', file: { file_id: 'file-chat' } },
              { type: 'image_url', image_url: { url: 'https://example.com/a.jpg', detail: 'low' } },
            ],
          },
        ],
      },
      options,
    );
    expect(estimate.unseen.kinds).toEqual({ file: 1, image: 1 });
    expect(estimate.references.fileIds).toEqual(['file-chat']);
  });

  it("notes Anthropic's URL and file sources, MCP servers and the server tools whose results are input", () => {
    const estimate = estimateRequestSync(
      'messages',
      {
        model: 'claude-sonnet-4-5',
        max_tokens: 100,
        mcp_servers: [
          { type: 'url', url: 'https://a.example.com/sse', name: 'a' },
          { type: 'url', url: 'https://b.example.com/sse', name: 'b' },
        ],
        tools: [
          { type: 'web_search_20250305', name: 'web_search' },
          { type: 'web_fetch_20250910', name: 'web_fetch' },
          { type: 'bash_20250124', name: 'bash' },
        ],
        messages: [
          {
            role: 'user',
            content: [
              { type: 'document', source: { type: 'url', url: 'https://example.com/a.pdf' } },
              { type: 'document', source: { type: 'file', file_id: 'file_doc' } },
              { type: 'image', source: { type: 'url', url: 'https://example.com/a.png' } },
              { type: 'image', source: { type: 'file', file_id: 'file_img' } },
              { type: 'container_upload', file_id: 'file_up' },
              { type: 'text', text: 'Summarise.' },
            ],
          },
        ],
      },
      options,
    );
    expect(estimate.unseen.kinds).toEqual({ file: 3, image: 2, mcp: 2, tool_results: 2 });
    expect(estimate.references.fileIds).toEqual(['file_doc', 'file_img', 'file_up']);
  });
});

describe('reserving what cannot be counted', () => {
  const continued = { model: 'gpt-4o-mini', previous_response_id: 'resp_1', input: 'Continue.', max_output_tokens: 16 };

  it('reserves stored history at what the window leaves beside the counted prompt', () => {
    const plain = estimateRequestSync('responses', { model: 'gpt-4o-mini', input: 'Continue.', max_output_tokens: 16 }, options);
    const estimate = estimateRequestSync('responses', continued, options);
    expect(estimate.unseen.reservedTokens).toBe(128_000 - plain.promptTokens);
    expect(estimate.promptTokens).toBe(128_000);
    expect(estimate.completionTokensReserved).toBe(16);
    // What budgets hold: 128,000 input tokens at $0.15 and 16 output at $0.60 per 1M.
    expect(reservationOf(estimate, 16)).toBe(costMicroUsd({ promptTokens: 128_000, completionTokens: 16 }, estimate.price));
  });

  it('lets rate limits take only what is known of it, as they take a default completion, and budgets the bound', () => {
    const plain = estimateRequestSync('responses', { model: 'gpt-4o-mini', input: 'Continue.', max_output_tokens: 16 }, options);
    const estimate = estimateRequestSync('responses', continued, options);
    expect(estimate.unseen.boundTokens).toBe(estimate.unseen.reservedTokens);
    expect(estimate.reservedTokens).toBe(plain.promptTokens + 16);
    expect(estimate.reservedMicroUsd).toBe(plain.reservedMicroUsd);
    expect(reservationOf(estimate, 16)).toBeGreaterThan(estimate.reservedMicroUsd);
    // A known history is taken by both.
    const known = withStoredHistory(estimate, 20_000);
    expect(known.unseen.boundTokens).toBe(0);
    expect(known.reservedTokens).toBe(plain.promptTokens + 20_000 + 16);
    expect(reservationOf(known, 16)).toBe(known.reservedMicroUsd);
    // Images of unknown size are taken by both, at their bound.
    const image = estimateRequestSync(
      'responses',
      { model: 'gpt-4o', max_output_tokens: 16, input: [{ role: 'user', content: [{ type: 'input_image', image_url: 'https://example.com/a.png' }] }] },
      options,
    );
    expect(image.unseen.boundTokens).toBe(0);
    expect(image.reservedTokens).toBe(image.promptTokens + 16);
  });

  it('reserves MCP servers and hosted tools the same way: their lists and results are billed as input', () => {
    const mcp = { type: 'mcp', server_label: 'docs', server_url: 'https://mcp.example.com/sse', require_approval: 'never' };
    for (const tools of [[mcp], [{ type: 'file_search', vector_store_ids: ['vs_1'] }], [{ type: 'code_interpreter', container: { type: 'auto' } }]]) {
      const estimate = estimateRequestSync('responses', { model: 'gpt-4o', input: 'Look it up.', max_output_tokens: 100, tools }, options);
      expect(estimate.promptTokens).toBe(128_000);
      expect(estimate.unseen.boundTokens).toBe(estimate.unseen.reservedTokens);
    }
  });

  it("reserves at most the operator's bound, and never more than the window leaves", () => {
    const plain = estimateRequestSync('responses', { model: 'gpt-4o-mini', input: 'Continue.', max_output_tokens: 16 }, options);
    expect(estimateRequestSync('responses', continued, { ...options, unseenInputTokens: 5_000 }).promptTokens).toBe(plain.promptTokens + 5_000);
    expect(estimateRequestSync('responses', continued, { ...options, unseenInputTokens: 10_000_000 }).promptTokens).toBe(128_000);
  });

  it("takes the table's largest window for a model without one, and the config's fallback window for an unknown model", () => {
    const claude = estimateRequestSync(
      'messages',
      {
        model: 'claude-sonnet-4-5',
        max_tokens: 10,
        mcp_servers: [{ type: 'url', url: 'https://a.example.com', name: 'a' }],
        messages: [{ role: 'user', content: 'Hi' }],
      },
      options,
    );
    expect(claude.promptTokens).toBe(1_047_576);
    const prices = mergePriceTable(builtinPriceTable, priceTableOverrideSchema.parse({ fallback: { input: 1, output: 2, contextWindow: 32_000 } }));
    const unknown = estimateRequestSync('responses', { model: 'house-model', previous_response_id: 'resp_1', input: 'Hi' }, { ...options, prices });
    expect(unknown.promptTokens).toBe(32_000);
  });

  it('does not let unseen input count against the context window check of what it did count', () => {
    const estimate = estimateRequestSync('responses', { ...continued, max_output_tokens: 120_000 }, options);
    expect(estimate.completionTokensReserved).toBe(120_000);
  });

  it('reserves a stored response whose usage is known at that usage, when it is all the estimate could not count', () => {
    const estimate = estimateRequestSync('responses', continued, options);
    const counted = estimate.promptTokens - estimate.unseen.reservedTokens;
    const known = withStoredHistory(estimate, 20_000);
    expect(known.promptTokens).toBe(counted + 20_000);
    expect(known.unseen.reservedTokens).toBe(20_000);
    expect(known.reservedTokens).toBe(counted + 20_000 + 16);
    expect(known.reservedMicroUsd).toBe(costMicroUsd({ promptTokens: counted + 20_000, completionTokens: 16 }, estimate.price));
    // Never more than the window leaves.
    expect(withStoredHistory(estimate, 10_000_000).promptTokens).toBe(128_000);
    // Another unseen kind beside it: the window bounds both, the known part changes nothing.
    const withFile = estimateRequestSync(
      'responses',
      { ...continued, input: [{ role: 'user', content: [{ type: 'input_file', file_url: 'https://example.com/a.pdf' }] }] },
      options,
    );
    expect(withStoredHistory(withFile, 20_000)).toBe(withFile);
  });

  it('reserves an image it cannot see at the most one image bills, not the window', () => {
    const image = { type: 'input_image', image_url: 'https://example.com/a.png', detail: 'high' };
    const estimate = estimateRequestSync('responses', { model: 'gpt-4o', input: [{ role: 'user', content: [image] }] }, options);
    expect(estimate.imageTokens).toBe(1445);
    expect(estimate.unseen).toMatchObject({ kinds: { image: 1 }, imageTokens: 1445, reservedTokens: 1445 });
  });

  it('never refuses images of unknown size as too long for the window: their bound is capped by what the window leaves', () => {
    const image = { type: 'input_image', image_url: 'https://example.com/a.png', detail: 'high' };
    // Three gpt-4o-mini images at their bound are 144,507 tokens: more than its 128,000 window, though real ones may be small.
    const estimate = estimateRequestSync('responses', { model: 'gpt-4o-mini', input: [{ role: 'user', content: [image, image, image] }] }, options);
    expect(estimate.promptTokens).toBe(128_000);
    expect(estimate.unseen.reservedTokens).toBe(estimate.unseen.room);
  });
});

describe('the bound of one image', () => {
  const models = ['gpt-4o', 'gpt-4o-mini', 'gpt-4.1-mini', 'gpt-4.1-nano', 'o4-mini', 'o3', 'gpt-5', 'computer-use-preview'];

  it('no image of any size bills more than the bound, and the worst aspect ratio reaches it', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 20_000 }),
        fc.integer({ min: 1, max: 20_000 }),
        fc.constantFrom('low' as const, 'high' as const, 'auto' as const),
        fc.constantFrom(...models),
        (width, height, detail, model) => {
          const pricing = imagePricingForModel(model);
          expect(imageTokensForSize({ width, height }, detail, pricing)).toBeLessThanOrEqual(maxImageTokens(detail, pricing));
        },
      ),
      { numRuns: 3000 },
    );
    for (const model of models) {
      const pricing = imagePricingForModel(model);
      const worst = pricing.kind === 'tiles' ? { width: 2048, height: 768 } : { width: 1024, height: 1536 };
      expect(imageTokensForSize(worst, 'high', pricing)).toBe(maxImageTokens('high', pricing));
    }
  });
});

describe("Tollgate's reservation covers what the fake upstream bills for input it cannot see", () => {
  const remoteImage = fc.record({
    width: fc.integer({ min: 1, max: 12_000 }),
    height: fc.integer({ min: 1, max: 12_000 }),
    detail: fc.constantFrom('low', 'high', 'auto'),
  });

  it('for remote images, files by id or URL and hosted tools, whatever their size within the window', () => {
    fc.assert(
      fc.property(
        fc.constantFrom('gpt-4o', 'gpt-4o-mini', 'gpt-4.1-mini', 'o4-mini', 'gpt-5'),
        fc.constantFrom('chat' as const, 'responses' as const),
        remoteImage,
        fc.integer({ min: 0, max: 3 }),
        fc.integer({ min: 0, max: 2 }),
        fc.integer({ min: 0, max: 2 }),
        fc.integer({ min: 0, max: 200_000 }),
        fc.integer({ min: 0, max: 200_000 }),
        (model, endpoint, image, images, files, tools, fileTokens, toolTokens) => {
          const url = (i: number) => `https://example.com/${i}.png`;
          const body =
            endpoint === 'chat'
              ? {
                  model,
                  max_completion_tokens: 64,
                  messages: [
                    {
                      role: 'user',
                      content: [
                        { type: 'text', text: 'Look.' },
                        ...Array.from({ length: images }, (_, i) => ({ type: 'image_url', image_url: { url: url(i), detail: image.detail } })),
                        ...Array.from({ length: files }, (_, i) => ({ type: 'file', file: { file_id: `file-${i}` } })),
                      ],
                    },
                  ],
                }
              : {
                  model,
                  max_output_tokens: 64,
                  input: [
                    {
                      role: 'user',
                      content: [
                        { type: 'input_text', text: 'Look.' },
                        ...Array.from({ length: images }, (_, i) => ({ type: 'input_image', image_url: url(i), detail: image.detail })),
                        ...Array.from({ length: files }, (_, i) => ({ type: 'input_file', file_url: `https://example.com/${i}.pdf` })),
                      ],
                    },
                  ],
                  tools: Array.from({ length: tools }, () => ({ type: 'web_search' })),
                };
          const scenario = parseScenario(`fileTokens=${fileTokens},toolTokens=${toolTokens},imageSize=${image.width}x${image.height}`);
          const billed = promptTokensFor(endpoint, body, model) + unseenInputTokens(scenario, endpoint, body, model);
          const estimate = estimateRequestSync(endpoint, body, options);
          // A model bills no more input than its window holds beside the output it was allowed.
          const window = estimate.price.contextWindow!;
          fc.pre(billed + 64 <= window);
          expect(estimate.promptTokens).toBeGreaterThanOrEqual(billed);
        },
      ),
      { numRuns: 500 },
    );
  });

  it('bills a remote image as OpenAI documents it (the fake and the estimate agree on the formula)', () => {
    expect(fakeImageTokens(1024, 1024, 'high', 'gpt-4o')).toBe(765);
    expect(fakeImageTokens(2048, 4096, 'high', 'gpt-4o')).toBe(1105);
    expect(fakeImageTokens(2048, 768, 'high', 'gpt-4o')).toBe(1445);
    expect(fakeImageTokens(1024, 1024, 'low', 'gpt-4o')).toBe(85);
    expect(fakeImageTokens(1024, 1024, 'high', 'gpt-4.1-mini')).toBe(Math.ceil(1024 * 1.62));
    expect(fakeImageTokens(1800, 2400, 'high', 'o4-mini')).toBe(Math.ceil(1452 * 1.72));
  });
});

describe('on a worker thread', () => {
  afterAll(() => closeEstimator());

  it('a large body comes back with the same unseen input and references as counted inline', async () => {
    configureEstimator({ workerThreads: 1 });
    const body = {
      model: 'gpt-4o',
      previous_response_id: 'resp_big',
      input: [
        { role: 'user', content: 'word '.repeat(20_000) },
        { type: 'item_reference', id: 'msg_1' },
        { role: 'user', content: [{ type: 'input_image', image_url: 'https://example.com/a.png' }] },
      ],
    };
    const before = getEstimatorStats().offloaded;
    const offloaded = await estimateRequest('responses', body, options);
    expect(getEstimatorStats().offloaded).toBe(before + 1);
    const inline = estimateRequestSync('responses', body, options);
    expect(offloaded.unseen).toEqual(inline.unseen);
    expect(offloaded.references).toEqual({ previousResponseId: 'resp_big', itemIds: ['msg_1'], fileIds: [] });
    expect(offloaded.promptTokens).toBe(inline.promptTokens);
  });
});
