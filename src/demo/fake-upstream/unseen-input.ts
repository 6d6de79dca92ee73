/**
 * Input the fake bills although the request only names it — what Tollgate cannot count — as
 * the real API bills it, when the scenario says how big it is:
 *
 *   fileTokens=N     every file named by id or URL (Responses `input_file` `file_id` / `file_url`,
 *                    chat `file.file_id`) bills N input tokens (its text and page images)
 *   imageSize=WxH    every image named by URL or file id is a W×H image, billed by the model's own
 *                    vision rule (512 px tiles, or 32 px patches × a multiplier) at its `detail`;
 *                    for chat this replaces the flat 85 tokens of `promptTokensFor`
 *   toolTokens=N     every hosted tool (Responses `mcp`, `web_search*`, `file_search`,
 *                    `code_interpreter`, `computer_use*`) reads N tokens of results, billed as input
 *
 * Without those keys such input bills nothing extra, as before. The vision rule is written here
 * from OpenAI's published formula, apart from src/estimate (a test holds the two against each
 * other: what Tollgate reserves must cover what this bills).
 */
import { num, type Scenario } from './scenario.js';

type Vision = { kind: 'tiles'; base: number; tile: number } | { kind: 'patches'; multiplier: number };

function visionOf(model: string): Vision {
  if (/^(gpt-4\.1-mini|gpt-5(\.\d+)?-mini)/.test(model)) return { kind: 'patches', multiplier: 1.62 };
  if (/^(gpt-4\.1-nano|gpt-5(\.\d+)?-nano)/.test(model)) return { kind: 'patches', multiplier: 2.46 };
  if (/^o4-mini/.test(model)) return { kind: 'patches', multiplier: 1.72 };
  if (/^gpt-4o-mini/.test(model)) return { kind: 'tiles', base: 2833, tile: 5667 };
  if (/^(o1|o3)(?!-mini)/.test(model)) return { kind: 'tiles', base: 75, tile: 150 };
  if (/^gpt-5/.test(model)) return { kind: 'tiles', base: 70, tile: 140 };
  return { kind: 'tiles', base: 85, tile: 170 };
}

/** Tokens of one W×H image for `model` at `detail` (OpenAI's "Calculating costs" rules). */
export function fakeImageTokens(width: number, height: number, detail: string, model: string): number {
  const vision = visionOf(model);
  if (vision.kind === 'patches') {
    let patches = Math.ceil(width / 32) * Math.ceil(height / 32);
    if (patches > 1536) {
      const shrink = Math.sqrt((32 * 32 * 1536) / (width * height));
      const w = (width * shrink) / 32;
      const h = (height * shrink) / 32;
      const fit = shrink * Math.min(Math.floor(w) / w, Math.floor(h) / h);
      patches = Math.min(1536, Math.ceil((width * fit) / 32 - 1e-9) * Math.ceil((height * fit) / 32 - 1e-9));
    }
    return Math.ceil(patches * vision.multiplier);
  }
  if (detail === 'low') return vision.base;
  let w = width;
  let h = height;
  const longest = Math.max(w, h);
  if (longest > 2048) {
    w = Math.round((w * 2048) / longest);
    h = Math.round((h * 2048) / longest);
  }
  const shortest = Math.min(w, h);
  if (shortest > 768) {
    w = Math.round((w * 768) / shortest);
    h = Math.round((h * 768) / shortest);
  }
  return vision.base + vision.tile * Math.ceil(w / 512) * Math.ceil(h / 512);
}

const HOSTED_TOOLS = /^(mcp|web_search.*|file_search|code_interpreter|computer_use.*)$/;

function parts(content: unknown): Record<string, unknown>[] {
  return Array.isArray(content) ? content.filter((part): part is Record<string, unknown> => part !== null && typeof part === 'object') : [];
}

function isRemote(url: unknown): boolean {
  return typeof url === 'string' && !url.startsWith('data:');
}

/**
 * Input tokens billed for what the request names but does not carry, as the scenario sizes it
 * (for chat images, less the 85 `promptTokensFor` already billed each: it may be negative).
 */
export function unseenInputTokens(scenario: Scenario, endpoint: string, body: Record<string, unknown>, model: string): number {
  const fileTokens = num(scenario, 'fileTokens') ?? 0;
  const toolTokens = num(scenario, 'toolTokens') ?? 0;
  const size = /^(\d+)x(\d+)$/.exec(scenario.imageSize ?? '');
  const image = (detail: unknown): number => (size === null ? 0 : fakeImageTokens(Number(size[1]), Number(size[2]), String(detail ?? 'auto'), model));
  let total = 0;
  if (endpoint === 'chat') {
    for (const message of Array.isArray(body.messages) ? body.messages : []) {
      for (const part of parts((message as { content?: unknown } | null)?.content)) {
        if (part.type === 'file' && typeof (part.file as { file_id?: unknown } | undefined)?.file_id === 'string') total += fileTokens;
        const imageUrl = part.image_url as { url?: unknown; detail?: unknown } | string | undefined;
        const url = typeof imageUrl === 'string' ? imageUrl : imageUrl?.url;
        // promptTokensFor billed 85 for it already: the image's own size replaces that.
        if (part.type === 'image_url' && isRemote(url) && size !== null) total += image(typeof imageUrl === 'object' ? imageUrl.detail : 'auto') - 85;
      }
    }
    return total;
  }
  if (endpoint !== 'responses') return 0;
  const items = Array.isArray(body.input) ? body.input : [];
  for (const item of items) {
    for (const part of parts((item as { content?: unknown } | null)?.content)) {
      if (part.type === 'input_file' && (typeof part.file_id === 'string' || typeof part.file_url === 'string')) total += fileTokens;
      if (part.type === 'input_image' && (isRemote(part.image_url) || typeof part.file_id === 'string')) total += image(part.detail);
    }
  }
  for (const tool of Array.isArray(body.tools) ? body.tools : []) {
    const type = (tool as { type?: unknown } | null)?.type;
    if (typeof type === 'string' && HOSTED_TOOLS.test(type)) total += toolTokens;
  }
  return total;
}
