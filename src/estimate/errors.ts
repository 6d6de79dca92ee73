/** Codes an {@link EstimateInputError} can carry; the proxy maps them to OpenAI-shaped 400s. */
export type EstimateInputErrorCode = 'invalid_type' | 'invalid_value' | 'missing_required_parameter' | 'context_length_exceeded' | 'nesting_too_deep';

/**
 * The request body cannot be priced because it is malformed (wrong JSON types, non-positive
 * `max_tokens`, …) or does not fit the model's context window. `param` is the offending path in
 * OpenAI's style (`messages[2].content`), or null when the body as a whole is at fault.
 */
export class EstimateInputError extends Error {
  override readonly name = 'EstimateInputError';
  readonly param: string | null;
  readonly code: EstimateInputErrorCode;

  constructor(message: string, param: string | null, code: EstimateInputErrorCode) {
    super(message);
    this.param = param;
    this.code = code;
  }
}
