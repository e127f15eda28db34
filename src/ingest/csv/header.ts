/**
 * The header row: which column holds which field, matched trimmed and case-insensitively against the aliases,
 * then the field paths. Unknown, duplicate and missing columns are all reported at once, as file errors.
 */
import { FIELD_PATHS, isFieldPath, type FieldPath } from '../rules/fields.js';
import { quoteValue, type RowError } from '../rules/row-error.js';
import { trimSpaces } from '../rules/text.js';

export interface ResolvedHeader {
  /** Number of columns in the header. */
  width: number;
  /** Field of each column, by column index. */
  fields: FieldPath[];
  /** Column index of each field present. */
  indexOf: Partial<Record<FieldPath, number>>;
  /** Header name as written (trimmed) of each field present. */
  columns: Partial<Record<FieldPath, string>>;
}

export interface HeaderContext {
  file: string;
  line: number;
  /** alias as written -> field path (already validated as field paths). */
  aliases: Record<string, string>;
  required: ReadonlySet<FieldPath>;
}

function key(name: string): string {
  return trimSpaces(name).toLowerCase();
}

/** Lookup table: normalized name -> field. Aliases win over canonical names. */
export function headerLookup(aliases: Record<string, string>): Map<string, FieldPath> {
  const lookup = new Map<string, FieldPath>();
  for (const field of FIELD_PATHS) lookup.set(key(field), field);
  for (const [alias, field] of Object.entries(aliases)) {
    if (isFieldPath(field)) lookup.set(key(alias), field);
  }
  return lookup;
}

export function resolveHeader(cells: readonly string[], ctx: HeaderContext): { header: ResolvedHeader } | { errors: RowError[] } {
  const lookup = headerLookup(ctx.aliases);
  const errors: RowError[] = [];
  const fields: FieldPath[] = [];
  const indexOf: Partial<Record<FieldPath, number>> = {};
  const columns: Partial<Record<FieldPath, string>> = {};
  const fileError = (column: string | null, field: string | null, code: RowError['code'], message: string): void => {
    errors.push({ file: ctx.file, line: ctx.line, column, field, code, message });
  };
  cells.forEach((cell, index) => {
    const name = trimSpaces(cell);
    const field = lookup.get(name.toLowerCase());
    if (field === undefined) {
      fileError(
        name,
        null,
        'HEADER_UNKNOWN',
        name === ''
          ? `column ${index + 1} has an empty header`
          : `column ${index + 1} header ${quoteValue(name)} is not a known field or alias`,
      );
      return;
    }
    const first = indexOf[field];
    if (first !== undefined) {
      fileError(
        name,
        field,
        'HEADER_DUPLICATE',
        `column ${index + 1} header ${quoteValue(name)} maps to ${field}, already given by column ${first + 1} ${quoteValue(columns[field] ?? '')}`,
      );
      return;
    }
    fields[index] = field;
    indexOf[field] = index;
    columns[field] = name;
  });
  for (const field of FIELD_PATHS) {
    if (indexOf[field] === undefined && ctx.required.has(field)) {
      fileError(null, field, 'HEADER_MISSING', `required column ${field} is missing from the header`);
    }
  }
  return errors.length > 0 ? { errors } : { header: { width: cells.length, fields, indexOf, columns } };
}
