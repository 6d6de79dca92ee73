/**
 * The `alerts` section of the config file (TOLLGATE_CONFIG) and what it
 * becomes. Webhook secrets are never in the file: each webhook names an
 * environment variable, resolved by src/config/ (the one reader of the
 * environment) through {@link resolveAlertSettings}.
 */
import { z } from 'zod';
import { BUDGET_PERIODS, type BudgetPeriod } from '../domain/calendar.js';
import { usdToMicros } from '../domain/money.js';

/** What a webhook can be sent. */
const ALERT_EVENTS = ['budget.threshold', 'spend.velocity', 'reconcile.drift'] as const;
export type AlertEventType = (typeof ALERT_EVENTS)[number];

const webhookSchema = z.strictObject({
  /** Names the webhook in logs, `alerts list` and `alerts test --webhook`. */
  name: z.string().regex(/^[A-Za-z0-9_.-]{1,64}$/, 'must be 1–64 letters, digits, ".", "_" or "-"'),
  /** Where alerts are POSTed (http or https). */
  url: z.string().refine((text) => {
    try {
      const url = new URL(text);
      return url.protocol === 'http:' || url.protocol === 'https:';
    } catch {
      return false;
    }
  }, 'must be an http(s) URL'),
  /** Name of the environment variable holding the signing secret. */
  secretEnv: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be an environment variable name'),
  /** Events this webhook gets (default: all). */
  events: z.array(z.enum(ALERT_EVENTS)).min(1).optional(),
});

const usdAmount = z.union([z.number(), z.string()]).transform((value, ctx) => {
  const micros = usdToMicros(value);
  if (micros === null || micros <= 0) {
    ctx.addIssue({ code: 'custom', message: 'must be a positive USD amount with at most 6 decimals' });
    return z.NEVER;
  }
  return micros;
});

/** The config file's `alerts` object. */
export const alertsFileSchema = z.strictObject({
  webhooks: z.array(webhookSchema).min(1),
  /** Percent of a budget at which to alert, each once per period (default 50, 80, 100). */
  thresholds: z.array(z.number().int().min(1).max(1000)).min(1).max(20).optional(),
  /** Spend-velocity alerts: the last hour's spend over `factor` × the trailing hourly average. */
  velocity: z
    .strictObject({
      enabled: z.boolean().optional(),
      factor: z.number().min(1).max(1000).optional(),
      trailingHours: z.number().int().min(1).max(168).optional(),
      /** Below this spend (USD) in the hour, no velocity alert. */
      minimumUsd: usdAmount.optional(),
    })
    .optional(),
  /**
   * The runaway stop: a key whose spend over the last `windowMinutes` runs faster than `factor` × its
   * usual rate (the `trailingHours` before) or `usdPerHour` is refused until the rate falls or an
   * operator resumes it. Off unless this object is present.
   */
  runaway: z
    .strictObject({
      factor: z.number().min(1).max(1000).optional(),
      usdPerHour: usdAmount.optional(),
      windowMinutes: z.number().int().min(1).max(60).optional(),
      trailingHours: z.number().int().min(1).max(168).optional(),
      /** Below this spend (USD) in the window, never throttled. */
      minimumUsd: usdAmount.optional(),
    })
    .optional(),
  /** Alert-only budgets over every key together (they refuse nothing). */
  globalBudgets: z
    .array(z.strictObject({ usd: usdAmount, period: z.enum(BUDGET_PERIODS) }))
    .max(8)
    .optional(),
  retry: z
    .strictObject({
      attempts: z.number().int().min(1).max(50).optional(),
      initialDelayMs: z.number().int().min(1).optional(),
      maxDelayMs: z.number().int().min(1).optional(),
    })
    .optional(),
  /** Time one delivery may take, ms. */
  timeoutMs: z.number().int().min(100).max(120_000).optional(),
  /** Undelivered alerts kept in the outbox at most; more are dropped (and logged). */
  maxPending: z.number().int().min(1).max(1_000_000).optional(),
});

export interface WebhookSettings {
  readonly name: string;
  readonly url: string;
  readonly secret: string;
  readonly events: readonly AlertEventType[];
}

