/**
 * The bills a configuration can read: OpenAI's with TOLLGATE_PROVIDER_ADMIN_KEY,
 * Anthropic's with TOLLGATE_ANTHROPIC_ADMIN_KEY. Shared by `tollgate
 * reconcile` and the proxy's scheduled runs (src/reconcile/schedule.ts).
 */
import type { Config } from '../config/index.js';
import { anthropicUsageProvider } from './anthropic.js';
import { openAIUsageProvider } from './openai.js';
import type { UsageProvider } from './provider.js';

export const PROVIDERS = ['openai', 'anthropic'] as const;
export type ProviderName = (typeof PROVIDERS)[number];

/** The environment variable holding each provider's admin key. */
export const ADMIN_KEY_VARIABLES: Readonly<Record<ProviderName, string>> = {
  openai: 'TOLLGATE_PROVIDER_ADMIN_KEY',
  anthropic: 'TOLLGATE_ANTHROPIC_ADMIN_KEY',
};

/** The provider's report reader, or undefined when its admin key is not set. */
export function configuredProvider(config: Config, name: ProviderName): UsageProvider | undefined {
  const { reconcile } = config;
  if (name === 'openai') return reconcile.adminKey === undefined ? undefined : openAIUsageProvider({ baseUrl: reconcile.apiUrl, adminKey: reconcile.adminKey });
  return reconcile.anthropic.adminKey === undefined
    ? undefined
    : anthropicUsageProvider({ baseUrl: reconcile.anthropic.apiUrl, adminKey: reconcile.anthropic.adminKey, version: config.anthropic.version });
}

/** Every provider whose admin key is set, in PROVIDERS' order. */
export function configuredProviders(config: Config): UsageProvider[] {
  return PROVIDERS.map((name) => configuredProvider(config, name)).filter((provider) => provider !== undefined);
}
