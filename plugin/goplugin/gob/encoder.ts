// Schema-driven gob encoder for one stream direction. Follows Go's encoder (encoder.go/encode.go):
// a definition message per composite type not yet sent (parent first, then its element and field types,
// depth-first), then the value message `int(id) value`; top-level structs are sent as their fields, every
// other top-level value as a singleton (delta 0, zero values included). Struct fields that are zero (false,
// 0, "", empty bytes or slice) or absent are omitted; maps, structs and gobEncoder values are sent whenever
// present. Definitions are keyed by the schema's structure, so equal schemas built twice share one id.

import { ByteWriter } from './byte-writer.ts';
import { GobError, type GobField, type GobSchema } from './types.ts';

type StructSchema = Extract<GobSchema, { kind: 'struct' }>;
type SliceSchema = Extract<GobSchema, { kind: 'slice' }>;
type MapSchema = Extract<GobSchema, { kind: 'map' }>;
type OpaqueSchema = Extract<GobSchema, { kind: 'gobEncoder' }>;
type CompositeSchema = StructSchema | SliceSchema | MapSchema | OpaqueSchema;

const basicIds = { bool: 1, int: 2, uint: 3, float: 4, bytes: 5, string: 6 } as const;
const basicGoNames = {
  bool: 'bool',
  int: 'int',
  uint: 'uint',
  float: 'float64',
  bytes: '[]uint8',
  string: 'string',
};
const firstId = 65;
const exportedIdentifier = /^\p{Lu}[\p{L}\p{Nd}_]*$/u;
const int64Min = -(2 ** 63);
const int64Limit = 2 ** 63;
const uint64Limit = 2 ** 64;

// Wire field deltas inside wireType (field index + 1 from the start).
const wireTypeDelta = { slice: 2, struct: 3, map: 4, gobEncoder: 5 } as const;

const signatures = new WeakMap<GobSchema, string>();

function fail(path: string, problem: string): never {
  throw new GobError('encode', `${path}: ${problem}`);
}

function isComposite(schema: GobSchema): schema is CompositeSchema {
  return (
    schema.kind === 'struct' ||
    schema.kind === 'slice' ||
    schema.kind === 'map' ||
    schema.kind === 'gobEncoder'
  );
}

function goName(schema: GobSchema): string {
  switch (schema.kind) {
    case 'struct':
    case 'gobEncoder':
      return schema.name;
    case 'slice':
      return schema.name ?? `[]${goName(schema.elem)}`;
    case 'map':
      return schema.name ?? `map[${goName(schema.key)}]${goName(schema.elem)}`;
    default:
      return basicGoNames[schema.kind];
  }
}

/** A canonical text of the schema's structure (validating it on the way); memoized per schema object. */
function signature(schema: GobSchema, inProgress: Set<GobSchema> = new Set()): string {
  const known = signatures.get(schema);
  if (known !== undefined) return known;
  if (inProgress.has(schema)) fail(goName(schema), 'recursive schemas are not supported by the encoder');
  inProgress.add(schema);
  let sig: string;
  switch (schema.kind) {
    case 'bool':
    case 'int':
    case 'uint':
    case 'float':
    case 'bytes':
    case 'string':
      sig = schema.kind;
      break;
    case 'struct': {
      const names = new Set<string>();
      for (const f of schema.fields) {
        if (!exportedIdentifier.test(f.name))
          fail(schema.name, `field name ${JSON.stringify(f.name)} is not exported`);
        if (names.has(f.name)) fail(schema.name, `duplicate field ${f.name}`);
        names.add(f.name);
      }
      const fields = schema.fields.map((f) => `${f.name}:${signature(f.type, inProgress)}`);
      sig = `struct ${JSON.stringify(schema.name)}{${fields.join(',')}}`;
      break;
    }
    case 'slice':
      sig = `slice ${JSON.stringify(goName(schema))}[${signature(schema.elem, inProgress)}]`;
      break;
    case 'map':
      sig = `map ${JSON.stringify(goName(schema))}[${signature(schema.key, inProgress)}]${signature(schema.elem, inProgress)}`;
      break;
    case 'gobEncoder':
      if (schema.name === '') fail('gobEncoder', 'a gobEncoder type needs its Go type name');
      sig = `gobEncoder ${JSON.stringify(schema.name)}`;
      break;
    default:
      fail('schema', `unknown kind ${JSON.stringify((schema as { kind: unknown }).kind)}`);
  }
  inProgress.delete(schema);
  signatures.set(schema, sig);
  return sig;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  if (typeof v !== 'object' || v === null) return false;
  const proto = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}

