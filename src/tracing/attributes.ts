/**
 * The attribute names of Tollgate's spans (docs/tracing.md). The GenAI ones follow OpenTelemetry's
 * GenAI semantic conventions, still "development" there: the package ships them only from its
 * unstable `incubating` entry, which is not meant to be imported, so they are spelled here once.
 * The stable HTTP and server names come from the package itself.
 */
import type { Endpoint } from '../endpoints.js';

export const GEN_AI = {
  operation: 'gen_ai.operation.name',
  provider: 'gen_ai.provider.name',
  /** The older name of gen_ai.provider.name, which many backends still read. */
  system: 'gen_ai.system',
  requestModel: 'gen_ai.request.model',
  responseModel: 'gen_ai.response.model',
  responseId: 'gen_ai.response.id',
  maxTokens: 'gen_ai.request.max_tokens',
  stream: 'gen_ai.request.stream',
  choiceCount: 'gen_ai.request.choice.count',
  inputTokens: 'gen_ai.usage.input_tokens',
  outputTokens: 'gen_ai.usage.output_tokens',
} as const;

export const TOLLGATE = {
  requestId: 'tollgate.request_id',
  /** The key's name (never its secret, never its hash). */
  keyName: 'tollgate.key.name',
  keyId: 'tollgate.key.id',
  tenant: 'tollgate.tenant',
  endUser: 'tollgate.end_user',
  session: 'tollgate.session',
  estimatedCost: 'tollgate.cost.estimated_usd',
  actualCost: 'tollgate.cost.actual_usd',
  outcome: 'tollgate.outcome',
  refusalCode: 'tollgate.refusal.code',
  refusalReason: 'tollgate.refusal.reason',
  refusedBy: 'tollgate.refused_by',
  upstream: 'tollgate.upstream',
  upstreamKind: 'tollgate.upstream.kind',
  attempts: 'tollgate.attempts',
  attempt: 'tollgate.attempt',
  attemptOutcome: 'tollgate.attempt.outcome',
  capped: 'tollgate.capped',
  cut: 'tollgate.cut',
  usageSource: 'tollgate.usage.source',
  cachedTokens: 'tollgate.usage.cached_input_tokens',
  downgradedFrom: 'tollgate.downgraded_from',
  decisionMs: 'tollgate.limiter.decision_ms',
  ttftMs: 'tollgate.time_to_first_token_ms',
  upstreamRequestId: 'tollgate.upstream.request_id',
} as const;

/** The GenAI operation of each endpoint (the conventions' well-known values). */
export const OPERATION: Readonly<Record<Endpoint, string>> = {
  chat: 'chat',
  completions: 'text_completion',
  embeddings: 'embeddings',
  responses: 'chat',
  messages: 'chat',
};

/** The provider an endpoint's API is (the conventions' `openai`, `anthropic`). */
export const PROVIDER: Readonly<Record<Endpoint, string>> = {
  chat: 'openai',
  completions: 'openai',
  embeddings: 'openai',
  responses: 'openai',
  messages: 'anthropic',
};

/** The provider an upstream of the config is, in the conventions' values (an OpenAI-compatible API names none). */
export const UPSTREAM_PROVIDER: Readonly<Record<string, string>> = {
  openai: 'openai',
  azure: 'azure.ai.openai',
  anthropic: 'anthropic',
};
