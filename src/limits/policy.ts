/**
 * Re-export of {@link ./algorithm/policy.ts}: config, keys, the CLI, admin and
 * the dashboard import the policy model from here, so moving it into
 * `algorithm/` changed no file outside src/limits.
 */
export * from './algorithm/policy.js';