function describe(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  if (v instanceof Uint8Array) return 'Uint8Array';
  if (v instanceof Map) return 'Map';
  return typeof v;
}

/** One encode() call: ids it allocates stay private until the whole value encoded. */
class EncodeSession {
  private readonly sent: ReadonlyMap<string, number>;
  readonly newIds = new Map<string, number>();
  nextId: number;
  private readonly toDefine: { schema: CompositeSchema; id: number }[] = [];

  constructor(sent: ReadonlyMap<string, number>, nextId: number) {
    this.sent = sent;
    this.nextId = nextId;
  }

  private known(schema: GobSchema): number | undefined {
    if (!isComposite(schema)) return basicIds[schema.kind];
    const sig = signature(schema);
    return this.sent.get(sig) ?? this.newIds.get(sig);
  }

  /** The wire id of `schema`, allocating ids (parent before children) for every type not yet sent. */
  allocate(schema: GobSchema): number {
    const existing = this.known(schema);
    if (existing !== undefined) return existing;
    const composite = schema as CompositeSchema;
    const id = this.nextId++;
    this.newIds.set(signature(composite), id);
    this.toDefine.push({ schema: composite, id });
    switch (composite.kind) {
      case 'struct':
        for (const f of composite.fields) this.allocate(f.type);
        break;
      case 'slice':
        this.allocate(composite.elem);
        break;
      case 'map':
        this.allocate(composite.key);
        this.allocate(composite.elem);
        break;
      default:
        break;
    }
    return id;
  }

  /** The definition messages of every newly allocated type, in allocation order. */
  writeDefinitions(out: ByteWriter): void {
    for (const { schema, id } of this.toDefine) {
      const msg = new ByteWriter();
      msg.int(-id);
      msg.uint(wireTypeDelta[schema.kind]);
      msg.uint(1); // the kind's struct: field 0, CommonType
      writeCommonType(msg, goName(schema), id);
      switch (schema.kind) {
        case 'struct':
          if (schema.fields.length > 0) {
            msg.uint(1); // structType.Field
            msg.uint(schema.fields.length);
            for (const f of schema.fields) {
              msg.uint(1);
              msg.string(f.name);
              msg.uint(1);
              msg.int(this.known(f.type)!);
              msg.byte(0);
            }
          }
          break;
        case 'slice':
          msg.uint(1);
          msg.int(this.known(schema.elem)!);
          break;
        case 'map':
          msg.uint(1);
          msg.int(this.known(schema.key)!);
          msg.uint(1);
          msg.int(this.known(schema.elem)!);
          break;
        default:
          break;
      }
      msg.byte(0); // end of the kind's struct
      msg.byte(0); // end of wireType
      msg.appendAsMessage(out);
    }
  }
}

function writeCommonType(w: ByteWriter, name: string, id: number): void {
  if (name !== '') {
    w.uint(1);
    w.string(name);
  }
  w.uint(name !== '' ? 1 : 2);
  w.int(id);
  w.byte(0);
}

function checkInt(v: unknown, path: string): number | bigint {
  if (typeof v === 'number' && Number.isInteger(v) && v >= int64Min && v < int64Limit) return v;
  if (typeof v === 'bigint' && v >= -(1n << 63n) && v < 1n << 63n) return v;
  return fail(path, `expected an int64 (number or bigint), got ${describe(v)} ${String(v)}`);
}

function checkUint(v: unknown, path: string): number | bigint {
  if (typeof v === 'number' && Number.isInteger(v) && v >= 0 && v < uint64Limit) return v === 0 ? 0 : v;
  if (typeof v === 'bigint' && v >= 0n && v < 1n << 64n) return v;
  return fail(path, `expected a uint64 (number or bigint), got ${describe(v)} ${String(v)}`);
}

/** Validates a struct field's value; true when Go would omit it as a zero value. */
function isOmittedZero(schema: GobSchema, v: unknown, path: string): boolean {
  switch (schema.kind) {
    case 'bool':
      if (typeof v !== 'boolean') fail(path, `expected a boolean, got ${describe(v)}`);
      return !v;
    case 'int': {
      const x = checkInt(v, path);
      return x === 0 || x === 0n;
    }
    case 'uint': {
      const x = checkUint(v, path);
      return x === 0 || x === 0n;
    }
    case 'float':
      if (typeof v !== 'number') fail(path, `expected a number, got ${describe(v)}`);
      return v === 0; // -0 too, as in Go
    case 'string':
      if (typeof v !== 'string') fail(path, `expected a string, got ${describe(v)}`);
      return v.length === 0;
    case 'bytes':
      if (!(v instanceof Uint8Array)) fail(path, `expected a Uint8Array, got ${describe(v)}`);
      return v.length === 0;
    case 'slice':
      if (!Array.isArray(v)) fail(path, `expected an array, got ${describe(v)}`);
      return v.length === 0;
    default:
      return false;
  }
}