export interface AlertSettings {
  readonly webhooks: readonly WebhookSettings[];
  readonly thresholds: readonly number[];
  readonly velocity: { readonly enabled: boolean; readonly factor: number; readonly trailingHours: number; readonly minimumMicros: number };
  readonly runaway: RunawaySettings | undefined;
  readonly globalBudgets: readonly { readonly microUsd: number; readonly period: BudgetPeriod }[];
  readonly retry: { readonly attempts: number; readonly initialDelayMs: number; readonly maxDelayMs: number };
  readonly timeoutMs: number;
  readonly maxPending: number;
}

export interface RunawaySettings {
  /** undefined when only the absolute rate applies. */
  readonly factor: number | undefined;
  readonly microUsdPerHour: number | undefined;
  readonly windowMs: number;
  readonly trailingMs: number;
  readonly minimumMicros: number;
}

/** Defaults of every optional field (the README's settings table lists the same). */
const ALERT_DEFAULTS = {
  thresholds: [50, 80, 100],
  velocity: { enabled: true, factor: 3, trailingHours: 24, minimumMicros: 1_000_000 },
  runaway: { factor: 10, windowMinutes: 5, trailingHours: 24, minimumMicros: 1_000_000 },
  retry: { attempts: 8, initialDelayMs: 1000, maxDelayMs: 3_600_000 },
  timeoutMs: 10_000,
  maxPending: 10_000,
} as const;

/**
 * The file's section with its secrets read from `env`. Returns the problems
 * instead of throwing, naming variables, never their values.
 */
export function resolveAlertSettings(
  file: z.output<typeof alertsFileSchema>,
  env: Readonly<Record<string, string | undefined>>,
): { ok: true; settings: AlertSettings } | { ok: false; problems: string[] } {
  const problems: string[] = [];
  const names = new Set<string>();
  const webhooks: WebhookSettings[] = [];
  for (const [index, hook] of file.webhooks.entries()) {
    if (names.has(hook.name)) problems.push(`alerts.webhooks.${index}.name: "${hook.name}" is used twice`);
    names.add(hook.name);
    const secret = env[hook.secretEnv]?.trim() ?? '';
    if (secret.length < 16) problems.push(`alerts.webhooks.${index}.secretEnv: ${hook.secretEnv} must be set to a secret of at least 16 characters`);
    webhooks.push({ name: hook.name, url: hook.url, secret, events: hook.events ?? ALERT_EVENTS });
  }
  if (problems.length > 0) return { ok: false, problems };
  const d = ALERT_DEFAULTS;
  return {
    ok: true,
    settings: {
      webhooks,
      thresholds: [...new Set(file.thresholds ?? d.thresholds)].sort((a, b) => a - b),
      velocity: {
        enabled: file.velocity?.enabled ?? d.velocity.enabled,
        factor: file.velocity?.factor ?? d.velocity.factor,
        trailingHours: file.velocity?.trailingHours ?? d.velocity.trailingHours,
        minimumMicros: file.velocity?.minimumUsd ?? d.velocity.minimumMicros,
      },
      runaway: runawaySettings(file.runaway),
      globalBudgets: (file.globalBudgets ?? []).map((b) => ({ microUsd: b.usd, period: b.period })),
      retry: {
        attempts: file.retry?.attempts ?? d.retry.attempts,
        initialDelayMs: file.retry?.initialDelayMs ?? d.retry.initialDelayMs,
        maxDelayMs: file.retry?.maxDelayMs ?? d.retry.maxDelayMs,
      },
      timeoutMs: file.timeoutMs ?? d.timeoutMs,
      maxPending: file.maxPending ?? d.maxPending,
    },
  };
}

/** The runaway section with its defaults: the factor applies unless only `usdPerHour` was given. */
function runawaySettings(section: z.output<typeof alertsFileSchema>['runaway']): RunawaySettings | undefined {
  if (section === undefined) return undefined;
  const d = ALERT_DEFAULTS.runaway;
  const onlyAbsolute = section.factor === undefined && section.usdPerHour !== undefined;
  return {
    factor: onlyAbsolute ? undefined : (section.factor ?? d.factor),
    microUsdPerHour: section.usdPerHour,
    windowMs: (section.windowMinutes ?? d.windowMinutes) * 60_000,
    trailingMs: (section.trailingHours ?? d.trailingHours) * 3_600_000,
    minimumMicros: section.minimumUsd ?? d.minimumMicros,
  };
}
