/** CSV cells and records of the exports: any text survives a strict RFC 4180 reader, without controls, never as a formula. */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { csvLine, csvText, parseExportRange } from '../../../src/reports/export.js';
import { parseCsv } from '../../support/csv.js';

// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/;
const anyText = fc.oneof(
  fc.string({ unit: 'binary' }),
  fc.string({ unit: fc.constantFrom('=', '+', '-', '@', ' ', '\t', '\r', '\n', ',', '"', "'", 'a', '1') }),
);

describe('csvText', () => {
  it('reads back as the text with controls turned to spaces, and a formula start defused with a quote', () => {
    fc.assert(
      fc.property(anyText, (text) => {
        const [[cell]] = parseCsv(csvLine([text])) as [[string]];
        const clean = text.replace(new RegExp(CONTROL.source, 'g'), ' ');
        expect(CONTROL.test(cell)).toBe(false);
        expect(/^\s*[=+\-@]/.test(cell)).toBe(false);
        expect(cell).toBe(/^\s*[=+\-@]/.test(clean) ? `'${clean}` : clean);
      }),
      { numRuns: 2000 },
    );
  });

  it('keeps records apart: any list of cells reads back as one record of as many fields', () => {
    fc.assert(
      fc.property(fc.array(fc.oneof(anyText, fc.integer(), fc.constant(null), fc.boolean()), { minLength: 1, maxLength: 8 }), (cells) => {
        const records = parseCsv(csvLine(cells) + csvLine(cells));
        expect(records).toHaveLength(2);
        expect(records[0]).toHaveLength(cells.length);
      }),
    );
  });

  it('defuses the classic payloads and leaves plain text bare', () => {
    expect(csvText('=HYPERLINK("http://evil.example","click")')).toBe(`"'=HYPERLINK(""http://evil.example"",""click"")"`);
    expect(csvText('+1+cmd|/C calc!A0')).toBe("'+1+cmd|/C calc!A0");
    expect(csvText('-2+3')).toBe("'-2+3");
    expect(csvText('@SUM(A1)')).toBe("'@SUM(A1)");
    expect(csvText('\t=1+1')).toBe("' =1+1");
    expect(csvText('gpt-4o-mini')).toBe('gpt-4o-mini');
    expect(csvLine(['a', 1, null, true, '0.000125'])).toBe('a,1,,true,0.000125\r\n');
  });
});

describe('parseExportRange', () => {
  const now = Date.parse('2026-11-22T10:00:00Z');
  it('takes whole days like tollgate spend, or exact instants', () => {
    expect(parseExportRange('2026-11-01', '2026-11-02', now)).toEqual({
      sinceMs: Date.parse('2026-11-01T00:00:00Z'),
      untilMs: Date.parse('2026-11-03T00:00:00Z'),
      since: '2026-11-01',
      until: '2026-11-02',
    });
    expect(parseExportRange('7d', undefined, now)).toMatchObject({ since: '2026-11-16', until: '2026-11-22', untilMs: Date.parse('2026-11-23T00:00:00Z') });
    expect(parseExportRange('2026-11-01T12:30:00Z', '2026-11-01T14:00:00.5+01:00', now)).toMatchObject({
      sinceMs: Date.parse('2026-11-01T12:30:00Z'),
      untilMs: Date.parse('2026-11-01T13:00:00.500Z'),
      since: '2026-11-01',
      until: '2026-11-01',
    });
  });
  it('refuses an empty period and text that is no day', () => {
    expect(() => parseExportRange('2026-11-02', '2026-11-01', now)).toThrow(RangeError);
    expect(() => parseExportRange('yesterday', undefined, now)).toThrow(RangeError);
  });
});
