// Bounds on YAML that come before what it expands to is built: how deep it nests, and how big its
// aliases would make it. Pipeline YAML comes from API callers; a 900 KB body whose `&big` anchor is
// used 90 times would expand to 84 MB (and to that again at each GET), and the yaml library's
// maxAliasCount counts aliases, not what they expand to. A document nested some thousands of
// levels deep overflows the composer's stack (a RangeError, and at 100,000 levels a V8 abort in
// a RegExp compiled near the stack's end, which no catch stops).
import { isAlias, isMap, isPair, isScalar, isSeq, LineCounter, parseDocument, Parser, type Document, type Node } from 'yaml';
import { formatPath, type Diagnostic } from './diagnostics.js';

/** Deepest nesting of collections accepted; a pipeline needs about ten. */
export const MAX_YAML_DEPTH = 100;
/** What aliases may expand a document to: this many times its text, and at least EXPANSION_FLOOR. */
export const EXPANSION_FACTOR = 10;
export const EXPANSION_FLOOR = 1 << 20;

export const expansionLimit = (textLength: number): number => Math.max(EXPANSION_FLOOR, EXPANSION_FACTOR * textLength);

export interface YamlBoundsProblem {
  message: string;
  /** YAML path of the offending node (the alias), in segments; empty for the document. */
  path: (string | number)[];
  /** Offset in the text. */
  offset?: number;
}

interface CstToken {
  type: string;
  offset: number;
  value?: CstToken;
  items?: { key?: CstToken | null; value?: CstToken | null }[];
}

/**
 * Refuses text nested more than MAX_YAML_DEPTH collections deep. Runs on the yaml library's token
 * tree (its CST parser keeps an explicit stack, so it does not overflow), walked without recursion,
 * before the document is composed (which recurses).
 */
export function depthProblem(text: string): YamlBoundsProblem | undefined {
  const stack: [CstToken, number][] = [];
  for (const top of new Parser().parse(text)) stack.push([top as unknown as CstToken, 0]);
  while (stack.length > 0) {
    const [tok, depth] = stack.pop()!;
    if (tok.type === 'document') {
      if (tok.value) stack.push([tok.value, depth]);
      continue;
    }
    if (!tok.items) continue;
    if (depth >= MAX_YAML_DEPTH) {
      return {
        message: `the YAML is nested more than ${MAX_YAML_DEPTH} levels deep; a pipeline needs far fewer (check for runaway brackets or indentation)`,
        path: [],
        offset: tok.offset,
      };
    }
    for (const it of tok.items) {
      if (it.key && typeof it.key === 'object') stack.push([it.key, depth + 1]);
      if (it.value && typeof it.value === 'object') stack.push([it.value, depth + 1]);
    }
  }
  return undefined;
}

/**
 * Refuses a document whose aliases would expand it to more than expansionLimit(text length)
 * characters, counted on the syntax tree without expanding anything: each node's expanded size is
 * worked out once (anchored nodes memoised), an alias costs what its anchor's node costs. A cyclic
 * alias (inside the node it names) is refused too: it has no finite expansion. The alias reported is
 * the one at which the expanded document, in document order, passes the limit.
 */
