/**
 * The one error a bad configuration raises, and the shape of its message: "invalid configuration:"
 * then one indented line per problem, so an operator sees every bad variable or file entry at once.
 */
import { redactUrlsIn } from '../redact-url.js';

export class ConfigError extends Error {
  override readonly name = 'ConfigError';

  constructor(message: string) {
    // A message may quote a value (a URL in a config file's JSON error): never with its credentials.
    super(redactUrlsIn(message));
  }
}

/** A {@link ConfigError} listing `problems` (each already prefixed with the variable or file it is about). */
export function invalidConfiguration(problems: readonly string[]): ConfigError {
  return new ConfigError(`invalid configuration:\n${problems.map((problem) => `  ${problem}`).join('\n')}`);
}
