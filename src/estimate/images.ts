/**
 * Image tokens. Dimensions come from the header of a base64 data URL (PNG, JPEG, GIF, WebP),
 * decoding only the few bytes the header needs; an image whose size cannot be read (a remote URL,
 * a file id) is counted at the most one image can bill ({@link maxImageTokens}).
 *
 * Formulas (src/estimate/README.md, "Images"; worked examples: 1024×1024 high = 765, 2048×4096
 * high = 1105, low = 85 for gpt-4o; 1024×1024 = 1024 patches, 1800×2400 = 1452 patches before
 * the model multiplier).
 * - Tiles (gpt-4o, gpt-4.1, gpt-4.5, o1, o3, gpt-5 …): fit in 2048×2048, then shortest side to
 *   768 (never upscaled), count 512 px tiles: base + tile × tiles; `detail: "low"` = base.
 * - Patches (gpt-4.1-mini / -nano, o4-mini, gpt-5-mini / -nano): 32 px patches, shrunk to at most
 *   1536, times the model multiplier (1.62 / 2.46 / 1.72), rounded up; `detail` has no effect.
 * `detail: "auto"` (the default) is priced as high: the reservation must not fall short, and
 * reconciliation refunds the difference.
 */
import { imagePricingForModel, type ImagePricing } from './models.js';

/** Width and height in pixels. */
export interface ImageSize {
  readonly width: number;
  readonly height: number;
}

/** The `detail` of an image part. */
export type ImageDetail = 'low' | 'high' | 'auto';

const BASE64_VALUES = (() => {
  const table = new Int16Array(128).fill(-1);
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
  for (let i = 0; i < alphabet.length; i++) table[alphabet.charCodeAt(i)] = i;
  // URL-safe alphabet too: some clients send it.
  table['-'.charCodeAt(0)] = 62;
  table['_'.charCodeAt(0)] = 63;
  return table;
})();

/**
 * Random access to the bytes of base64 text without decoding all of it: byte i lives in the
 * 4-character group i / 3. Invalid characters read as -1 (the caller gives up on the header).
 */
class Base64Bytes {
  readonly length: number;

  constructor(
    private readonly text: string,
    private readonly start: number,
  ) {
    let end = text.length;
    while (end > start && text.charCodeAt(end - 1) === 61 /* = */) end -= 1;
    this.length = Math.floor(((end - start) * 3) / 4);
  }

  /** The byte at `index`, or -1 when out of range or not valid base64. */
  at(index: number): number {
    if (index < 0 || index >= this.length) return -1;
    const group = Math.floor(index / 3);
    const offset = this.start + group * 4;
    const sextet = (k: number): number => {
      const code = this.text.charCodeAt(offset + k);
      if (Number.isNaN(code)) return 0;
      if (code === 61) return 0;
      return code < 128 ? (BASE64_VALUES[code] as number) : -1;
    };
    const a = sextet(0);
    const b = sextet(1);
    const c = sextet(2);
    const d = sextet(3);
    if (a < 0 || b < 0 || c < 0 || d < 0) return -1;
    const triple = (a << 18) | (b << 12) | (c << 6) | d;
    const position = index % 3;
    return position === 0 ? (triple >> 16) & 0xff : position === 1 ? (triple >> 8) & 0xff : triple & 0xff;
  }

  bigEndian16(index: number): number {
    const hi = this.at(index);
    const lo = this.at(index + 1);
    return hi < 0 || lo < 0 ? -1 : (hi << 8) | lo;
  }

  littleEndian16(index: number): number {
    const lo = this.at(index);
    const hi = this.at(index + 1);
    return hi < 0 || lo < 0 ? -1 : (hi << 8) | lo;
  }

  littleEndian24(index: number): number {
    const low = this.littleEndian16(index);
    const high = this.at(index + 2);
    return low < 0 || high < 0 ? -1 : low | (high << 16);
  }

  bigEndian32(index: number): number {
    const hi = this.bigEndian16(index);
    const lo = this.bigEndian16(index + 2);
    return hi < 0 || lo < 0 ? -1 : hi * 65536 + lo;
  }

  matches(index: number, ascii: string): boolean {
    for (let i = 0; i < ascii.length; i++) if (this.at(index + i) !== ascii.charCodeAt(i)) return false;
    return true;
  }
}

