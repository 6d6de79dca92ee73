/**
 * How the user started `tollgate`, so hints we print ("then run … spend")
 * can be pasted back as they are: `npm run tollgate --` from a checkout (tsx
 * runs the .ts source), `npx tollgate` through npx, `node dist/cli/index.js`
 * when the compiled file was run directly (as the Docker image does), and
 * plain `tollgate` for the installed bin.
 */
import { basename, relative } from 'node:path';

/** The command to write in a hint; `env` is what npm set for this process (src/config/index.ts: `launcherEnvironment`). */
export function commandName(script: string | undefined, env: Readonly<Record<string, string | undefined>>, cwd: string): string {
  // npm exec sets this for the command it runs; the bin path alone lives in npx's cache.
  if (env.npm_lifecycle_event === 'npx') return 'npx tollgate';
  if (script === undefined) return 'tollgate';
  if (script.endsWith('.ts')) return 'npm run tollgate --';
  // The bin link is named `tollgate`; `index.js` means the file itself was given to node.
  if (basename(script) === 'index.js') return `node ${relative(cwd, script) || script}`;
  return 'tollgate';
}
