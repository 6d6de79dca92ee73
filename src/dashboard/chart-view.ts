/** Charts' view models: the hourly and daily rollups as uPlot columns (drawn by client-script.ts). */
import type { DayPoint, HourPoint } from '../storage/dashboard-reads.js';
import { tokensOf } from './view-context.js';

/** A chart: x in Unix seconds, each series in its unit (micro-USD or a count). */
export interface ChartData {
  readonly x: number[];
  readonly series: ReadonlyArray<{ readonly label: string; readonly unit: 'usd' | 'count'; readonly values: number[] }>;
}

/** A chart of hourly points with the series asked for. */
export function chartOfHours(points: readonly HourPoint[], series: ReadonlyArray<'spend' | 'requests' | 'tokens' | 'rejected'>): ChartData {
  return {
    x: points.map((p) => p.hour / 1000),
    series: series.map((name) => {
      switch (name) {
        case 'spend':
          return { label: 'Spend', unit: 'usd' as const, values: points.map((p) => p.costMicros) };
        case 'requests':
          return { label: 'Requests', unit: 'count' as const, values: points.map((p) => p.requests) };
        case 'tokens':
          return { label: 'Tokens', unit: 'count' as const, values: points.map((p) => p.promptTokens + p.completionTokens) };
        case 'rejected':
          return { label: 'Rejected (429)', unit: 'count' as const, values: points.map((p) => p.rejectedRateLimit + p.rejectedBudget) };
      }
    }),
  };
}

/** A chart of daily points with the series asked for. */
export function chartOfDays(points: readonly DayPoint[], series: ReadonlyArray<'spend' | 'requests' | 'tokens'>): ChartData {
  return {
    x: points.map((p) => Date.parse(`${p.day}T00:00:00Z`) / 1000),
    series: series.map((name) => {
      switch (name) {
        case 'spend':
          return { label: 'Spend', unit: 'usd' as const, values: points.map((p) => p.totals.costMicros) };
        case 'requests':
          return { label: 'Requests', unit: 'count' as const, values: points.map((p) => p.totals.requests) };
        case 'tokens':
          return { label: 'Tokens', unit: 'count' as const, values: points.map((p) => tokensOf(p.totals)) };
      }
    }),
  };
}
