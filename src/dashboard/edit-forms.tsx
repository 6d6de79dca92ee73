/** @jsxRuntime automatic @jsxImportSource hono/jsx */
/**
 * The dashboard's write forms: a key's or tenant's policy (create and edit,
 * with a Preview of what the change means), the page that shows a new
 * secret once, and the buttons of a key's page. Every form posts with the
 * session's CSRF token (write-guard.ts); none needs the browser script,
 * which only adds the copy button's copying and the confirmation of a revoke.
 */
import type { Child, FC } from 'hono/jsx';
import { BUDGET_PERIODS } from '../domain/policy.js';
import type { ChangeView } from './change-view.js';
import { Layout } from './layout.js';
import type { PolicyFields } from './policy-form.js';
import { CSRF_FIELD } from './write-guard.js';

/** What a form needs to write: the session's CSRF token. */
export interface Writer {
  readonly csrf: string;
}

/** The hidden CSRF field every write form carries. */
const CsrfField: FC<{ writer: Writer }> = ({ writer }) => <input type="hidden" name={CSRF_FIELD} value={writer.csrf} />;

/** A one-button form posting to `action` (rotate, revoke, resume). */
export const ActionButton: FC<{ writer: Writer; action: string; label: string; confirm?: string; danger?: boolean }> = ({
  writer,
  action,
  label,
  confirm,
  danger,
}) => (
  <form method="post" action={action} class="inline" data-confirm={confirm}>
    <CsrfField writer={writer} />
    <button type="submit" class={danger === true ? 'danger' : undefined}>
      {label}
    </button>
  </form>
);

const PeriodSelect: FC<{ name: string; value: string }> = ({ name, value }) => (
  <select name={name}>
    {BUDGET_PERIODS.map((period) => (
      <option value={period} selected={period === value}>
        {period}
      </option>
    ))}
  </select>
);

const Field: FC<{ label: string; hint: string; children?: Child }> = ({ label, hint, children }) => (
  <label class="field">
    <span class="field-label">{label}</span>
    {children}
    <span class="muted hint">{hint}</span>
  </label>
);

/** The policy's fields; a key's form adds models, end users and tags. */
const PolicyFieldset: FC<{ fields: PolicyFields; owner: 'key' | 'tenant' }> = ({ fields, owner }) => (
  <>
    <fieldset>
      <legend>Limits and budgets</legend>
      <Field label="Limits" hint="one a line, as --limit: requests:60/min, tokens:40000/min,burst=60000, usd:5/day">
        <textarea name="limits" rows={3}>
          {fields.limits}
        </textarea>
      </Field>
      <div class="row">
        <Field label="Budget (USD)" hint="as --budget-usd; empty: no budget">
          <input name="budgetUsd" value={fields.budgetUsd} inputmode="decimal" />
        </Field>
        <Field label="Budget period" hint="as --budget-period">
          <PeriodSelect name="budgetPeriod" value={fields.budgetPeriod} />
        </Field>
        <Field label="In flight" hint="as --max-in-flight; empty: the default">
          <input name="maxInFlight" value={fields.maxInFlight} inputmode="numeric" />
        </Field>
      </div>
      <Field label="Other budgets" hint="as --extra-budget, DOLLARS/PERIOD, one a line: 100/month">
        <textarea name="extraBudgets" rows={2}>
          {fields.extraBudgets}
        </textarea>
      </Field>
    </fieldset>
    {owner === 'key' ? (
      <fieldset>
        <legend>Models, end users and tags</legend>
        <Field label="Models" hint="as --models, comma-separated (prefix* allowed); empty: every model">
          <input name="models" value={fields.models} />
        </Field>
        <Field label="Per end user: limits" hint="as --user-limit, one a line">
          <textarea name="userLimits" rows={2}>
            {fields.userLimits}
          </textarea>
        </Field>
        <div class="row">
          <Field label="Per end user: budget (USD)" hint="as --user-budget-usd">
            <input name="userBudgetUsd" value={fields.userBudgetUsd} inputmode="decimal" />
          </Field>
          <Field label="period" hint="as --user-budget-period">
            <PeriodSelect name="userBudgetPeriod" value={fields.userBudgetPeriod} />
          </Field>
        </div>
        <Field label="Tag budgets" hint="as --tag-budget, TAG=DOLLARS/PERIOD one a line: search=5/day">
          <textarea name="tagBudgets" rows={2}>
            {fields.tagBudgets}
          </textarea>
        </Field>
      </fieldset>
    ) : null}
    <fieldset>
      <legend>Per agent session</legend>
      <Field label="Limits" hint="as --session-limit, one a line">
        <textarea name="sessionLimits" rows={2}>
          {fields.sessionLimits}
        </textarea>
      </Field>
      <div class="row">
        <Field label="Budget (USD)" hint="as --session-budget-usd">
          <input name="sessionBudgetUsd" value={fields.sessionBudgetUsd} inputmode="decimal" />
        </Field>
        <Field label="period" hint="as --session-budget-period">
          <PeriodSelect name="sessionBudgetPeriod" value={fields.sessionBudgetPeriod} />
        </Field>
      </div>
    </fieldset>
  </>
);

