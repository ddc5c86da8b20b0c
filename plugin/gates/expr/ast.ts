// Syntax tree of the supported subset. `position` is the 0-based offset of the node's token.

export type BinaryOperator =
  | '||'
  | '&&'
  | '=='
  | '!='
  | '<'
  | '>'
  | '<='
  | '>='
  | 'in'
  | '+'
  | '-'
  | '*'
  | '/'
  | '%'
  | '**'
  | '??';

export type UnaryOperator = '!' | '-' | '+';

export type PredicateName = 'all' | 'any' | 'none' | 'one';

export type Node =
  | { readonly kind: 'nil'; readonly position: number }
  | { readonly kind: 'bool'; readonly value: boolean; readonly position: number }
  | { readonly kind: 'int'; readonly value: bigint; readonly position: number }
  | { readonly kind: 'float'; readonly value: number; readonly position: number }
  | { readonly kind: 'string'; readonly value: string; readonly position: number }
  | { readonly kind: 'array'; readonly items: readonly Node[]; readonly position: number }
  | { readonly kind: 'identifier'; readonly name: string; readonly position: number }
  /** `#` (or `.field` for `#.field`): the element a predicate is looking at. */
  | { readonly kind: 'pointer'; readonly name: ''; readonly position: number }
  | {
      readonly kind: 'member';
      readonly object: Node;
      readonly property: Node;
      /** `?.`: nil instead of an error when the object is nil (ends the whole chain). */
      readonly optional: boolean;
      readonly position: number;
    }
  /** The extent of an optional chain: a `?.` on nil makes the whole chain nil. */
  | { readonly kind: 'chain'; readonly node: Node; readonly position: number }
  | {
      readonly kind: 'unary';
      readonly operator: UnaryOperator;
      readonly operand: Node;
      readonly position: number;
    }
  | {
      readonly kind: 'binary';
      readonly operator: BinaryOperator;
      readonly left: Node;
      readonly right: Node;
      readonly position: number;
    }
  | {
      readonly kind: 'conditional';
      readonly test: Node;
      readonly consequent: Node;
      readonly alternate: Node;
      readonly position: number;
    }
  | {
      readonly kind: 'call';
      readonly name: string;
      readonly args: readonly Node[];
      readonly position: number;
    }
  | {
      readonly kind: 'predicate';
      readonly name: PredicateName;
      readonly collection: Node;
      readonly predicate: Node;
      readonly position: number;
    };
