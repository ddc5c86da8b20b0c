// Decodes gob values into the generic value model, driven only by the wire types received on the stream.
// The control flow mirrors Go's decoder.go/decode.go (decodeTypeSequence, decodeValue, decodeStruct,
// decodeInterface and the "ignore" ops that decode without a Go destination type):
// - the current message is the decoder's buffer; an interface value may pull further messages from the
//   stream while its type definitions are read, and decoding then continues in the newest message;
// - definitions received during one top-level value are staged, and only become part of the stream's type
//   table when the whole value decoded (the caller commits or rolls back).

import { MessageCursor } from './cursor.ts';
import { GobError, GobInterface, GobOpaque, type GobStruct, type GobValue } from './types.ts';
import { readWireType } from './wire-type-reader.ts';
import {
  basicNodes,
  firstUserId,
  Kind,
  resolve,
  type TypeNode,
  type TypeTable,
  unresolve,
  type WireDef,
} from './wire-types.ts';

const maxInterfaceName = 1024;
const maxTypeId = 0x7fffffff;

export class ValueReader implements TypeTable {
  readonly cursor = new MessageCursor();
  private readonly committed = new Map<number, WireDef>();
  private readonly staged = new Map<number, WireDef>();
  private readonly resolvedInAttempt: WireDef[] = [];
  private readonly maxDepth: number;
  private readonly maxTypes: number;
  private readonly trackResolved = (def: WireDef): void => {
    this.resolvedInAttempt.push(def);
  };

  constructor(maxDepth: number, maxTypes: number) {
    this.maxDepth = maxDepth;
    this.maxTypes = maxTypes;
  }

  lookup(id: number): WireDef | undefined {
    return this.staged.size > 0 ? (this.staged.get(id) ?? this.committed.get(id)) : this.committed.get(id);
  }

  /** Keeps the definitions received during the attempt that just succeeded. */
  commit(): void {
    for (const [id, def] of this.staged) this.committed.set(id, def);
    this.staged.clear();
    this.resolvedInAttempt.length = 0;
  }

  /** Forgets everything the failed attempt registered or linked. */
  rollback(): void {
    this.staged.clear();
    for (const def of this.resolvedInAttempt) unresolve(def);
    this.resolvedInAttempt.length = 0;
  }

  /** One top-level value: the type definitions before it, then `id value` (Go's Decoder.DecodeValue). */
  readTopLevel(): GobValue {
    const id = this.typeSequence(false);
    return this.value(id, 1);
  }

  /**
   * Go's decodeTypeSequence: reads definitions until a value's type id. Outside an interface every definition
   * must fill its message; inside one, a definition may be followed by the byte count of the next item.
   */
  private typeSequence(isInterface: boolean): number {
    const c = this.cursor;
    for (;;) {
      if (c.pos >= c.end) c.nextMessage();
      const id = c.readTypeId();
      if (id >= 0) return id;
      this.defineType(-id);
      if (c.pos < c.end) {
        if (!isInterface)
          throw new GobError('corrupt', `extra data in the message after the definition of type ${-id}`);
        c.readUint();
      }
    }
  }

  private defineType(id: number): void {
    if (id < firstUserId || id > maxTypeId)
      throw new GobError('corrupt', `type id ${id} cannot be defined (< 64)`);
    if (this.lookup(id) !== undefined) throw new GobError('corrupt', `duplicate definition of type id ${id}`);
    if (this.committed.size + this.staged.size >= this.maxTypes) {
      throw new GobError('limit', `more than ${this.maxTypes} type definitions on one stream`);
    }
    this.staged.set(id, readWireType(this.cursor, id));
  }

  private node(id: number): TypeNode {
    if (id > 0 && id < basicNodes.length) return basicNodes[id]!;
    const def = id >= firstUserId ? this.lookup(id) : undefined;
    if (def === undefined) throw new GobError('corrupt', `value of undefined type id ${id}`);
    if (!def.resolved) resolve(def, this, this.trackResolved);
    return def;
  }

  /** Go's decodeValue: a struct is sent as its fields, anything else as a singleton (delta 0, then the item). */
  private value(id: number, depth: number): GobValue {
    const node = this.node(id);
    if (node.kind === Kind.struct) return this.struct(node as WireDef, depth);
    if (this.cursor.readUint() !== 0) throw new GobError('corrupt', 'non-zero delta for a singleton value');
    return this.item(node, depth);
  }

