/**
 * Who a request comes from, for per-address brakes (the throttle on
 * presented tokens, secret-throttle.ts). Behind a load balancer every socket is the balancer's, so one
 * tenant's wrong tokens would lock out everyone, the operator included. The
 * addresses listed in TOLLGATE_TRUSTED_PROXIES are believed about
 * `X-Forwarded-For`: the client is the right-most address in it that is not
 * itself a trusted proxy (the left part is whatever the client wrote). Pure.
 */

/** `::ffff:10.0.0.1` and `10.0.0.1` are one address. */
export function normalizeAddress(address: string): string {
  const trimmed = address.trim().toLowerCase();
  return trimmed.startsWith('::ffff:') && trimmed.includes('.') ? trimmed.slice('::ffff:'.length) : trimmed;
}

/** The set of trusted proxy addresses from the setting's comma-separated text. */
export function parseTrustedProxies(text: string | undefined): ReadonlySet<string> {
  return new Set(
    (text ?? '')
      .split(',')
      .map(normalizeAddress)
      .filter((address) => address !== ''),
  );
}

/** The client's address: the socket's, or — from a trusted proxy — the nearest untrusted hop in X-Forwarded-For. */
export function clientAddressOf(socketAddress: string | undefined, forwardedFor: string | string[] | undefined, trusted: ReadonlySet<string>): string {
  const socket = socketAddress === undefined ? 'unknown' : normalizeAddress(socketAddress);
  if (!trusted.has(socket) || forwardedFor === undefined) return socket;
  const hops = (Array.isArray(forwardedFor) ? forwardedFor.join(',') : forwardedFor)
    .split(',')
    .map(normalizeAddress)
    .filter((hop) => hop !== '');
  for (let i = hops.length - 1; i >= 0; i -= 1) {
    const hop = hops[i]!;
    if (!trusted.has(hop)) return hop;
  }
  return hops[0] ?? socket;
}
