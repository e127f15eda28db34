/** URL paths as options name them (`/payoutd/webhook`), and URLs as payoutd shows them. */

/** A path starting with "/", printable ASCII, with no query or fragment. */
export function isUrlPath(value: string): boolean {
  return /^\/[\x21-\x7e]*$/.test(value) && !/[?#]/.test(value);
}

/**
 * A configured URL as logs and messages show it: protocol, host and path only, since its user, password or
 * query may be credentials (`http://user:secret@host/`). Not a URL: the option's name, never its text.
 */
export function shownUrl(url: string, option: string): string {
  try {
    const u = new URL(url);
    // A bare "/" is what URL makes of no path: shown as the operator wrote it.
    return `${u.protocol}//${u.host}${u.pathname === '/' ? '' : u.pathname}`;
  } catch {
    return `(${option})`;
  }
}
