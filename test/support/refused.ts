/**
 * Ports that no test running beside this one can take. A port bound and closed again is free for
 * the next `listen(0)` of any test running beside it: one such test's fake upstream once took a
 * "dead" upstream's port and answered 401 to a key it did not know, failing two routing tests; the
 * replicas script once found its second node's port taken the same way. Ports below the range the
 * system hands out to `listen(0)` are never given to a test's `listen(0)`: only another test picking
 * the same one at random from the 10,000 below it could take it.
 */
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

/** A port nothing listens on, for an upstream that refuses connections. */
export const REFUSED_PORT = 1;

/** The first port the system hands out to `listen(0)` (Linux's default when it cannot be read). */
function ephemeralLow(): number {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    return Number.isInteger(low) && low > 1024 ? low : 32768;
  } catch {
    return 32768;
  }
}

function isFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once('error', () => resolve(false));
    probe.listen({ port, host: '127.0.0.1', exclusive: true }, () => probe.close(() => resolve(true)));
  });
}

/**
 * The first of `count` consecutive free ports below the `listen(0)` range, so that a program told
 * to listen on them finds them still free: only processes outside the tests (the machine's own
 * services, which do not come and go) could hold them.
 */
export async function freePortsBelowEphemeral(count: number): Promise<number> {
  const high = ephemeralLow() - count;
  const low = Math.max(10_000, high - 10_000);
  if (high - low < 1_000) throw new Error(`the ports below listen(0)'s range (${ephemeralLow()}) leave too few to pick from`);
  for (let attempt = 0; attempt < 50; attempt += 1) {
    const first = low + Math.floor(Math.random() * (high - low));
    let free = true;
    for (let i = 0; i < count && free; i += 1) free = await isFree(first + i);
    if (free) return first;
  }
  throw new Error(`no ${count} consecutive free ports found in ${low}–${high + count - 1}`);
}