  private enter(depth: number): void {
    if (depth > this.maxDepth)
      throw new GobError('limit', `values nested deeper than ${this.maxDepth} levels`);
  }

  private item(node: TypeNode, depth: number): GobValue {
    const c = this.cursor;
    switch (node.kind) {
      case Kind.bool:
        return c.readUint() !== 0;
      case Kind.int:
        return c.readIntExact();
      case Kind.uint:
        return c.readUintExact();
      case Kind.float:
        return c.readFloat();
      case Kind.complex: {
        const real = c.readFloat();
        return { real, imag: c.readFloat() };
      }
      case Kind.bytes:
        return c.takeBytes(c.readLength('[]byte'));
      case Kind.string:
        return c.takeString(c.readLength('string'));
      case Kind.interface:
        return this.interfaceValue(depth);
      case Kind.struct:
        return this.struct(node as WireDef, depth);
      case Kind.slice:
        return this.sequence(node as WireDef, c.readUint(), depth);
      case Kind.array: {
        const def = node as WireDef;
        const count = c.readUint();
        if (count !== def.len)
          throw new GobError('corrupt', `array of ${count} elements for type ${def.id} of length ${def.len}`);
        return this.sequence(def, count, depth);
      }
      case Kind.map:
        return this.map(node as WireDef, depth);
      case Kind.opaque: {
        const def = node as WireDef;
        return new GobOpaque(def.opaqueKind, def.name, c.takeBytes(c.readLength(def.opaqueKind)));
      }
      default:
        throw new GobError('unsupported', `type kind ${node.kind}`);
    }
  }

  private struct(def: WireDef, depth: number): GobStruct {
    this.enter(depth);
    const c = this.cursor;
    const fields = def.fields;
    const out: Record<string, GobValue> = {};
    let fieldnum = -1;
    // Like Go, a struct also ends where the message ends.
    while (c.pos < c.end) {
      const delta = c.readUint();
      if (delta === 0) break;
      if (fieldnum >= fields.length - delta) {
        throw new GobError(
          'corrupt',
          `field number ${fieldnum + delta} out of range for type ${def.id} (${def.name})`,
        );
      }
      fieldnum += delta;
      const field = fields[fieldnum]!;
      const v = this.item(field.type, depth + 1);
      if (field.exported) out[field.name] = v;
    }
    return out;
  }

  private sequence(def: WireDef, count: number, depth: number): GobValue[] {
    this.enter(depth);
    const c = this.cursor;
    const elem = def.elem!;
    const out: GobValue[] = [];
    // No check of count against the message: interface elements may pull further messages. Every element
    // needs at least one byte, so a false count fails here instead of looping.
    for (let i = 0; i < count; i++) {
      if (c.pos >= c.end)
        throw new GobError('corrupt', `${count} elements of type ${def.id} exceed the message`);
      out.push(this.item(elem, depth + 1));
    }
    return out;
  }

  private map(def: WireDef, depth: number): Map<GobValue, GobValue> {
    this.enter(depth);
    const c = this.cursor;
    const count = c.readUint();
    const key = def.key!;
    const elem = def.elem!;
    const out = new Map<GobValue, GobValue>();
    for (let i = 0; i < count; i++) {
      if (c.pos >= c.end)
        throw new GobError('corrupt', `${count} map entries of type ${def.id} exceed the message`);
      const k = this.item(key, depth + 1);
      out.set(k, this.item(elem, depth + 1));
    }
    return out;
  }

  /** Go's decodeInterface: name, then a type sequence that may span messages, a byte count, the value. */
  private interfaceValue(depth: number): GobValue {
    this.enter(depth);
    const c = this.cursor;
    const n = c.readUint();
    if (n > c.remaining()) throw new GobError('corrupt', `interface name length ${n} exceeds the message`);
    if (n === 0) return null;
    if (n > maxInterfaceName)
      throw new GobError('corrupt', `interface name of ${n} bytes (limit ${maxInterfaceName})`);
    const name = c.takeString(n);
    const id = this.typeSequence(true);
    c.readUint(); // byte count of the value; Go reads and ignores it when decoding
    return new GobInterface(name, this.value(id, depth + 1));
  }
}
