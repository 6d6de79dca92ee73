/**
 * Upstream error answers describe the proxy's own provider account: "Rate
 * limit reached for gpt-4o in organization org-… on tokens per min",
 * "Incorrect API key provided: sk-proj-****abcd", "…project proj_…". Those
 * identify Tollgate's account (and hint at its key) to every tenant, so the
 * identifiers are masked before an error body is relayed; the message and
 * its numbers (what the client needs to back off) stay. Pure.
 */

const ACCOUNT_IDENTIFIERS: ReadonlyArray<readonly [RegExp, string]> = [
  [/\borg-[A-Za-z0-9]{4,}/g, 'org-***'],
  [/\bproj_[A-Za-z0-9]{4,}/g, 'proj_***'],
  [/\buser-[A-Za-z0-9]{4,}/g, 'user-***'],
  [/\bsk-[A-Za-z0-9_*-]{4,}/g, 'sk-***'],
];

/** The error body with the provider account's identifiers masked (the same Buffer when there were none). */
export function redactProviderAccount(body: Buffer): Buffer {
  const text = body.toString('utf8');
  let redacted = text;
  for (const [pattern, mask] of ACCOUNT_IDENTIFIERS) redacted = redacted.replace(pattern, mask);
  return redacted === text ? body : Buffer.from(redacted, 'utf8');
}
