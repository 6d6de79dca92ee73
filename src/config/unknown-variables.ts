/**
 * Warnings about `TOLLGATE_*` variables Tollgate does not read: a misspelled name
 * (`TOLLGATE_UPSTEAM_URL`) would otherwise be ignored in silence and its default used. Each is named
 * with the nearest known name, so the operator sees the fix.
 */
import cluster from 'node:cluster';

/**
 * Variables set on purpose that are not settings, so they must not warn: those Tollgate's own tests
 * and benchmarks read (test/support/postgres.ts, bench/), and TOLLGATE_KEY, where the README has a
 * client keep its Tollgate key (often in the same shell that runs the CLI).
 */
const INTERNAL_VARIABLES: readonly string[] = [
  'TOLLGATE_TEST_PG_URL',
  'TOLLGATE_BENCH_PG_URL',
  'TOLLGATE_BENCH_ALLOC_FILE',
  'TOLLGATE_BENCH_GC_FILE',
  'TOLLGATE_BENCH_STALL_FILE',
  'TOLLGATE_KEY',
];

/** Edit distance (insertions, deletions, substitutions, each 1) between two names. */
export function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const substitution = previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1);
      current.push(Math.min(previous[j]! + 1, current[j - 1]! + 1, substitution));
    }
    previous = current;
  }
  return previous[b.length]!;
}

/**
 * The known name nearest to `name`, or undefined when none is near enough to be a likely typo
 * (more than a third of the name's part after `TOLLGATE_` differs). Ties go to the earlier name.
 */
export function nearestName(name: string, known: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = Number.POSITIVE_INFINITY;
  for (const candidate of known) {
    const distance = editDistance(name, candidate);
    if (distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  const budget = Math.max(2, Math.ceil((name.length - 'TOLLGATE_'.length) / 3));
  return bestDistance <= budget ? best : undefined;
}

/**
 * One warning per `TOLLGATE_*` variable of `env` that is neither a setting (`known`), one of the
 * internal variables, nor a name the config file refers to (`referenced`: an upstream's `keyEnv`,
 * a webhook's `secretEnv`), in name order.
 */
export function unknownVariableWarnings(
  env: Readonly<Record<string, string | undefined>>,
  known: readonly string[],
  referenced: ReadonlySet<string>,
): string[] {
  const allowed = new Set([...known, ...INTERNAL_VARIABLES, ...referenced]);
  return Object.keys(env)
    .filter((name) => name.startsWith('TOLLGATE_') && !allowed.has(name))
    .sort()
    .map((name) => {
      const nearest = nearestName(name, known);
      return nearest === undefined
        ? `${name} is not a Tollgate setting and is ignored (docs/configuration.md lists them)`
        : `${name} is not a Tollgate setting and is ignored; did you mean ${nearest}?`;
    });
}

/** Warnings already logged (the server's log) and already printed (the CLI's stderr): each channel says each once. */
const logged = new Set<string>();
const printed = new Set<string>();

function once(seen: Set<string>, warnings: readonly string[], warn: (message: string) => void): void {
  for (const warning of warnings) {
    if (seen.has(warning)) continue;
    seen.add(warning);
    warn(warning);
  }
}

/** Hands each of `warnings` to `warn` (the server's logger) once per process, however often the configuration is loaded. */
export function reportWarnings(warnings: readonly string[], warn: (message: string) => void): void {
  once(logged, warnings, warn);
}

let sink: ((message: string) => void) | undefined;

/**
 * Where the configuration's warnings go as it is loaded (the CLI: its stderr) until the returned
 * function restores the previous one. Unset, they are only kept on the Config.
 */
export function sendConfigWarningsTo(next: (message: string) => void): () => void {
  const previous = sink;
  sink = next;
  return () => {
    sink = previous;
  };
}

/** Sends warnings found while loading the configuration to the current sink, if any, once each. */
export function reportLoadWarnings(warnings: readonly string[]): void {
  // A worker of `serve --workers N` loads the same environment as its primary, which already said it.
  if (sink !== undefined && !cluster.isWorker) once(printed, warnings, sink);
}
