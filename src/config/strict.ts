/**
 * Strictness of the configuration: every key written must be an option. The input is walked beside the schema's
 * JSON Schema (zod's `toJSONSchema`), so no list is kept; an unknown key is named with the nearest valid key.
 */

/** The parts of a JSON Schema (draft 2020-12) the walk reads. */
export interface JsonSchemaNode {
  type?: string | string[];
  properties?: Record<string, JsonSchemaNode>;
  /** false or absent: closed (zod strips or refuses other keys); a schema: a record's values; {} or true: open. */
  additionalProperties?: boolean | JsonSchemaNode;
  items?: JsonSchemaNode;
  anyOf?: JsonSchemaNode[];
  oneOf?: JsonSchemaNode[];
  allOf?: JsonSchemaNode[];
}

/** Options that were taken out: refused like any unknown key, with what replaced them. */
export const REMOVED_OPTIONS: Readonly<Record<string, string>> = {
  'batch.read': 'removed option: a batch file is now read once, whole, on one reader thread, and there is nothing to tune; delete it',
};

/** One key of the input that is not an option. */
export interface UnknownOption {
  /** Dotted path of the key (`submit.concurency`). */
  path: string;
  /** What to say about it, after the path. */
  message: string;
}

/** A YAML mapping (a plain object), as opposed to a list or a scalar. */
export function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * Edit distance with adjacent transpositions (optimal string alignment), case-insensitive: `levle` is one
 * edit from `level`, `concurency` one from `concurrency`.
 */
export function editDistance(a: string, b: string): number {
  const s = a.toLowerCase();
  const t = b.toLowerCase();
  const d: number[][] = Array.from({ length: s.length + 1 }, (_, i) =>
    Array.from({ length: t.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  );
  const at = (i: number, j: number): number => d[i]?.[j] ?? Infinity;
  for (let i = 1; i <= s.length; i++) {
    for (let j = 1; j <= t.length; j++) {
      const cost = s[i - 1] === t[j - 1] ? 0 : 1;
      let best = Math.min(at(i - 1, j) + 1, at(i, j - 1) + 1, at(i - 1, j - 1) + cost);
      if (i > 1 && j > 1 && s[i - 1] === t[j - 2] && s[i - 2] === t[j - 1]) best = Math.min(best, at(i - 2, j - 2) + 1);
      (d[i] as number[])[j] = best;
    }
  }
  return at(s.length, t.length);
}

/** The valid key nearest to `key`, when it is near enough to be a slip of the keyboard (a third of its length, at least one edit). */
export function nearestKey(key: string, valid: readonly string[]): string | null {
  const limit = Math.max(1, Math.floor(key.length / 3));
  let best: { key: string; distance: number } | null = null;
  for (const candidate of [...valid].sort()) {
    const distance = editDistance(key, candidate);
    if (distance <= limit && (best === null || distance < best.distance)) best = { key: candidate, distance };
  }
  return best?.key ?? null;
}

/** The object shapes a schema node allows (a union's alternatives, an intersection's parts). */
function objectShapes(node: JsonSchemaNode): JsonSchemaNode[] {
  const alternatives = node.anyOf ?? node.oneOf;
  if (alternatives) return alternatives.flatMap(objectShapes);
  if (node.allOf) {
    // An intersection: the keys of every part are valid.
    const parts = node.allOf.flatMap(objectShapes);
    if (parts.length === 0) return [];
    return [{ properties: Object.assign({}, ...parts.map((p) => p.properties ?? {})) as Record<string, JsonSchemaNode> }];
  }
  const isObject = node.type === 'object' || node.properties !== undefined || node.additionalProperties !== undefined;
  return isObject ? [node] : [];
}

function arrayItems(node: JsonSchemaNode): JsonSchemaNode[] {
  const alternatives = node.anyOf ?? node.oneOf;
  if (alternatives) return alternatives.flatMap(arrayItems);
  return node.items ? [node.items] : [];
}

function isOpen(ap: JsonSchemaNode['additionalProperties']): boolean {
  return ap === true || (isPlainObject(ap) && Object.keys(ap).length === 0);
}

function walk(value: unknown, node: JsonSchemaNode, path: string[], out: UnknownOption[]): void {
  if (Array.isArray(value)) {
    const items = arrayItems(node);
    if (items.length === 0) return;
    value.forEach((v, i) => walkAlternatives(v, items, [...path, String(i)], out));
    return;
  }
  if (!isPlainObject(value)) return;
  const shapes = objectShapes(node);
  if (shapes.length !== 1) {
    walkAlternatives(value, shapes, path, out);
    return;
  }
  const shape = shapes[0] as JsonSchemaNode;
  const properties = shape.properties ?? {};
  const extra = shape.additionalProperties;
  for (const [key, v] of Object.entries(value)) {
    const here = [...path, key];
    const known = properties[key];
    if (known) walk(v, known, here, out);
    else if (isPlainObject(extra) && !isOpen(extra)) walk(v, extra, here, out);
    else if (!isOpen(extra)) out.push(unknownAt(here, Object.keys(properties)));
  }
}

/** A value several shapes could take: judged by the one it fits best (none reported when one fits). */
function walkAlternatives(value: unknown, shapes: JsonSchemaNode[], path: string[], out: UnknownOption[]): void {
  if (shapes.length === 0) return;
  let best: UnknownOption[] | null = null;
  for (const shape of shapes) {
    const found: UnknownOption[] = [];
    walk(value, shape, path, found);
    if (best === null || found.length < best.length) best = found;
    if (found.length === 0) return;
  }
  out.push(...(best ?? []));
}

function unknownAt(path: string[], valid: string[]): UnknownOption {
  const dotted = path.join('.');
  const removed = REMOVED_OPTIONS[dotted];
  if (removed !== undefined) return { path: dotted, message: removed };
  const key = path[path.length - 1] as string;
  const near = nearestKey(key, valid);
  const parent = path.slice(0, -1);
  if (near !== null) return { path: dotted, message: `unknown option; did you mean ${[...parent, near].join('.')}?` };
  const where = parent.length === 0 ? 'top-level options' : `options of ${parent.join('.')}`;
  return { path: dotted, message: `unknown option (${where}: ${[...valid].sort().join(', ')})` };
}

/** Every key of `input` that the schema does not know, in the order written. */
export function unknownOptions(input: unknown, schema: JsonSchemaNode): UnknownOption[] {
  const out: UnknownOption[] = [];
  walk(input, schema, [], out);
  return out;
}

/**
 * The leading part of `path` (keys, and list positions as digits) that names options the schema knows: what may be
 * shown of a path read from a broken file, where a key past the options can be a value YAML misread (the text of
 * `apiKey: ab:cd: x` reads as a mapping with the key `ab:cd`). A mapping of free keys ends it too.
 */
export function knownPath(path: readonly string[], schema: JsonSchemaNode): string[] {
  let nodes = [schema];
  const known: string[] = [];
  for (const segment of path) {
    const next = nodes.flatMap((n) =>
      /^\d+$/.test(segment) ? arrayItems(n) : objectShapes(n).flatMap((s) => (s.properties?.[segment] ? [s.properties[segment]] : [])),
    );
    if (next.length === 0) break;
    known.push(segment);
    nodes = next;
  }
  return known;
}
