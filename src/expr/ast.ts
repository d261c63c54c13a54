// The syntax tree the parser produces and the compiler consumes. Every node records its source
// offset (for error messages) and its height (so chains of operators can be bounded without
// recursing over the tree first).

export type Literal = number | string | boolean | null;
export type UnaryOp = '-' | '+' | 'not';
export type ArithOp = '+' | '-' | '*' | '/' | '//' | '%' | '**';
export type CompareOp = '==' | '!=' | '<' | '<=' | '>' | '>=' | 'in' | 'not in' | 'is' | 'is not';

interface Base {
  readonly pos: number;
  readonly height: number;
}

export type Node =
  | (Base & { readonly kind: 'literal'; readonly value: Literal })
  | (Base & { readonly kind: 'list'; readonly items: readonly Node[] })
  /** A top-level field of the scope. */
  | (Base & { readonly kind: 'name'; readonly name: string })
  /** `$`: the scope itself; only ever followed by `.name` or `[key]` (checked by the parser). */
  | (Base & { readonly kind: 'root' })
  /** `object.key` */
  | (Base & { readonly kind: 'member'; readonly object: Node; readonly key: string })
  /** `object[index]` */
  | (Base & { readonly kind: 'index'; readonly object: Node; readonly index: Node })
  | (Base & { readonly kind: 'call'; readonly name: string; readonly args: readonly Node[] })
  | (Base & { readonly kind: 'unary'; readonly op: UnaryOp; readonly operand: Node })
  | (Base & { readonly kind: 'arith'; readonly op: ArithOp; readonly left: Node; readonly right: Node })
  /** `a and b and c` is one node: flat chains keep long conditions shallow. */
  | (Base & { readonly kind: 'logical'; readonly op: 'and' | 'or'; readonly operands: readonly Node[] })
  /** `a < b <= c`: operands.length === ops.length + 1; `sites[i]` is where ops[i] is written. */
  | (Base & { readonly kind: 'compare'; readonly operands: readonly Node[]; readonly ops: readonly CompareOp[]; readonly sites: readonly number[] })
  /** `then if test else otherwise` */
  | (Base & { readonly kind: 'conditional'; readonly test: Node; readonly then: Node; readonly otherwise: Node });

export type NodeOf<K extends Node['kind']> = Extract<Node, { kind: K }>;
