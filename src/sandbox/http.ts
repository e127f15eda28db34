/** HTTP plumbing of the sandbox: a bounded body, parsed once with its minified form, and envelopes. */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { minifyParsed, parseLossless, type CanonicalOptions } from '../json/canonical.js';

/** Bodies above this answer 413. */
export const MAX_BODY_BYTES = 1024 * 1024;

/** The parsed body of a request whose text is not JSON. */
export const NOT_JSON: unique symbol = Symbol('not JSON');

/** Reads the whole body as UTF-8; null when it exceeds MAX_BODY_BYTES. */
export function readBody(req: IncomingMessage): Promise<string | null> {
  const declared = req.headers['content-length'];
  if (declared !== undefined && /^\d+$/.test(declared) && Number(declared) > MAX_BODY_BYTES) return Promise.resolve(null);
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    const finish = (value: string | null): void => {
      if (done) return;
      done = true;
      resolve(value);
    };
    req.on('data', (chunk: Buffer) => {
      if (done) return;
      size += chunk.length;
      if (size > MAX_BODY_BYTES) finish(null);
      else chunks.push(chunk);
    });
    req.on('end', () =>
      finish(chunks.length === 1 ? (chunks[0] as Buffer).toString('utf8') : Buffer.concat(chunks, size).toString('utf8')),
    );
    req.on('error', (err) => {
      if (done) return;
      done = true;
      reject(err);
    });
    req.on('close', () => {
      // A client that goes away mid-body: nothing to answer.
      if (!done) {
        done = true;
        reject(new Error('request closed before its body was read'));
      }
    });
  });
}

export interface ParsedBody {
  /** undefined for an empty body, NOT_JSON when unparsable, else the lossless value. */
  body: unknown;
  /** Spec 5.3 minified text, as minifyBodyText computes it. */
  minified: string;
}

/** Same result as minifyBodyText, but the parse is shared with the handler. */
export function parseBody(raw: string, canonical: CanonicalOptions): ParsedBody {
  if (raw === '') return { body: undefined, minified: '' };
  let body: unknown;
  try {
    body = parseLossless(raw);
  } catch {
    // Spec 5.3: unparsable text signs as its trimmed self.
    return { body: NOT_JSON, minified: raw.trim() };
  }
  try {
    return { body, minified: minifyParsed(body, raw, canonical) };
  } catch {
    // Numbers minifyParsed will not write out in full: no client can have signed it.
    return { body: NOT_JSON, minified: raw.trim() };
  }
}

export interface Envelope {
  code: string;
  msg: string;
  data: unknown;
}

export function writeJson(res: ServerResponse, status: number, text: string, headers: Record<string, string> = {}): void {
  if (res.headersSent || res.destroyed) return;
  res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text), ...headers });
  res.end(text);
}
