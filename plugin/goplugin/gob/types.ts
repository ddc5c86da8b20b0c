// The value and schema model shared by the gob decoder and encoder.
// Decoded values are driven purely by the wire type definitions, so they carry Go names
// (struct field names, type names) and nothing else; mapping them to Kubernetes JSON shape
// is the rollouts/ layer's job.

import { CodedError } from '../failure-codes.ts';

/** A Go struct: exported fields by Go field name. Fields that Go omitted (zero values) are absent. */
export interface GobStruct {
  readonly [field: string]: GobValue;
}

/** A Go interface value with a registered concrete type name; a nil interface decodes to null. */
export class GobInterface {
  readonly name: string;
  readonly value: GobValue;
  constructor(name: string, value: GobValue) {
    this.name = name;
    this.value = value;
  }
}

/** A value that Go sent through GobEncode / MarshalBinary / MarshalText: the raw bytes and the wire type name. */
export class GobOpaque {
  readonly kind: 'GobEncoder' | 'BinaryMarshaler' | 'TextMarshaler';
  readonly typeName: string;
  readonly bytes: Uint8Array;
  constructor(kind: GobOpaque['kind'], typeName: string, bytes: Uint8Array) {
    this.kind = kind;
    this.typeName = typeName;
    this.bytes = bytes;
  }
}

/**
 * A decoded gob value. Integers that fit in a JS safe integer are numbers; larger ones are bigints,
 * so no value is ever rounded. Complex numbers decode as a [real, imag] tuple object.
 */
export type GobValue =
  | null
  | boolean
  | number
  | bigint
  | string
  | Uint8Array
  | GobComplex
  | GobInterface
  | GobOpaque
  | readonly GobValue[]
  | ReadonlyMap<GobValue, GobValue>
  | GobStruct;

export interface GobComplex {
  readonly real: number;
  readonly imag: number;
}

// ---- Schemas for the encoder: replies are encoded from explicit Go type descriptions. ----

export type GobSchema =
  | { readonly kind: 'bool' | 'int' | 'uint' | 'float' | 'string' | 'bytes' }
  | { readonly kind: 'struct'; readonly name: string; readonly fields: readonly GobField[] }
  | { readonly kind: 'slice'; readonly name?: string; readonly elem: GobSchema }
  | { readonly kind: 'map'; readonly name?: string; readonly key: GobSchema; readonly elem: GobSchema }
  /** A GobEncoder type (e.g. time.Time, name "Time"); its value is the Uint8Array the Go type's GobEncode returns. */
  | { readonly kind: 'gobEncoder'; readonly name: string };

export interface GobField {
  readonly name: string;
  readonly type: GobSchema;
}

/**
 * Struct fields a stream's reader never uses, by Go struct type name (as on the wire, e.g. "ObjectMeta"):
 * the decoder walks and checks them like any field but builds nothing, which is most of the cost of a big
 * value whose reader needs a small part of it.
 */
export type GobIgnoredFields = Readonly<Record<string, readonly string[]>>;

/** Errors of the codec carry a kind so callers can tell corrupt input from misuse; to users all of them are a
 *  ProtocolError (plugin/goplugin/failure-codes.ts). */
export class GobError extends CodedError {
  readonly kind: 'corrupt' | 'limit' | 'unsupported' | 'encode';
  constructor(kind: GobError['kind'], message: string) {
    super('ProtocolError', `gob: ${message}`);
    this.name = 'GobError';
    this.kind = kind;
  }
}
