/**
 * The dashboard's static files, served by the proxy itself (no CDN: it works
 * on a closed network). uPlot comes from node_modules, read once; our own
 * script and styles are strings in .ts modules, so they exist the same in
 * `src/` (tsx) and in the compiled `dist/` (tsc copies no .js/.css assets).
 *
 * Pages link every file with `?v=<content hash>`, so browsers may cache them
 * for a year and still never run a stale copy after an upgrade.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { CLIENT_SCRIPT } from './client-script.js';
import { DASHBOARD_CSS } from './styles.js';

export interface Asset {
  readonly body: string;
  readonly contentType: string;
  /** Short content hash, for cache-busting links. */
  readonly version: string;
}

export type AssetName = 'uplot.min.js' | 'uplot.min.css' | 'dashboard.js' | 'dashboard.css';

function asset(body: string, contentType: string): Asset {
  return { body, contentType, version: createHash('sha256').update(body).digest('hex').slice(0, 12) };
}

let loaded: ReadonlyMap<AssetName, Asset> | undefined;

/** Every asset, read from disk on first use and kept. */
export function loadAssets(): ReadonlyMap<AssetName, Asset> {
  if (loaded !== undefined) return loaded;
  // createRequire resolves the same under tsx, vitest and plain node (dist/).
  const require = createRequire(import.meta.url);
  const read = (specifier: string) => readFileSync(require.resolve(specifier), 'utf8');
  loaded = new Map<AssetName, Asset>([
    ['uplot.min.js', asset(read('uplot/dist/uPlot.iife.min.js'), 'text/javascript; charset=utf-8')],
    ['uplot.min.css', asset(read('uplot/dist/uPlot.min.css'), 'text/css; charset=utf-8')],
    ['dashboard.js', asset(CLIENT_SCRIPT, 'text/javascript; charset=utf-8')],
    ['dashboard.css', asset(DASHBOARD_CSS, 'text/css; charset=utf-8')],
  ]);
  return loaded;
}

/** The versioned link to an asset. */
export function assetHref(name: AssetName): string {
  return `/dashboard/assets/${name}?v=${loadAssets().get(name)!.version}`;
}
