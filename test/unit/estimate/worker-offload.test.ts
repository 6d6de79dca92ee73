import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  builtinPriceTable,
  closeEstimator,
  configureEstimator,
  estimateRequest,
  estimateRequestSync,
  EstimateInputError,
  getEstimatorStats,
  warmEstimator,
} from '../../../src/estimate/index.js';

const options = { prices: builtinPriceTable, defaultMaxCompletionTokens: 1_000 };

function realisticText(chars: number): string {
  const words = ['the', 'quick', 'brown', 'fox', 'jumps', 'over', 'lazy', 'dog', '{"a": 1}', 'function', '日本語', '😀', 'x=1;', '\n'];
  const parts: string[] = [];
  let length = 0;
  for (let i = 0; length < chars; i++) {
    const word = words[(i * 7919) % words.length] as string;
    parts.push(word);
    length += word.length + 1;
  }
  return parts.join(' ');
}

function randomBase64(chars: number): string {
  const bytes = Buffer.alloc(Math.ceil((chars * 3) / 4));
  let seed = 12345;
  for (let i = 0; i < bytes.length; i++) {
    seed = (seed * 1103515245 + 12345) >>> 0;
    bytes[i] = seed >>> 24;
  }
  return bytes.toString('base64').slice(0, chars);
}

describe('large bodies are estimated on a worker thread', () => {
  beforeAll(async () => {
    configureEstimator({ workerThreads: 1 });
    // Boot-time warm-up (what the proxy should do before listening): loads the encoder and starts
    // the worker, so the measurement below sees steady-state behaviour.
    await warmEstimator({ startWorkers: true });
  }, 60_000);

  afterAll(async () => {
    await closeEstimator();
  });

  // How long the event loop is blocked meanwhile is measured in bench/estimate.ts, not asserted here.
  it('estimates a 5 MB body on a worker, with the same result as the sync path', async () => {
    const body = {
      // No context window in the table: 5 MB of text is far beyond any real model's window.
      model: 'gpt-5.4',
      messages: [
        { role: 'system', content: 'You are terse.' },
        { role: 'user', content: realisticText(2_500_000) },
        { role: 'user', content: randomBase64(2_500_000) },
      ],
      max_tokens: 100,
    };
    const before = getEstimatorStats().offloaded;
    const result = await estimateRequest('chat', body, options);
    expect(getEstimatorStats().offloaded).toBe(before + 1);
    expect(result).toEqual(estimateRequestSync('chat', body, options));
  }, 60_000);

  it('teaches the main thread the counts the worker computed, so the next turn stays inline', async () => {
    // A long conversation: 50 turns of ~3 KB, 150 KB in all, first seen as a whole.
    const history = Array.from({ length: 50 }, (_, i) => ({ role: i % 2 ? 'assistant' : 'user', content: `${i}: ${realisticText(3_000)}` }));
    const first = getEstimatorStats().offloaded;
    await estimateRequest('chat', { model: 'gpt-4o', messages: history }, options);
    expect(getEstimatorStats().offloaded).toBe(first + 1);
    const offloaded = getEstimatorStats().offloaded;
    const next = await estimateRequest('chat', { model: 'gpt-4o', messages: [...history, { role: 'user', content: 'And then?' }] }, options);
    expect(getEstimatorStats().offloaded).toBe(offloaded);
    expect(next).toEqual(estimateRequestSync('chat', { model: 'gpt-4o', messages: [...history, { role: 'user', content: 'And then?' }] }, options));
  }, 60_000);

  it('rejects with EstimateInputError when the worker finds the body invalid', async () => {
    const body = {
      model: 'gpt-4o',
      messages: [
        { role: 'user', content: realisticText(50_000) },
        { role: 'user', content: 42 },
      ],
    };
    await expect(estimateRequest('chat', body, options)).rejects.toBeInstanceOf(EstimateInputError);
    await expect(estimateRequest('chat', body, options)).rejects.toMatchObject({ param: 'messages[1].content' });
  }, 60_000);

  it('estimates 10,000 tiny messages on a worker too', async () => {
    const messages = Array.from({ length: 10_000 }, (_, i) => ({ role: i % 2 ? 'assistant' : 'user', content: `msg ${i}` }));
    const before = getEstimatorStats().offloaded;
    const result = await estimateRequest('chat', { model: 'gpt-4.1', messages }, options);
    expect(getEstimatorStats().offloaded).toBe(before + 1);
    expect(result.promptTokens).toBe(estimateRequestSync('chat', { model: 'gpt-4.1', messages }, options).promptTokens);
  }, 60_000);
});
