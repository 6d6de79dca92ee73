/** @jsxRuntime automatic @jsxImportSource hono/jsx */
/**
 * The frame of every page (head, navigation, the polling <main>) and the
 * pages with no data: login, disabled, not found. Pages are Hono JSX, so
 * every value is escaped; nothing inline (the CSP forbids it).
 */
import type { Child, FC } from 'hono/jsx';
import type { JSX } from 'hono/jsx/jsx-runtime';
import { assetHref } from './assets.js';

/** How often pages poll their JSON, in ms. */
const POLL_MS = 2000;

/** A whole HTML document from a page element. */
export async function renderDocument(page: JSX.Element): Promise<string> {
  return `<!DOCTYPE html>${await page.toString()}`;
}

type Section = 'overview' | 'keys' | undefined;

/** The page frame; with `poll`, the script polls that JSON and rebinds `<main>`. */
export const Layout: FC<{ title: string; section: Section; poll?: string | undefined; signedIn: boolean; children?: Child }> = ({
  title,
  section,
  poll,
  signedIn,
  children,
}) => (
  <html lang="en">
    <head>
      <meta charset="utf-8" />
      <meta name="viewport" content="width=device-width, initial-scale=1" />
      <meta name="referrer" content="same-origin" />
      {/* No favicon request (it would be a 404 on every page). */}
      <link rel="icon" href="data:," />
      <title>{`${title} · Tollgate`}</title>
      <link rel="stylesheet" href={assetHref('uplot.min.css')} />
      <link rel="stylesheet" href={assetHref('dashboard.css')} />
      {poll === undefined ? null : <script src={assetHref('uplot.min.js')} defer></script>}
      <script src={assetHref('dashboard.js')} defer></script>
    </head>
    <body>
      <header class="top">
        <a class="brand" href="/dashboard">
          Tollgate
        </a>
        {signedIn ? (
          <nav>
            <a href="/dashboard" aria-current={section === 'overview' ? 'page' : undefined}>
              Overview
            </a>
            <a href="/dashboard/keys" aria-current={section === 'keys' ? 'page' : undefined}>
              Keys
            </a>
          </nav>
        ) : null}
        <span class="spacer"></span>
        {poll === undefined ? null : (
          <span class="live" data-live="" data-state="ok">
            Live
          </span>
        )}
        {signedIn ? (
          <form method="post" action="/dashboard/logout">
            <button class="link" type="submit">
              Log out
            </button>
          </form>
        ) : null}
      </header>
      {poll === undefined ? (
        <main>{children}</main>
      ) : (
        <main data-poll={poll} data-poll-ms={String(POLL_MS)}>
          {children}
        </main>
      )}
    </body>
  </html>
);

/** The login form; `next` is where to go afterwards (a /dashboard path). */
export const LoginPage: FC<{ next: string; error?: string | undefined; info?: string | undefined }> = ({ next, error, info }) => (
  <Layout title="Log in" section={undefined} signedIn={false}>
    <div class="login">
      <h1>Tollgate dashboard</h1>
      <p class="subtitle">Log in with the admin token (TOLLGATE_ADMIN_TOKEN), or with your tenant's dashboard token (tgd-…) to see its spend.</p>
      {error === undefined ? null : (
        <p class="notice" role="alert">
          {error}
        </p>
      )}
      {info === undefined ? null : <p class="notice info">{info}</p>}
      <form method="post" action="/dashboard/login">
        <input type="hidden" name="next" value={next} />
        <label>
          Admin token or tenant dashboard token
          <input type="password" name="token" autocomplete="current-password" required autofocus />
        </label>
        <button class="primary" type="submit">
          Log in
        </button>
      </form>
    </div>
  </Layout>
);

/** Shown on every page when no admin token is configured. */
export const DisabledPage: FC = () => (
  <Layout title="Dashboard disabled" section={undefined} signedIn={false}>
    <div class="login">
      <h1>The dashboard is disabled</h1>
      <p>
        It needs an admin token: set <code>TOLLGATE_ADMIN_TOKEN</code> (16 characters or more) and restart Tollgate. The same token protects the admin API.
      </p>
    </div>
  </Layout>
);

/** An unknown dashboard path or key. */
export const NotFoundPage: FC<{ message: string; signedIn: boolean }> = ({ message, signedIn }) => (
  <Layout title="Not found" section={undefined} signedIn={signedIn}>
    <h1>Not found</h1>
    <p class="subtitle">{message}</p>
    <p>
      <a href="/dashboard">Back to the overview</a>
    </p>
  </Layout>
);
