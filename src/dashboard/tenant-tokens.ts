/** Dashboard tokens as the login form sees them (the tokens themselves are kept by src/storage/tenant-tokens.ts). */

/** Whether a presented secret looks like a dashboard token (the login form tells it from the admin token). */
export function isDashboardTokenText(text: string): boolean {
  return /^tgd-[0-9A-Za-z]{43}$/.test(text);
}