/** Before and after, and the budget sentences. */
const ChangePanel: FC<{ change: ChangeView; title: string }> = ({ change, title }) => (
  <section class="panel change" data-change="">
    <h2>{title}</h2>
    {change.sentences.map((sentence) => (
      <p class="sentence">{sentence}</p>
    ))}
    <table>
      <thead>
        <tr>
          <th></th>
          <th>Before</th>
          <th>After</th>
        </tr>
      </thead>
      <tbody>
        {change.rows.map((row) => (
          <tr data-changed={row.changed ? 'true' : 'false'}>
            <td>{row.label}</td>
            <td class="mono wrap">{row.before}</td>
            <td class="mono wrap">{row.after}</td>
          </tr>
        ))}
      </tbody>
    </table>
  </section>
);

export interface PolicyFormProps {
  readonly writer: Writer;
  readonly owner: 'key' | 'tenant';
  /** Create or edit, and of what (the page's heading says it). */
  readonly title: string;
  readonly action: string;
  readonly back: string;
  readonly name: string;
  /** Keys only: the tenant's name. */
  readonly tenant?: string | undefined;
  readonly fields: PolicyFields;
  readonly error?: string | undefined;
  readonly change?: ChangeView | undefined;
  readonly submit: string;
}

/** A key's or tenant's form: name (and tenant), the policy, Preview and Save. */
export const PolicyFormPage: FC<PolicyFormProps> = (props) => (
  <Layout title={props.title} section="keys" signedIn={true}>
    <p class="subtitle">
      <a href={props.back}>Back</a>
    </p>
    <h1>{props.title}</h1>
    {props.error === undefined ? null : (
      <p class="notice" role="alert" data-form-error="">
        {props.error}
      </p>
    )}
    {props.change === undefined ? null : <ChangePanel change={props.change} title="What this change means (not saved yet)" />}
    <form method="post" action={props.action} class="panel edit">
      <CsrfField writer={props.writer} />
      <div class="row">
        <Field label="Name" hint={props.owner === 'key' ? 'unique among live keys' : 'unique'}>
          <input name="name" value={props.name} required />
        </Field>
        {props.owner === 'key' ? (
          <Field label="Tenant" hint="created if new; empty: no tenant">
            <input name="tenant" value={props.tenant ?? ''} />
          </Field>
        ) : null}
      </div>
      <PolicyFieldset fields={props.fields} owner={props.owner} />
      <div class="buttons">
        <button type="submit" name="intent" value="preview">
          Preview
        </button>
        <button class="primary" type="submit" name="intent" value="save">
          {props.submit}
        </button>
      </div>
    </form>
  </Layout>
);

/** A key's new secret, shown this once, with a copy button (the browser script copies it). */
export const SecretPage: FC<{ verb: 'Created' | 'Rotated'; name: string; keyId: string; secret: string; sentences: readonly string[] }> = ({
  verb,
  name,
  keyId,
  secret,
  sentences,
}) => (
  <Layout title={`${verb} ${name}`} section="keys" signedIn={true}>
    <h1>
      {verb} key {name}
    </h1>
    <section class="panel">
      <p class="notice info">Copy the key now: it is shown only this once. Tollgate keeps only its hash.</p>
      <div class="secret-row">
        <code id="new-secret" class="secret" data-secret="">
          {secret}
        </code>
        <button type="button" data-copy="new-secret">
          Copy
        </button>
      </div>
      {sentences.map((sentence) => (
        <p class="sentence">{sentence}</p>
      ))}
      <p>
        <a href={`/dashboard/keys/${encodeURIComponent(keyId)}`}>Go to the key's page</a>
      </p>
    </section>
  </Layout>
);

/** A refused write (403): another site's post, a stale form, or a read-only session. */
export const RefusedPage: FC<{ message: string }> = ({ message }) => (
  <Layout title="Refused" section={undefined} signedIn={true}>
    <h1>Refused</h1>
    <p class="notice" role="alert">
      {message}
    </p>
    <p>
      <a href="/dashboard">Back to the overview</a>
    </p>
  </Layout>
);
