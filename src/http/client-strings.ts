/**
 * Bounds on the strings a client chooses that Tollgate stores, logs or uses
 * as a label: a model name becomes a ledger field, a rollup key, a log field
 * and (when known) a metric label, so an unbounded one grows all of them
 * (200 names of 200 KB each grew /metrics to 80 MB). Pure.
 */

/** Longest model name accepted; real names (fine-tunes included) are far shorter. */
const MAX_MODEL_NAME_CHARS = 256;

/**
 * Characters model names use across OpenAI-compatible providers: `gpt-4o`,
 * `ft:gpt-4o-mini:org::id`, `meta-llama/Llama-3-8B`, `llama3:8b`,
 * `claude@20240620`, `model+variant`, `name=value`.
 */
const MODEL_NAME = /^[A-Za-z0-9][A-Za-z0-9._:/@+=-]*$/;

/** Why a model name is refused, or undefined when it is acceptable. */
export function modelNameProblem(model: string): string | undefined {
  if (model.length > MAX_MODEL_NAME_CHARS) return `model must be at most ${MAX_MODEL_NAME_CHARS} characters.`;
  if (!MODEL_NAME.test(model)) {
    return 'model may contain only letters, digits and . _ : / @ + = - (starting with a letter or digit).';
  }
  return undefined;
}
