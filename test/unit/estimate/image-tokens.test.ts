import { describe, expect, it } from 'vitest';
import { countImagePatches, countImageTiles, imageTokens, imageTokensForSize } from '../../../src/estimate/images.js';
import { imagePricingForModel } from '../../../src/estimate/models.js';

// Worked examples from OpenAI's "Images and vision" guide, section "Calculating costs".
describe('image tokens follow the vision guide', () => {
  const gpt4o = imagePricingForModel('gpt-4o');

  it('prices a 1024×1024 high-detail image at 765 tokens on gpt-4o', () => {
    expect(imageTokensForSize({ width: 1024, height: 1024 }, 'high', gpt4o)).toBe(765);
  });

  it('prices a 2048×4096 high-detail image at 1105 tokens on gpt-4o', () => {
    expect(imageTokensForSize({ width: 2048, height: 4096 }, 'high', gpt4o)).toBe(1105);
  });

  it('prices any low-detail image at 85 tokens on gpt-4o', () => {
    expect(imageTokensForSize({ width: 4096, height: 8192 }, 'low', gpt4o)).toBe(85);
  });

  it('never upscales small images: 512×512 is one tile', () => {
    expect(countImageTiles({ width: 512, height: 512 })).toBe(1);
    expect(countImageTiles({ width: 100, height: 60 })).toBe(1);
  });

  it('rounds the 2048-px fit the way the API bills (2049×513 → 8 tiles, 2050×513 → 4 tiles)', () => {
    expect(countImageTiles({ width: 2049, height: 513 })).toBe(8);
    expect(countImageTiles({ width: 2050, height: 513 })).toBe(4);
  });

  it('uses 2833 + 5667 per tile on gpt-4o-mini', () => {
    expect(imageTokensForSize({ width: 1024, height: 1024 }, 'high', imagePricingForModel('gpt-4o-mini-2024-07-18'))).toBe(2833 + 4 * 5667);
    expect(imageTokensForSize({ width: 1024, height: 1024 }, 'low', imagePricingForModel('gpt-4o-mini'))).toBe(2833);
  });

  it('counts 32-px patches as the guide does (1024×1024 → 1024, 1800×2400 → 1452)', () => {
    expect(countImagePatches({ width: 1024, height: 1024 })).toBe(1024);
    expect(countImagePatches({ width: 1800, height: 2400 })).toBe(1452);
  });

  it('caps patches at 1536 for huge images', () => {
    expect(countImagePatches({ width: 20_000, height: 20_000 })).toBeLessThanOrEqual(1536);
    expect(countImagePatches({ width: 100_000, height: 10 })).toBeLessThanOrEqual(1536);
  });

  it('applies the model multipliers of patch models, rounding up', () => {
    const size = { width: 1024, height: 1024 };
    expect(imageTokensForSize(size, 'high', imagePricingForModel('gpt-4.1-mini'))).toBe(Math.ceil(1024 * 1.62));
    expect(imageTokensForSize(size, 'high', imagePricingForModel('gpt-4.1-nano'))).toBe(Math.ceil(1024 * 2.46));
    expect(imageTokensForSize(size, 'high', imagePricingForModel('o4-mini'))).toBe(Math.ceil(1024 * 1.72));
    expect(imageTokensForSize(size, 'low', imagePricingForModel('o4-mini'))).toBe(Math.ceil(1024 * 1.72));
  });

  // Was a 1024×1024 image (765 for gpt-4o): a remote image of the worst aspect ratio bills 1445,
  // so a request of such images could spend past its reservation.
  it('prices an image whose size it cannot read at the most one image can bill for the model and detail', () => {
    expect(imageTokens('https://example.com/cat.png', 'high', 'gpt-4o')).toEqual({ tokens: 85 + 8 * 170, sized: false });
    expect(imageTokens('https://example.com/cat.png', 'auto', 'gpt-4o')).toEqual({ tokens: 1445, sized: false });
    expect(imageTokens('https://example.com/cat.png', 'low', 'gpt-4o')).toEqual({ tokens: 85, sized: false });
    expect(imageTokens('https://example.com/cat.png', 'high', 'gpt-4o-mini').tokens).toBe(2833 + 8 * 5667);
    expect(imageTokens('https://example.com/cat.png', 'low', 'gpt-4.1-mini').tokens).toBe(Math.ceil(1536 * 1.62));
    expect(imageTokens('data:image/png;base64,AAAA', 'high', 'o4-mini')).toEqual({ tokens: Math.ceil(1536 * 1.72), sized: false });
  });
});