/** Most JPEG segments we step over looking for the frame header (EXIF, ICC, thumbnails …). */
const MAX_JPEG_SEGMENTS = 512;

function validSize(width: number, height: number): ImageSize | null {
  return width > 0 && height > 0 ? { width, height } : null;
}

function readPngSize(bytes: Base64Bytes): ImageSize | null {
  if (!bytes.matches(1, 'PNG') || !bytes.matches(12, 'IHDR')) return null;
  return validSize(bytes.bigEndian32(16), bytes.bigEndian32(20));
}

function readGifSize(bytes: Base64Bytes): ImageSize | null {
  if (!bytes.matches(0, 'GIF87a') && !bytes.matches(0, 'GIF89a')) return null;
  return validSize(bytes.littleEndian16(6), bytes.littleEndian16(8));
}

function readWebpSize(bytes: Base64Bytes): ImageSize | null {
  if (!bytes.matches(0, 'RIFF') || !bytes.matches(8, 'WEBP')) return null;
  if (bytes.matches(12, 'VP8 ')) {
    // Lossy: a 3-byte frame tag, the start code 9d 01 2a, then 14-bit width and height.
    if (bytes.at(23) !== 0x9d || bytes.at(24) !== 0x01 || bytes.at(25) !== 0x2a) return null;
    const width = bytes.littleEndian16(26);
    const height = bytes.littleEndian16(28);
    return width < 0 || height < 0 ? null : validSize(width & 0x3fff, height & 0x3fff);
  }
  if (bytes.matches(12, 'VP8L')) {
    // Lossless: signature 0x2f, then 14 bits of width-1 and 14 bits of height-1.
    if (bytes.at(20) !== 0x2f) return null;
    const b0 = bytes.at(21);
    const b1 = bytes.at(22);
    const b2 = bytes.at(23);
    const b3 = bytes.at(24);
    if (b0 < 0 || b1 < 0 || b2 < 0 || b3 < 0) return null;
    const bits = (b0 | (b1 << 8) | (b2 << 16) | (b3 << 24)) >>> 0;
    return validSize((bits & 0x3fff) + 1, ((bits >>> 14) & 0x3fff) + 1);
  }
  if (bytes.matches(12, 'VP8X')) {
    // Extended: 24-bit canvas width-1 and height-1 after 4 bytes of flags.
    const width = bytes.littleEndian24(24);
    const height = bytes.littleEndian24(27);
    return width < 0 || height < 0 ? null : validSize(width + 1, height + 1);
  }
  return null;
}

function isStartOfFrame(marker: number): boolean {
  // SOF0–SOF15 except DHT (C4), JPG (C8) and DAC (CC).
  return marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc;
}

function readJpegSize(bytes: Base64Bytes): ImageSize | null {
  if (bytes.at(0) !== 0xff || bytes.at(1) !== 0xd8) return null;
  let position = 2;
  for (let segments = 0; segments < MAX_JPEG_SEGMENTS; segments++) {
    if (bytes.at(position) !== 0xff) return null;
    // Markers may be preceded by any number of 0xff fill bytes; bounded by the segment budget.
    let marker = bytes.at(position + 1);
    while (marker === 0xff && segments < MAX_JPEG_SEGMENTS) {
      position += 1;
      segments += 1;
      marker = bytes.at(position + 1);
    }
    if (marker < 0) return null;
    if (isStartOfFrame(marker)) {
      return validSize(bytes.bigEndian16(position + 7), bytes.bigEndian16(position + 5));
    }
    if (marker === 0xd8 || marker === 0x01 || (marker >= 0xd0 && marker <= 0xd7)) {
      position += 2;
      continue;
    }
    if (marker === 0xda || marker === 0xd9) return null; // scan data or end before any frame header
    const length = bytes.bigEndian16(position + 2);
    if (length < 2) return null;
    position += 2 + length;
  }
  return null;
}

/**
 * Dimensions of an image given as a base64 `data:` URL, read from its header; null when the URL
 * is not base64 data, the format is not PNG / JPEG / GIF / WebP, or the header is damaged.
 * Decodes only the header bytes (for JPEG, the segment headers up to the frame header).
 */
export function readDataUrlImageSize(url: string): ImageSize | null {
  if (!url.startsWith('data:')) return null;
  const comma = url.indexOf(',', 5);
  if (comma === -1 || comma > 512) return null;
  if (!url.slice(5, comma).toLowerCase().includes(';base64')) return null;
  const bytes = new Base64Bytes(url, comma + 1);
  return readPngSize(bytes) ?? readGifSize(bytes) ?? readWebpSize(bytes) ?? readJpegSize(bytes);
}

