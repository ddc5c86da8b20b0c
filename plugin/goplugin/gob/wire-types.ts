// The decoder's view of gob types: the predefined ids and the wire type definitions received on a stream.
// Definitions may name ids that arrive later, so they are stored as received and linked to each other
// ("resolved") only when a value of that type is first decoded, like Go's decoder compiles its engines.

import { GobError, type GobOpaque } from './types.ts';

/** Type kinds; the values of the basic kinds equal their predefined gob type ids. */
export const Kind = {
  bool: 1,
  int: 2,
  uint: 3,
  float: 4,
  bytes: 5,
  string: 6,
  complex: 7,
  interface: 8,
  array: 9,
  slice: 10,
  struct: 11,
  map: 12,
  opaque: 13,
} as const;
export type KindCode = (typeof Kind)[keyof typeof Kind];

/** Lowest type id a stream may define (Go's firstUserId). */
export const firstUserId = 64;

export interface BasicNode {
  readonly kind: KindCode;
  readonly name: string;
}

export interface ResolvedField {
  readonly name: string;
  /** Go's decoder only fills exported fields (first rune upper case); others are decoded and dropped. */
  readonly exported: boolean;
  /** Exported and not ignored by the decoder's owner: only such fields are built (see TypeTable.ignores). */
  readonly kept: boolean;
  readonly type: TypeNode;
}

/** One received wireType. Exactly one of its kinds must be set for it to be usable. */
export class WireDef {
  readonly id: number;
  array: { name: string; elem: number; len: number } | undefined;
  slice: { name: string; elem: number } | undefined;
  struct: { name: string; fields: { name: string; id: number }[] } | undefined;
  map: { name: string; key: number; elem: number } | undefined;
  opaque: { name: string; kind: GobOpaque['kind'] } | undefined;
  /** How many of the wireType's fields were present; anything but 1 is unusable. */
  kindsSet = 0;

  // Filled by resolve().
  kind: KindCode = Kind.struct;
  name = '';
  resolved = false;
  elem: TypeNode | undefined;
  key: TypeNode | undefined;
  len = 0;
  fields: ResolvedField[] = [];
  opaqueKind: GobOpaque['kind'] = 'GobEncoder';

  constructor(id: number) {
    this.id = id;
  }
}

export type TypeNode = BasicNode | WireDef;

const basicNames = ['', 'bool', 'int', 'uint', 'float', 'bytes', 'string', 'complex', 'interface'] as const;

/** Nodes of the predefined ids 1..8, indexed by id. */
export const basicNodes: readonly (BasicNode | undefined)[] = basicNames.map((name, id) =>
  id === 0 ? undefined : { kind: id as KindCode, name },
);

/** Go's isExported: the first rune is an upper-case letter. */
const exportedName = /^\p{Lu}/u;

export interface TypeTable {
  lookup(id: number): WireDef | undefined;
  /** A field no reader of this stream uses: it is walked (and checked) like any other, but never built. */
  ignores(structName: string, fieldName: string): boolean;
}

/**
 * Links `root` and every definition reachable from it (stopping at interfaces) to their element and field
 * types. Like Go's engine compilation, an undefined id anywhere in that graph is an error even if no value
 * uses it. Iterative, so a long chain of types cannot exhaust the stack.
 */
export function resolve(root: WireDef, table: TypeTable): void {
  const pending: WireDef[] = [root];
  const node = (id: number, user: WireDef): TypeNode => {
    const basic = id > 0 && id < basicNodes.length ? basicNodes[id] : undefined;
    if (basic !== undefined) return basic;
    const def = id >= firstUserId ? table.lookup(id) : undefined;
    if (def === undefined) throw new GobError('corrupt', `type ${user.id} refers to undefined type id ${id}`);
    if (!def.resolved) pending.push(def);
    return def;
  };
  for (let def = pending.pop(); def !== undefined; def = pending.pop()) {
    if (def.resolved) continue;
    if (def.kindsSet !== 1) {
      throw new GobError(
        'corrupt',
        `wire type ${def.id} defines ${def.kindsSet === 0 ? 'no' : 'several'} kinds`,
      );
    }
    def.resolved = true; // before linking children, so recursive types terminate
    if (def.array) {
      def.kind = Kind.array;
      def.name = def.array.name;
      def.len = def.array.len;
      def.elem = node(def.array.elem, def);
    } else if (def.slice) {
      def.kind = Kind.slice;
      def.name = def.slice.name;
      def.elem = node(def.slice.elem, def);
    } else if (def.map) {
      def.kind = Kind.map;
      def.name = def.map.name;
      def.key = node(def.map.key, def);
      def.elem = node(def.map.elem, def);
    } else if (def.struct) {
      def.kind = Kind.struct;
      def.name = def.struct.name;
      def.fields = def.struct.fields.map((f) => {
        if (f.name === '') {
          throw new GobError('corrupt', `empty name for a field of type ${def.id} (${def.name})`);
        }
        const exported = exportedName.test(f.name);
        const kept = exported && !table.ignores(def.name, f.name);
        return { name: f.name, exported, kept, type: node(f.id, def) };
      });
    } else if (def.opaque) {
      def.kind = Kind.opaque;
      def.name = def.opaque.name;
      def.opaqueKind = def.opaque.kind;
    }
  }
}
