/**
 * The config file's YAML, read so that nothing of its text reaches a message or stderr. The yaml library's own
 * errors and warnings quote the line they are about, and that line can hold a secret: an inline api.apiKey that
 * starts with `*` reads as an alias and names it, one that starts with `!` as an unknown tag, printed by the library
 * as a process warning and then read as empty. Here the library prints nothing, its warnings count as errors, and
 * a problem is said by line, column and the option it lies in, in words of our own.
 */
import { isMap, isScalar, isSeq, LineCounter, parseDocument, visit, type ErrorCode, type Document } from 'yaml';
import { ConfigError } from '../domain/errors.js';
import { knownPath, type JsonSchemaNode } from './strict.js';

/** The fix for most of them: a secret or a path whose first character YAML gives a meaning to breaks the file. */
const QUOTE_IT = 'put the value in quotes';

/** What each problem means for someone editing the file; a code not listed here is named as YAML names it. */
const WORDS: Partial<Record<ErrorCode, string>> = {
  TAG_RESOLVE_FAILED: `a value starts with "!", which YAML takes for a type tag it does not know; ${QUOTE_IT}`,
  BAD_ALIAS: `a value starts with "*", which YAML takes for a reference to an anchor (&name); ${QUOTE_IT}`,
  BAD_SCALAR_START: `a value starts with a character YAML reserves (@, \` or %); ${QUOTE_IT}`,
  TAB_AS_INDENT: 'a tab indents the line; indent with spaces',
  BAD_INDENT: 'the line is not indented like the lines around it, or a bracket opened before it is not closed',
  DUPLICATE_KEY: 'an option is written twice in the same section; keep one',
  MISSING_CHAR: 'a closing quote or bracket, or the ":" after a key, is missing',
  BAD_DQ_ESCAPE: 'a backslash in a double-quoted value starts no escape YAML knows; double it, or use single quotes',
  MULTIPLE_DOCS: 'the file holds more than one YAML document (a "---" line after the options); keep one',
};

const UNRESOLVED_ALIAS = `a value starts with "*", which YAML takes for a reference to an anchor (&name) set before it, and none is; ${QUOTE_IT}`;

function wordsFor(code: ErrorCode): string {
  return `${WORDS[code] ?? `YAML cannot read it here; if a value there starts with one of ! * & | > [ { or holds ": " or " #", ${QUOTE_IT}`} (YAML ${code})`;
}

/** The keys leading to `offset`, from the document's root (list positions as digits). */
function keysAt(node: unknown, offset: number, path: string[] = []): string[] {
  if (isMap(node)) {
    for (const pair of node.items) {
      const key = pair.key;
      if (!isScalar(key) || key.range === undefined || key.range === null) continue;
      const value = pair.value as { range?: [number, number, number] | null } | null;
      const end = value?.range?.[2] ?? key.range[2];
      if (offset >= key.range[0] && offset <= end) return keysAt(pair.value, offset, [...path, String(key.value)]);
    }
  } else if (isSeq(node)) {
    for (const [i, item] of node.items.entries()) {
      const range = (item as { range?: [number, number, number] | null } | null)?.range;
      if (range && offset >= range[0] && offset <= range[2]) return keysAt(item, offset, [...path, String(i)]);
    }
  }
  return path;
}

/** Where a problem lies: line, column and, when the keys up to it are options, the option. */
function placeOf(doc: Document.Parsed, lines: LineCounter, offset: number, schema: JsonSchemaNode): string {
  const { line, col } = lines.linePos(offset);
  const option = knownPath(keysAt(doc.contents, offset), schema).join('.');
  return `line ${line}, column ${col}${option === '' ? '' : ` (${option})`}`;
}

/** The first alias that names no anchor set before it, by its offset (the library's error for it quotes its name). */
function unresolvedAlias(doc: Document.Parsed): number | null {
  let at: number | null = null;
  visit(doc, {
    Alias(_key, node) {
      if (node.resolve(doc) !== undefined) return undefined;
      at = node.range?.[0] ?? 0;
      return visit.BREAK;
    },
  });
  return at;
}

/**
 * The options `text` (the file `file`) holds, as plain values; CONFIG_SYNTAX for any YAML error or warning, said by
 * place, never with the file's text. `schema` decides how much of a key path is shown.
 */
export function parseConfigYaml(text: string, file: string, schema: JsonSchemaNode): unknown {
  const lines = new LineCounter();
  const doc = parseDocument(text, { logLevel: 'silent', prettyErrors: false, lineCounter: lines });
  const problems = [...doc.errors, ...doc.warnings].sort((a, b) => a.pos[0] - b.pos[0]);
  const refuse = (place: string, words: string): never => {
    throw new ConfigError('CONFIG_SYNTAX', `config file ${file} is not valid YAML at ${place}: ${words}`);
  };
  const first = problems[0];
  if (first !== undefined) refuse(placeOf(doc, lines, first.pos[0], schema), wordsFor(first.code));
  const alias = unresolvedAlias(doc);
  if (alias !== null) refuse(placeOf(doc, lines, alias, schema), UNRESOLVED_ALIAS);
  try {
    return doc.toJS();
  } catch {
    // Left after the checks above: aliases that expand past the library's limit. Its message may quote an alias.
    throw new ConfigError(
      'CONFIG_SYNTAX',
      `config file ${file} is not valid YAML: its aliases (*name) expand too far; write the options out`,
    );
  }
}
