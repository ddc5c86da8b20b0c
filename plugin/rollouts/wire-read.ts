// Typed reads from decoded gob values. Absent fields are Go zero values (gob omits them); a field that is
// present with an unexpected shape is a protocol error that names the Go path, never a silent default.

import { CodedError } from '../goplugin/failure-codes.ts';
import {
  civilFromDays,
  decodeGoTime,
  GobInterface,
  GobOpaque,
  type GobStruct,
  type GobValue,
} from '../goplugin/gob/index.ts';

export class WireShapeError extends CodedError {
  constructor(path: string, expected: string, got: GobValue | undefined) {
    super('ProtocolError', `unexpected value at ${path}: expected ${expected}, got ${describe(got)}`);
    this.name = 'WireShapeError';
  }
}

function describe(v: GobValue | undefined): string {
  if (v === undefined) return 'nothing';
  if (v === null) return 'nil';
  if (v instanceof Uint8Array) return 'bytes';
  if (v instanceof Map) return 'map';
  if (Array.isArray(v)) return 'slice';
  if (v instanceof GobInterface) return `interface ${v.name}`;
  if (v instanceof GobOpaque) return `${v.kind} ${v.typeName}`;
  return typeof v;
}

export function isStruct(v: GobValue | undefined): v is GobStruct {
  return (
    typeof v === 'object' &&
    v !== null &&
    !Array.isArray(v) &&
    !(v instanceof Map) &&
    !(v instanceof Uint8Array) &&
    !(v instanceof GobInterface) &&
    !(v instanceof GobOpaque) &&
    !('real' in v && 'imag' in v && Object.keys(v).length === 2)
  );
}

const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

/** A cursor over a decoded struct that remembers its Go path for error messages. */
export class WireStruct {
  readonly path: string;
  private readonly fields: GobStruct;

  constructor(value: GobValue | undefined, path: string) {
    this.path = path;
    if (value === undefined || value === null) {
      this.fields = {};
    } else if (isStruct(value)) {
      this.fields = value;
    } else {
      throw new WireShapeError(path, 'struct', value);
    }
  }

  has(name: string): boolean {
    return this.fields[name] !== undefined;
  }

  raw(name: string): GobValue | undefined {
    return this.fields[name];
  }

  struct(name: string): WireStruct {
    return new WireStruct(this.fields[name], `${this.path}.${name}`);
  }

  /** A pointer-to-struct field: undefined when absent (nil). */
  optionalStruct(name: string): WireStruct | undefined {
    return this.has(name) ? this.struct(name) : undefined;
  }

  string(name: string): string | undefined {
    const v = this.fields[name];
    if (v === undefined) return undefined;
    if (typeof v !== 'string') throw new WireShapeError(`${this.path}.${name}`, 'string', v);
    return v;
  }

  bool(name: string): boolean | undefined {
    const v = this.fields[name];
    if (v === undefined) return undefined;
    if (typeof v !== 'boolean') throw new WireShapeError(`${this.path}.${name}`, 'bool', v);
    return v;
  }

  /** Integers as JS numbers; a value beyond 2^53 cannot occur in the fields we read, so it is an error. */
  int(name: string): number | undefined {
    const v = this.fields[name];
    if (v === undefined) return undefined;
    if (typeof v !== 'number' || !Number.isInteger(v)) {
      throw new WireShapeError(`${this.path}.${name}`, 'integer within ±2^53', v);
    }
    return v;
  }

  bytes(name: string): Uint8Array | undefined {
    const v = this.fields[name];
    if (v === undefined) return undefined;
    if (!(v instanceof Uint8Array)) throw new WireShapeError(`${this.path}.${name}`, 'bytes', v);
    return v;
  }

  /** A json.RawMessage field, parsed. */
  json(name: string): unknown {
    const b = this.bytes(name);
    if (b === undefined || b.length === 0) return undefined;
    const text = strictUtf8.decode(b);
    try {
      return JSON.parse(text);
    } catch (err) {
      throw new CodedError(
        'ProtocolError',
        `invalid JSON at ${this.path}.${name}: ${(err as Error).message}`,
      );
    }
  }

  /** A metav1.Time field as metav1.Time marshals to JSON: RFC 3339, UTC, whole seconds. */
  time(name: string): string | undefined {
    const v = this.fields[name];
    if (v === undefined) return undefined;
    if (!(v instanceof GobOpaque)) throw new WireShapeError(`${this.path}.${name}`, 'time.Time', v);
    const t = decodeGoTime(v.bytes);
    return formatKubernetesTime(t.unixSeconds);
  }

  stringMap(name: string): Record<string, string> | undefined {
    const v = this.fields[name];
    if (v === undefined) return undefined;
    if (!(v instanceof Map)) throw new WireShapeError(`${this.path}.${name}`, 'map[string]string', v);
    const out: Record<string, string> = {};
    for (const [k, val] of v) {
      if (typeof k !== 'string' || typeof val !== 'string') {
        throw new WireShapeError(`${this.path}.${name}`, 'map[string]string', v);
      }
      out[k] = val;
    }
    return out;
  }

  /** A slice of structs; absent means empty. */
  structs(name: string): WireStruct[] | undefined {
    const v = this.fields[name];
    if (v === undefined) return undefined;
    if (!Array.isArray(v)) throw new WireShapeError(`${this.path}.${name}`, 'slice', v);
    return v.map((item, i) => new WireStruct(item, `${this.path}.${name}[${i}]`));
  }

  /** An intstr.IntOrString field ({Type, IntVal, StrVal}) as Kubernetes JSON renders it. */
  intOrString(name: string): number | string | undefined {
    if (!this.has(name)) return undefined;
    const s = this.struct(name);
    return s.int('Type') === 1 ? (s.string('StrVal') ?? '') : (s.int('IntVal') ?? 0);
  }
}

const minKubernetesSeconds = -62135596800; // 0001-01-01T00:00:00Z
const maxKubernetesSeconds = 253402300799; // 9999-12-31T23:59:59Z

function two(n: number): string {
  return n < 10 ? `0${n}` : String(n);
}

/** RFC 3339 with whole seconds in UTC, as metav1.Time.MarshalJSON writes (fractions are truncated). */
export function formatKubernetesTime(unixSeconds: bigint): string {
  const t = Number(unixSeconds);
  if (t < minKubernetesSeconds || t > maxKubernetesSeconds) {
    throw new CodedError(
      'ProtocolError',
      `time out of the range Kubernetes can represent: ${unixSeconds} s since 1970`,
    );
  }
  // Computed directly: a Date object and toISOString per time were a tenth of a field-heavy Run.
  const days = Math.floor(t / 86400);
  const secOfDay = t - days * 86400;
  const { year, month, day } = civilFromDays(days);
  const hh = Math.floor(secOfDay / 3600);
  const mm = Math.floor((secOfDay % 3600) / 60);
  return `${String(year).padStart(4, '0')}-${two(month)}-${two(day)}T${two(hh)}:${two(mm)}:${two(secOfDay % 60)}Z`;
}

/** The body of a Plugin.* call: an interface value with the expected registered name. */
export function unwrapInterface(body: GobValue, expectedName: string): WireStruct {
  if (!(body instanceof GobInterface)) throw new WireShapeError('args', `interface ${expectedName}`, body);
  if (body.name !== expectedName) {
    throw new CodedError(
      'ProtocolError',
      `unexpected argument type ${JSON.stringify(body.name)} (expected ${expectedName})`,
    );
  }
  return new WireStruct(body.value, expectedName);
}
