/**
 * The serving process turns off V8's allocation-site pretenuring. V8 notes,
 * per allocation site, how many of the objects it made survive a scavenge,
 * and once a site's objects mostly did, allocates all its later objects
 * straight into the old generation. A request's objects (the parsed headers,
 * Node's request and response, the pipeline's closures) die within
 * milliseconds, but their sites get that verdict all the same, and every
 * request then leaves its garbage where only a mark-compact collects it, and
 * old objects pointing at young ones that each scavenge must walk. Measured
 * at 575 req/s on one core: about 17 KB of each request reached the old
 * generation with pretenuring and 2 KB without; scavenges took 5.2–5.8 ms at
 * the median against 1.7, and 10–28 mark-compacts in 45 s became none
 * (docs/performance.md, "Request objects born old").
 *
 * Set at run time, before the server's modules load: the verdicts are made at
 * collections, and none has judged a request's site yet. An operator who
 * starts node with either form of the flag keeps it.
 */
import { setFlagsFromString } from 'node:v8';

const FLAG = 'allocation-site-pretenuring';

/** The V8 flags the serving process sets for itself, given the Node flags it was started with. */
export function servingHeapFlags(execArgv: readonly string[]): string[] {
  const chosen = execArgv.some((arg) => {
    const name = arg.replaceAll('_', '-');
    return name === `--${FLAG}` || name === `--no-${FLAG}`;
  });
  return chosen ? [] : [`--no-${FLAG}`];
}

/** Applies {@link servingHeapFlags} to this process. */
export function applyServingHeapFlags(execArgv: readonly string[] = process.execArgv): void {
  for (const flag of servingHeapFlags(execArgv)) setFlagsFromString(flag);
}
