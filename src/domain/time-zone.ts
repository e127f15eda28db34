/** Time zones by IANA name (`UTC`, `Asia/Manila`), as the runtime's Intl knows them. */

/** A time zone name this runtime knows. */
export function isKnownTimeZone(timeZone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone });
    return true;
  } catch {
    return false;
  }
}