export function expansionProblem(doc: Document, textLength: number): YamlBoundsProblem | undefined {
  const limit = expansionLimit(textLength);
  // Anchors in document order: an alias names the last anchor of that name before it.
  const anchors = new Map<string, Node>();
  const targets = new Map<Node, Node | undefined>();
  const sizes = new Map<Node, number>();
  const open = new Set<Node>();
  let cycle: { alias: Node; path: (string | number)[] } | undefined;

  const size = (node: unknown, path: (string | number)[]): number => {
    if (isAlias(node)) {
      const target = targets.get(node);
      if (target === undefined) return 1; // unresolved: the library reports it
      if (open.has(target)) {
        cycle ??= { alias: node, path };
        return Infinity;
      }
      return size(target, path);
    }
    if (!isScalar(node) && !isMap(node) && !isSeq(node)) return 1;
    const known = sizes.get(node);
    if (known !== undefined) return known;
    let n = 1;
    if (isScalar(node)) {
      const v = node.value;
      n = Math.max(1, typeof v === 'string' ? v.length : node.range ? node.range[1] - node.range[0] : 1);
    } else {
      open.add(node);
      node.items.forEach((item, i) => {
        if (isPair(item)) {
          const key = isScalar(item.key) ? String(item.key.value) : i;
          n += size(item.key, path) + size(item.value, [...path, key]);
        } else n += size(item, [...path, i]);
      });
      open.delete(node);
    }
    sizes.set(node, n);
    return n;
  };

  // First pass, in document order: resolve aliases as the library does, without its per-alias scan.
  const order = (node: unknown): void => {
    if (isAlias(node)) {
      targets.set(node, anchors.get(node.source));
      return;
    }
    if (isScalar(node) || isMap(node) || isSeq(node)) {
      if (node.anchor) anchors.set(node.anchor, node);
      if (isMap(node) || isSeq(node)) {
        for (const item of node.items) {
          if (isPair(item)) {
            order(item.key);
            order(item.value);
          } else order(item);
        }
      }
    }
  };
  order(doc.contents);
  if (targets.size === 0) return undefined;

  const total = size(doc.contents, []);
  if (cycle) {
    const a = cycle.alias as Node & { source: string };
    return {
      message: `alias *${a.source} is inside the node it names, so it never ends; refer to an anchor outside it`,
      path: cycle.path,
      offset: a.range?.[0],
    };
  }
  if (total <= limit) return undefined;

  // Second pass: the alias at which the document, expanded in order, passes the limit.
  let sum = 0;
  let found: { alias: Node & { source: string }; path: (string | number)[] } | undefined;
  let last: typeof found;
  const locate = (node: unknown, path: (string | number)[]): void => {
    if (found) return;
    if (isAlias(node)) {
      last = { alias: node as Node & { source: string }, path };
      sum += size(node, path);
      if (sum > limit) found = last;
      return;
    }
    if (isScalar(node) || !(isMap(node) || isSeq(node))) {
      sum += size(node, path);
      if (sum > limit) found = last;
      return;
    }
    sum += 1;
    node.items.forEach((item, i) => {
      if (isPair(item)) {
        const key = isScalar(item.key) ? String(item.key.value) : i;
        locate(item.key, path);
        locate(item.value, [...path, key]);
      } else locate(item, [...path, i]);
    });
  };
  locate(doc.contents, []);
  const where = found ?? last;
  const what = where ? `alias *${where.alias.source} makes` : 'its aliases make';
  return {
    message:
      `${what} the document about ${total} characters long once expanded, more than the limit of ${limit} ` +
      `(${EXPANSION_FACTOR} times its ${textLength} characters, at least ${EXPANSION_FLOOR}); write the repeated part fewer times or use fewer aliases of big nodes`,
    path: where?.path ?? [],
    offset: where?.alias.range?.[0],
  };
}

/**
 * yaml's parse() within the bounds above, for readers that only need the value (they report an
 * error as they report bad YAML). Throws an Error naming the problem and its line.
 */
export function parseYamlBounded(text: string): unknown {
  const lc = new LineCounter();
  const problem =
    depthProblem(text) ??
    (() => {
      const doc = parseDocument(text, { lineCounter: lc });
      if (doc.errors[0]) throw doc.errors[0];
      const p = expansionProblem(doc, text.length);
      if (!p) return { doc };
      return p;
    })();
  // The count bounds the library's work (it looks each alias's anchor up by walking the document).
  if ('doc' in problem) return problem.doc.toJS({ maxAliasCount: 100 });
  throw new Error(`${problem.message}${problem.offset !== undefined ? ` (line ${lineOf(text, problem.offset)})` : ''}`);
}

/** depthProblem() as a config diagnostic (CFG_YAML_LIMIT), for the text before it is parsed. */
export function depthDiagnostic(text: string): Diagnostic | undefined {
  const p = depthProblem(text);
  return p && { code: 'CFG_YAML_LIMIT', path: '', message: p.message, severity: 'error', line: p.offset === undefined ? undefined : lineOf(text, p.offset) };
}

/** expansionProblem() as a config diagnostic (CFG_YAML_LIMIT) at the offending alias, before toJS(). */
export function expansionDiagnostic(doc: Document, text: string, lc: LineCounter): Diagnostic | undefined {
  const p = expansionProblem(doc, text.length);
  const lp = p?.offset === undefined ? undefined : lc.linePos(p.offset);
  return p && { code: 'CFG_YAML_LIMIT', path: formatPath(p.path), message: p.message, severity: 'error', line: lp?.line, column: lp?.col };
}

/** 1-based line of an offset. */
export function lineOf(text: string, offset: number): number {
  let line = 1;
  for (let i = text.indexOf('\n'); i !== -1 && i < offset; i = text.indexOf('\n', i + 1)) line++;
  return line;
}
