/**
 * The dashboard's stylesheet, served as /dashboard/assets/dashboard.css (a
 * string, so it ships in dist/ without a copy step). Pages use no inline
 * styles: the Content-Security-Policy allows only this file and uPlot's.
 */
export const DASHBOARD_CSS = `
:root {
  --bg: #f6f7f9; --panel: #fff; --text: #1d2330; --muted: #667085; --line: #e3e6ec;
  --accent: #2f6fdf; --ok: #1f9d55; --warn: #c98a00; --over: #d0342c; --pending: #6b5bd2;
  font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif;
  color: var(--text); background: var(--bg);
}
@media (prefers-color-scheme: dark) {
  :root { --bg: #12151b; --panel: #1b1f27; --text: #e6e8ee; --muted: #9aa3b5; --line: #2c313c; --accent: #6d9eff; }
}
* { box-sizing: border-box; }
body { margin: 0; }
a { color: var(--accent); text-decoration: none; }
a:hover { text-decoration: underline; }
header.top { display: flex; flex-wrap: wrap; align-items: center; gap: 8px 24px; padding: 10px 24px; background: var(--panel); border-bottom: 1px solid var(--line); }
header.top .brand { font-weight: 700; font-size: 16px; color: var(--text); }
header.top nav { display: flex; gap: 16px; }
header.top nav a[aria-current="page"] { font-weight: 600; color: var(--text); }
header.top .spacer { flex: 1; }
.live { color: var(--muted); font-size: 12px; }
.live[data-state="error"] { color: var(--over); }
main { padding: 20px 24px 40px; max-width: 1400px; margin: 0 auto; }
h1 { font-size: 20px; margin: 0 0 4px; }
h2 { font-size: 15px; margin: 0 0 10px; }
.subtitle { color: var(--muted); margin: 0 0 18px; }
.cards { display: grid; grid-template-columns: repeat(auto-fill, minmax(190px, 1fr)); gap: 12px; margin-bottom: 18px; }
.card { background: var(--panel); border: 1px solid var(--line); border-radius: 8px; padding: 12px 14px; }
.card .label { color: var(--muted); font-size: 12px; text-transform: uppercase; letter-spacing: .03em; }
.card .value { font-size: 22px; font-weight: 650; font-variant-numeric: tabular-nums; margin-top: 2px; }
.card .detail { color: var(--muted); font-size: 12px; font-variant-numeric: tabular-nums; }
/* minmax(0, …): a column is as wide as the grid gives it, never as wide as its widest table or canvas. */
.grid2 { display: grid; grid-template-columns: minmax(0, 1fr) minmax(0, 1fr); gap: 16px; margin-bottom: 16px; }
.grid2.wide-first { grid-template-columns: minmax(0, 3fr) minmax(0, 2fr); }
@media (max-width: 1100px) { .grid2, .grid2.wide-first { grid-template-columns: minmax(0, 1fr); } }
.panel { background: var(--panel); border: 1px solid var(--line); border-radius: 8px; padding: 14px 16px; margin-bottom: 16px; overflow-x: auto; }
.chart { min-height: 240px; }
.chart .uplot { font-family: inherit; }
table { border-collapse: collapse; width: 100%; }
/* Text wraps (names and mono ids anywhere) so a table fits its panel; numbers stay on one line. */
th, td { text-align: left; padding: 6px 8px; border-bottom: 1px solid var(--line); }
td.num { white-space: nowrap; }
td .nowrap, td.short, .status, .tone { white-space: nowrap; }
/* On a phone a wide table scrolls inside its panel rather than breaking ids letter by letter. */
@media (min-width: 601px) { td.mono, td a { overflow-wrap: anywhere; } }
th { color: var(--muted); font-weight: 600; font-size: 12px; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
td.wrap { white-space: normal; }
tbody tr:hover { background: rgba(127, 127, 127, .06); }
code, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: 12.5px; }
.muted { color: var(--muted); }
.empty { color: var(--muted); padding: 8px 0; }
meter { width: 110px; height: 10px; vertical-align: middle; }
td meter { width: clamp(40px, 6vw, 110px); }
.budget-cell { display: flex; align-items: center; gap: 8px; }
.budget-cell meter { flex: none; }
.status, .tone { display: inline-block; padding: 0 7px; border-radius: 9px; font-size: 12px; border: 1px solid var(--line); }
.status[data-state="active"], .tone[data-state="ok"] { color: var(--ok); }
.status[data-state="expired"], .status[data-state="suspended"], .tone[data-state="pending"] { color: var(--pending); }
.status[data-state="revoked"], .tone[data-state="error"], .tone[data-state="rejected"] { color: var(--over); }
.level[data-state="warn"] { color: var(--warn); font-weight: 600; }
.level[data-state="over"] { color: var(--over); font-weight: 600; }
.filters { display: flex; flex-wrap: wrap; gap: 10px; align-items: end; margin-bottom: 12px; }
.filters label { display: flex; flex-direction: column; font-size: 12px; color: var(--muted); gap: 2px; }
input, select, button { font: inherit; padding: 5px 8px; border: 1px solid var(--line); border-radius: 6px; background: var(--panel); color: var(--text); }
button { cursor: pointer; }
button.primary { background: var(--accent); border-color: var(--accent); color: #fff; }
button.link { border: none; background: none; color: var(--accent); padding: 0; }
.pager { display: flex; gap: 12px; align-items: center; margin-top: 10px; }
.pager .disabled { color: var(--muted); }
th a { color: inherit; }
th a[data-active="true"] { color: var(--text); }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 4px 16px; margin: 0; }
dl.facts dt { color: var(--muted); }
dl.facts dd { margin: 0; }
.login { max-width: 380px; margin: 12vh auto; background: var(--panel); border: 1px solid var(--line); border-radius: 10px; padding: 24px; }
.login form { display: flex; flex-direction: column; gap: 12px; }
.login input { width: 100%; }
.notice { padding: 10px 12px; border-radius: 6px; background: rgba(208, 52, 44, .1); color: var(--over); }
@media (max-width: 600px) {
  header.top { padding: 8px 12px; gap: 6px 14px; }
  header.top nav { gap: 12px; }
  main { padding: 14px 12px 32px; }
  .panel { padding: 12px; }
  /* Two cards a row rather than one a screen. */
  .cards { grid-template-columns: repeat(2, minmax(0, 1fr)); gap: 8px; }
  .card .value { font-size: 18px; overflow-wrap: anywhere; }
}
.notice.info { background: rgba(47, 111, 223, .1); color: var(--accent); }
.notice p { margin: 0; }
.notice p + p { margin-top: 4px; }
.toolbar { display: flex; flex-wrap: wrap; gap: 8px; align-items: center; margin: 8px 0 16px; }
form.inline { display: inline; margin: 0; }
a.button { display: inline-block; padding: 5px 10px; border: 1px solid var(--line); border-radius: 6px; background: var(--panel); }
a.button:hover { text-decoration: none; border-color: var(--accent); }
a.button.primary { background: var(--accent); border-color: var(--accent); color: #fff; }
button.danger { border-color: var(--over); color: var(--over); }
form.edit fieldset { border: 1px solid var(--line); border-radius: 8px; margin: 12px 0; padding: 8px 12px 12px; }
form.edit legend { color: var(--muted); font-size: 12px; padding: 0 4px; }
form.edit .row { display: flex; flex-wrap: wrap; gap: 12px; }
form.edit .field { display: flex; flex-direction: column; gap: 2px; margin: 6px 0; flex: 1 1 200px; }
form.edit .field-label { font-weight: 600; font-size: 13px; }
form.edit .hint { font-size: 12px; }
form.edit .buttons { display: flex; gap: 8px; margin-top: 12px; }
textarea { font: 12.5px/1.4 ui-monospace, SFMono-Regular, Menlo, monospace; padding: 5px 8px; border: 1px solid var(--line); border-radius: 6px; background: var(--panel); color: var(--text); width: 100%; }
.secret-row { display: flex; flex-wrap: wrap; gap: 8px; align-items: center; margin: 12px 0; }
code.secret { padding: 6px 10px; border: 1px dashed var(--accent); border-radius: 6px; overflow-wrap: anywhere; user-select: all; }
.sentence { font-weight: 600; }
.change tr[data-changed="true"] td { background: rgba(201, 138, 0, .08); }
`;
