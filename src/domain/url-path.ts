/** URL paths as options name them (`/payoutd/webhook`). */

/** A path starting with "/", printable ASCII, with no query or fragment. */
export function isUrlPath(value: string): boolean {
  return /^\/[\x21-\x7e]*$/.test(value) && !/[?#]/.test(value);
}