/** Tiles of 512 px after fitting in 2048×2048 and bringing the shortest side down to 768. */
export function countImageTiles(size: ImageSize): number {
  let width = Math.max(1, size.width);
  let height = Math.max(1, size.height);
  if (width > 2048 || height > 2048) {
    if (width >= height) {
      height = Math.max(1, Math.round((height * 2048) / width));
      width = 2048;
    } else {
      width = Math.max(1, Math.round((width * 2048) / height));
      height = 2048;
    }
  }
  if (Math.min(width, height) > 768) {
    if (width <= height) {
      height = Math.max(1, Math.round((height * 768) / width));
      width = 768;
    } else {
      width = Math.max(1, Math.round((width * 768) / height));
      height = 768;
    }
  }
  return Math.ceil(width / 512) * Math.ceil(height / 512);
}

const PATCH_SIZE = 32;
const MAX_PATCHES = 1536;

/** Rounds up, forgiving binary noise just above an integer (33.0000000001 is 33 patches). */
function ceilTolerant(value: number): number {
  return Math.ceil(value - 1e-9);
}

/** 32 px patches covering the image, shrunk to fit 1536 patches as the guide describes. */
export function countImagePatches(size: ImageSize): number {
  const width = Math.max(1, size.width);
  const height = Math.max(1, size.height);
  const raw = Math.ceil(width / PATCH_SIZE) * Math.ceil(height / PATCH_SIZE);
  if (raw <= MAX_PATCHES) return raw;
  let shrink = Math.sqrt((MAX_PATCHES * PATCH_SIZE * PATCH_SIZE) / (width * height));
  const widthPatches = (width * shrink) / PATCH_SIZE;
  const heightPatches = (height * shrink) / PATCH_SIZE;
  // Shrink a little more so a whole number of patches fits the narrower side.
  shrink *= Math.min(Math.floor(widthPatches) / widthPatches, Math.floor(heightPatches) / heightPatches);
  const patches = Math.max(1, ceilTolerant((width * shrink) / PATCH_SIZE)) * Math.max(1, ceilTolerant((height * shrink) / PATCH_SIZE));
  return Math.min(patches, MAX_PATCHES);
}

/** Tokens of one image of `size` for a model billed as `pricing`. */
export function imageTokensForSize(size: ImageSize, detail: ImageDetail, pricing: ImagePricing): number {
  if (pricing.kind === 'patches') {
    return Math.ceil((countImagePatches(size) * pricing.multiplierPercent) / 100);
  }
  if (detail === 'low') return pricing.baseTokens;
  return pricing.baseTokens + pricing.tileTokens * countImageTiles(size);
}

/**
 * Most 512 px tiles one image makes: after fitting in 2048×2048 the shortest side is at most 768
 * (2 tiles) and the longest at most 2048 (4 tiles), so 2048×768 (and anything that shrinks to
 * it) is the worst aspect ratio, 8 tiles.
 */
const MAX_TILES = 8;

/**
 * The most tokens one image can bill for a model at a detail, whatever its size: base + 8 tiles
 * (base alone at `detail: "low"`), or the patch cap times the model's multiplier.
 */
export function maxImageTokens(detail: ImageDetail, pricing: ImagePricing): number {
  if (pricing.kind === 'patches') return Math.ceil((MAX_PATCHES * pricing.multiplierPercent) / 100);
  if (detail === 'low') return pricing.baseTokens;
  return pricing.baseTokens + pricing.tileTokens * MAX_TILES;
}

/**
 * Tokens of an image part, and whether its size was read: from the data URL's header when
 * readable; otherwise (a remote URL, a file id, an unreadable header) the most one image can bill
 * for the model and detail ({@link maxImageTokens}).
 */
export function imageTokens(url: string | undefined, detail: ImageDetail, model: string): { readonly tokens: number; readonly sized: boolean } {
  const pricing = imagePricingForModel(model);
  const size = url === undefined ? null : readDataUrlImageSize(url);
  if (size) return { tokens: imageTokensForSize(size, detail, pricing), sized: true };
  return { tokens: maxImageTokens(detail, pricing), sized: false };
}
