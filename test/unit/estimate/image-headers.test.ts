import { deflateSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { builtinPriceTable, estimateRequestSync, readDataUrlImageSize } from '../../../src/estimate/index.js';

function dataUrl(mime: string, bytes: Buffer): string {
  return `data:${mime};base64,${bytes.toString('base64')}`;
}

function pngChunk(type: string, data: Buffer): Buffer {
  const length = Buffer.alloc(4);
  length.writeUInt32BE(data.length);
  // The CRC is not checked by a header reader; a fixed value keeps the builder small.
  return Buffer.concat([length, Buffer.from(type, 'latin1'), data, Buffer.alloc(4)]);
}

function png(width: number, height: number): Buffer {
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 0; // greyscale
  const rows = Buffer.alloc((width + 1) * Math.min(height, 4));
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    pngChunk('IHDR', ihdr),
    pngChunk('IDAT', deflateSync(rows)),
    pngChunk('IEND', Buffer.alloc(0)),
  ]);
}

function gif(width: number, height: number): Buffer {
  const header = Buffer.alloc(13);
  header.write('GIF89a', 0, 'latin1');
  header.writeUInt16LE(width, 6);
  header.writeUInt16LE(height, 8);
  return Buffer.concat([header, Buffer.from([0x3b])]);
}

function riff(chunkType: string, chunk: Buffer): Buffer {
  const chunkHeader = Buffer.alloc(8);
  chunkHeader.write(chunkType, 0, 'latin1');
  chunkHeader.writeUInt32LE(chunk.length, 4);
  const body = Buffer.concat([Buffer.from('WEBP', 'latin1'), chunkHeader, chunk]);
  const header = Buffer.alloc(8);
  header.write('RIFF', 0, 'latin1');
  header.writeUInt32LE(body.length, 4);
  return Buffer.concat([header, body]);
}

function webpLossy(width: number, height: number): Buffer {
  const frame = Buffer.alloc(10);
  frame[0] = 0x10; // frame tag: key frame
  frame[3] = 0x9d;
  frame[4] = 0x01;
  frame[5] = 0x2a;
  frame.writeUInt16LE(width, 6);
  frame.writeUInt16LE(height, 8);
  return riff('VP8 ', frame);
}

function webpLossless(width: number, height: number): Buffer {
  const data = Buffer.alloc(5);
  data[0] = 0x2f;
  data.writeUInt32LE(((width - 1) | ((height - 1) << 14)) >>> 0, 1);
  return riff('VP8L', data);
}

function webpExtended(width: number, height: number): Buffer {
  const data = Buffer.alloc(10);
  data.writeUIntLE(width - 1, 4, 3);
  data.writeUIntLE(height - 1, 7, 3);
  return riff('VP8X', data);
}

function jpegSegment(marker: number, payload: Buffer): Buffer {
  const header = Buffer.alloc(4);
  header[0] = 0xff;
  header[1] = marker;
  header.writeUInt16BE(payload.length + 2, 2);
  return Buffer.concat([header, payload]);
}

function jpeg(width: number, height: number, exifBytes = 0): Buffer {
  const sof = Buffer.alloc(15);
  sof[0] = 8; // precision
  sof.writeUInt16BE(height, 1);
  sof.writeUInt16BE(width, 3);
  sof[5] = 3; // components
  return Buffer.concat([
    Buffer.from([0xff, 0xd8]),
    jpegSegment(0xe0, Buffer.from('JFIF\0\x01\x02\0\0\x01\0\x01\0\0', 'latin1')),
    ...(exifBytes > 0 ? [jpegSegment(0xe1, Buffer.alloc(exifBytes, 7))] : []),
    jpegSegment(0xdb, Buffer.alloc(65)),
    jpegSegment(0xc2, sof),
    jpegSegment(0xda, Buffer.alloc(10)),
    Buffer.from([0xff, 0xd9]),
  ]);
}

describe('image dimensions are read from data-URL headers', () => {
  it('reads a PNG', () => {
    expect(readDataUrlImageSize(dataUrl('image/png', png(1024, 768)))).toEqual({ width: 1024, height: 768 });
  });

  it('reads a GIF', () => {
    expect(readDataUrlImageSize(dataUrl('image/gif', gif(640, 480)))).toEqual({ width: 640, height: 480 });
  });

  it('reads lossy, lossless and extended WebP', () => {
    expect(readDataUrlImageSize(dataUrl('image/webp', webpLossy(800, 600)))).toEqual({ width: 800, height: 600 });
    expect(readDataUrlImageSize(dataUrl('image/webp', webpLossless(3000, 2000)))).toEqual({ width: 3000, height: 2000 });
    expect(readDataUrlImageSize(dataUrl('image/webp', webpExtended(5000, 7)))).toEqual({ width: 5000, height: 7 });
  });

  it('reads a progressive JPEG past a large EXIF segment', () => {
    expect(readDataUrlImageSize(dataUrl('image/jpeg', jpeg(1920, 1080)))).toEqual({ width: 1920, height: 1080 });
    expect(readDataUrlImageSize(dataUrl('image/jpeg', jpeg(4032, 3024, 60_000)))).toEqual({ width: 4032, height: 3024 });
  });

  it('gives up on damaged, truncated or foreign data without throwing', () => {
    expect(readDataUrlImageSize('data:image/png;base64,iVBORw0KGgo')).toBeNull();
    expect(readDataUrlImageSize('data:image/png;base64,!!!!')).toBeNull();
    expect(readDataUrlImageSize('data:text/plain,hello')).toBeNull();
    expect(readDataUrlImageSize('https://example.com/a.png')).toBeNull();
    expect(readDataUrlImageSize(dataUrl('image/jpeg', jpeg(10, 10).subarray(0, 30)))).toBeNull();
    expect(readDataUrlImageSize(`data:image/jpeg;base64,${Buffer.from([0xff, 0xd8, ...Array<number>(4000).fill(0xff)]).toString('base64')}`)).toBeNull();
  });

  it('prices a chat image from its header and never tokenizes the base64 as text', () => {
    const big = Buffer.concat([png(2048, 4096), Buffer.alloc(3_000_000, 1)]);
    const body = {
      model: 'gpt-4o',
      messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: dataUrl('image/png', big), detail: 'high' } }] }],
    };
    const estimate = estimateRequestSync('chat', body, { prices: builtinPriceTable, defaultMaxCompletionTokens: 10 });
    expect(estimate.imageTokens).toBe(1105);
    // 3 (message) + 1 ("user") + 1105 (image) + 3 (priming)
    expect(estimate.promptTokens).toBe(1112);
  });
});
