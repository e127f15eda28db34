/** The batch file format as configuration: the zod schema the daemon config embeds, every setting defaulted. */
import { z } from 'zod';
import { FIELD_PATHS } from '../rules/fields.js';
import { trimSpaces } from '../rules/text.js';

/**
 * The line ends a CSV is read with, as csv-parse's `record_delimiter`: LF, CRLF or a lone CR, mixed freely
 * (docs/csv-format.md). Left unset, csv-parse takes the first line's end for every line.
 */
export const RECORD_DELIMITERS: string[] = ['\r\n', '\n', '\r'];

export const batchFormatSchema = z
  .strictObject({
    /**
     * Text encoding of CSV files: 'utf-8' (strict: a byte that is not UTF-8 rejects the file), 'auto' (UTF-8,
     * UTF-16 with a byte order mark, else Windows-1252 when the bytes cannot be UTF-8; the ack says which), or
     * a named WHATWG encoding ('windows-1252', 'iso-8859-1', 'utf-16le', ...).
     */
    encoding: z
      .string()
      .default('utf-8')
      .refine((name) => name === 'auto' || textEncodingKnown(name), {
        message: "not a known text encoding: use 'utf-8', 'auto', or a WHATWG encoding name such as 'windows-1252'",
      }),
    /** Sheet of an .xlsx batch to read; null: the workbook must have one sheet. */
    sheet: z.string().min(1).nullable().default(null),
    /** Field delimiter; 'auto' decides between ',', ';' and a tab from the header line. */
    delimiter: z.enum(['auto', ',', ';', '\t']).default('auto'),
    /** Header name as finance writes it -> field path; matched trimmed and case-insensitively. */
    columnAliases: z.record(z.string(), z.enum(FIELD_PATHS)).default(() => ({})),
    /** Largest record accepted (bytes of field content); larger is a file error. */
    maxRecordBytes: z
      .int()
      .min(1024)
      .max(16 * 1024 * 1024)
      .default(64 * 1024),
    /** Most data rows in one file; more is a file error. */
    maxRows: z.int().min(1).max(100_000_000).default(1_000_000),
    /** Reject files that carry no control totals (trailer or sidecar). */
    requireControlTotals: z.boolean().default(false),
    /** Row errors kept in the parse result; all are still counted (and each row carries its own). */
    maxStoredErrors: z.int().min(0).max(1_000_000).default(1000),
  })
  .superRefine((format, ctx) => {
    const seen = new Map<string, string>();
    for (const alias of Object.keys(format.columnAliases)) {
      const key = trimSpaces(alias).toLowerCase();
      if (key === '') {
        ctx.addIssue({ code: 'custom', path: ['columnAliases'], message: 'an alias must not be empty' });
        continue;
      }
      const other = seen.get(key);
      if (other !== undefined) {
        ctx.addIssue({
          code: 'custom',
          path: ['columnAliases', alias],
          message: `alias ${JSON.stringify(alias)} is the same header as ${JSON.stringify(other)} (case and spaces are ignored)`,
        });
      }
      seen.set(key, alias);
    }
  });

/** Whether the runtime can decode `name` (Node with full ICU knows every WHATWG encoding). */
function textEncodingKnown(name: string): boolean {
  try {
    new TextDecoder(name);
    return true;
  } catch {
    return false;
  }
}

export type BatchFormatOptions = z.output<typeof batchFormatSchema>;
export type BatchFormatOptionsInput = z.input<typeof batchFormatSchema>;

export const DEFAULT_BATCH_FORMAT: BatchFormatOptions = batchFormatSchema.parse({});
