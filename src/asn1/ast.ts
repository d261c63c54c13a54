// The parsed form of ASN.1 module text, before references and tags are resolved.

/** A value in module text: numbers, booleans, strings, references, `{ ... }` lists (OIDs, named bits). */
export type ValueAst =
  | { v: 'number'; n: bigint }
  | { v: 'real'; n: number }
  | { v: 'bool'; b: boolean }
  | { v: 'null' }
  | { v: 'cstring'; s: string }
  | { v: 'hstring'; s: string }
  | { v: 'bstring'; s: string }
  | { v: 'ref'; name: string; module?: string }
  | { v: 'list'; items: ValueAst[]; named: (string | undefined)[] };

/** A bound of a range: a value, or MIN / MAX (open). */
export type Bound = ValueAst | 'MIN' | 'MAX';

export interface RangeAst {
  lo: Bound;
  hi: Bound;
}

/** The PER-visible part of a constraint; everything else is parsed and ignored. */
export interface ConstraintAst {
  value?: RangeAst[];
  size?: ConstraintAst;
  /** FROM("abc" | "0".."9"): the permitted alphabet of a character string. */
  from?: RangeAst[];
  ext: boolean;
}

export interface TagAst {
  /** 0 universal, 1 application, 2 context, 3 private. */
  cls: number;
  num: ValueAst;
  mode?: 'IMPLICIT' | 'EXPLICIT';
}

export interface ComponentAst {
  name: string;
  type: TypeAst;
  optional: boolean;
  default?: ValueAst;
  /** Index of the extension addition (group), undefined in the root. */
  extGroup?: number;
  /** The addition sits in a `[[ ]]` group (PER encodes the group as one SEQUENCE). */
  extBracket?: boolean;
  /** `COMPONENTS OF T`: inlined at compile time. */
  componentsOf?: boolean;
}

export interface NamedNumber {
  name: string;
  value: ValueAst;
}

export type TypeAst = (
  | { t: 'builtin'; name: string; named?: NamedNumber[] }
  | { t: 'enum'; root: { name: string; value?: ValueAst }[]; ext?: { name: string; value?: ValueAst }[] }
  | { t: 'sequence' | 'set'; comps: ComponentAst[]; ext: boolean }
  | { t: 'choice'; alts: ComponentAst[]; ext: boolean }
  | { t: 'sequenceOf' | 'setOf'; elem: TypeAst }
  | { t: 'ref'; name: string; module?: string }
  | { t: 'tagged'; tag: TagAst; inner: TypeAst }
  | { t: 'any' }
) & { constraint?: ConstraintAst; line: number };

export interface TypeAssignment {
  name: string;
  type: TypeAst;
  line: number;
}

export interface ValueAssignment {
  name: string;
  type: TypeAst;
  value: ValueAst;
  line: number;
}

export interface ModuleAst {
  name: string;
  file: string;
  line: number;
  tagging: 'EXPLICIT' | 'IMPLICIT' | 'AUTOMATIC';
  extensibilityImplied: boolean;
  imports: { names: string[]; from: string; line: number }[];
  types: Map<string, TypeAssignment>;
  values: Map<string, ValueAssignment>;
  /** Names of skipped assignments (information object classes, parameterized types). */
  skipped: Set<string>;
}