function writeStruct(schema: StructSchema, v: unknown, w: ByteWriter, path: string): void {
  if (!isPlainObject(v)) fail(path, `expected a plain object for struct ${schema.name}, got ${describe(v)}`);
  const fields: readonly GobField[] = schema.fields;
  for (const key of Object.keys(v)) {
    if (v[key] !== undefined && !fields.some((f) => f.name === key)) {
      fail(path, `struct ${schema.name} has no field ${JSON.stringify(key)}`);
    }
  }
  let previous = -1;
  for (let i = 0; i < fields.length; i++) {
    const field = fields[i]!;
    const value = v[field.name];
    if (value === undefined || value === null) continue;
    const fieldPath = `${path}.${field.name}`;
    if (isOmittedZero(field.type, value, fieldPath)) continue;
    w.uint(i - previous);
    previous = i;
    writeItem(field.type, value, w, fieldPath);
  }
  w.byte(0);
}

function writeItem(schema: GobSchema, v: unknown, w: ByteWriter, path: string): void {
  switch (schema.kind) {
    case 'bool':
      if (typeof v !== 'boolean') fail(path, `expected a boolean, got ${describe(v)}`);
      w.uint(v ? 1 : 0);
      return;
    case 'int':
      w.int(checkInt(v, path));
      return;
    case 'uint':
      w.uint(checkUint(v, path));
      return;
    case 'float':
      if (typeof v !== 'number') fail(path, `expected a number, got ${describe(v)}`);
      w.float(v);
      return;
    case 'string':
      if (typeof v !== 'string') fail(path, `expected a string, got ${describe(v)}`);
      w.string(v);
      return;
    case 'bytes':
    case 'gobEncoder':
      if (!(v instanceof Uint8Array)) fail(path, `expected a Uint8Array, got ${describe(v)}`);
      w.uint(v.length);
      w.raw(v);
      return;
    case 'struct':
      writeStruct(schema, v, w, path);
      return;
    case 'slice': {
      if (!Array.isArray(v)) fail(path, `expected an array, got ${describe(v)}`);
      w.uint(v.length);
      v.forEach((elem: unknown, i) => {
        if (elem === undefined || elem === null) fail(`${path}[${i}]`, 'nil element');
        writeItem(schema.elem, elem, w, `${path}[${i}]`);
      });
      return;
    }
    case 'map': {
      let entries: [unknown, unknown][];
      if (v instanceof Map) entries = [...v];
      else if (isPlainObject(v) && schema.key.kind === 'string') entries = Object.entries(v);
      else fail(path, `expected a Map (or a plain object for string keys), got ${describe(v)}`);
      w.uint(entries.length);
      for (const [key, value] of entries) {
        const entryPath = `${path}[${JSON.stringify(String(key))}]`;
        if (key === undefined || key === null || value === undefined || value === null)
          fail(entryPath, 'nil key or value');
        writeItem(schema.key, key, w, entryPath);
        writeItem(schema.elem, value, w, entryPath);
      }
      return;
    }
  }
}

export class GobEncoder {
  /** Schema signature → type id, for every definition already sent on this stream. */
  private readonly sent = new Map<string, number>();
  private nextId = firstId;

  /**
   * Encodes one top-level value of the given schema, preceded by the definitions of every composite type not
   * yet sent on this encoder. Returns the bytes of all messages. Throws GobError('encode') on a value that
   * does not fit its schema, in which case nothing is emitted and the encoder's state is unchanged.
   */
  encode(schema: GobSchema, value: unknown): Uint8Array {
    const root = goName(schema);
    signature(schema); // validates the schema
    if (value === undefined || value === null) fail(root, 'cannot encode a nil value');
    const session = new EncodeSession(this.sent, this.nextId);
    const id = session.allocate(schema);
    const out = new ByteWriter();
    session.writeDefinitions(out);
    const msg = new ByteWriter();
    msg.int(id);
    if (schema.kind === 'struct') {
      writeStruct(schema, value, msg, root);
    } else {
      msg.uint(0); // singleton: a pseudo field delta of 0
      writeItem(schema, value, msg, root);
    }
    msg.appendAsMessage(out);
    for (const [sig, newId] of session.newIds) this.sent.set(sig, newId);
    this.nextId = session.nextId;
    return out.result();
  }
}
