/** HTTP plumbing of the receiver: the request path, a bounded raw body, short JSON answers that echo nothing. */
import type { IncomingMessage, ServerResponse } from 'node:http';

/** What readBody resolves to when the body exceeds the limit. */
export const TOO_LARGE: unique symbol = Symbol('body too large');

/** The raw path of the request target, without the query (absolute-form accepted); null for anything else. */
export function requestPath(url: string | undefined): string | null {
  if (url === undefined || url === '') return null;
  if (url.startsWith('/')) {
    const end = url.search(/[?#]/);
    return end === -1 ? url : url.slice(0, end);
  }
  try {
    return new URL(url).pathname;
  } catch {
    // Neither origin-form nor absolute-form: no path to match.
    return null;
  }
}

/** The whole body as bytes, or TOO_LARGE once it passes `limit` (the rest is drained, never buffered). */
export function readBody(req: IncomingMessage, limit: number): Promise<Buffer | typeof TOO_LARGE> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    const settle = (fn: () => void): void => {
      if (!settled) {
        settled = true;
        fn();
      }
    };
    const declared = req.headers['content-length'];
    if (declared !== undefined && /^\d+$/.test(declared) && (declared.length > 15 || Number(declared) > limit)) {
      settle(() => resolve(TOO_LARGE));
    }
    req.on('data', (chunk: Buffer) => {
      if (settled) return;
      size += chunk.length;
      if (size > limit) {
        chunks.length = 0;
        settle(() => resolve(TOO_LARGE));
      } else {
        chunks.push(chunk);
      }
    });
    req.on('end', () => settle(() => resolve(Buffer.concat(chunks, size))));
    req.on('error', (err) => settle(() => reject(err)));
    req.on('close', () => settle(() => reject(new Error('request closed before its body was read'))));
  });
}

/** Writes a small JSON answer unless one was written or the socket is gone. */
export function answer(res: ServerResponse, status: number, body: Record<string, unknown>, headers: Record<string, string> = {}): void {
  if (res.headersSent || res.destroyed) return;
  const text = JSON.stringify(body);
  res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': String(Buffer.byteLength(text)), ...headers });
  res.end(text);
}
