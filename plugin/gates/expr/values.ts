// The value model, matching what expr-lang sees in Argo Rollouts: `result` decoded from JSON, so numbers in
// it are Go float64, while integer literals and len() are Go int. Here an int is a bigint (64-bit,
// wrapping like Go) and a float64 is a number; arrays are []interface{}, objects map[string]interface{}.

import { runtimeError } from './errors.ts';

export type ExprValue = null | boolean | bigint | number | string | readonly ExprValue[] | ExprMap;
export type ExprMap = ReadonlyMap<string, ExprValue>;

export const maxInt = (1n << 63n) - 1n;
export const minInt = -(1n << 63n);

export function wrapInt(value: bigint): bigint {
  return BigInt.asIntN(64, value);
}

export function isNumber(value: ExprValue): value is bigint | number {
  return typeof value === 'bigint' || typeof value === 'number';
}

export function isMap(value: ExprValue): value is ExprMap {
  return value instanceof Map;
}

export function isArray(value: ExprValue): value is readonly ExprValue[] {
  return Array.isArray(value);
}

/** Go's %T of the value, for messages that read like expr-lang's. */
export function goTypeName(value: ExprValue): string {
  if (value === null) return '<nil>';
  if (typeof value === 'boolean') return 'bool';
  if (typeof value === 'bigint') return 'int';
  if (typeof value === 'number') return 'float64';
  if (typeof value === 'string') return 'string';
  if (isArray(value)) return '[]interface {}';
  return 'map[string]interface {}';
}

export function toFloat(value: bigint | number): number {
  return typeof value === 'bigint' ? Number(value) : value;
}

/**
 * Converts a JSON-shaped JavaScript value (what the provider measures) into an ExprValue. Numbers become
 * float64 as Go's json.Unmarshal makes them; a bigint is taken as a Go int.
 */
export function fromJson(input: unknown, where = 'result'): ExprValue {
  if (input === null || input === undefined) return null;
  switch (typeof input) {
    case 'boolean':
    case 'number':
    case 'string':
      return input;
    case 'bigint':
      if (input > maxInt || input < minInt)
        throw runtimeError(`${where}: ${input} does not fit a 64-bit int`);
      return input;
  }
  if (Array.isArray(input)) return input.map((item, index) => fromJson(item, `${where}[${index}]`));
  if (
    typeof input === 'object' &&
    (Object.getPrototypeOf(input) === Object.prototype || Object.getPrototypeOf(input) === null)
  ) {
    const map = new Map<string, ExprValue>();
    for (const [key, value] of Object.entries(input)) {
      if (value !== undefined) map.set(key, fromJson(value, `${where}.${key}`));
    }
    return map;
  }
  throw runtimeError(`${where}: a ${typeof input} value cannot be used in a condition`);
}

const utf8 = new TextEncoder();

/** Go compares strings bytewise (UTF-8), which differs from JavaScript's UTF-16 order outside the BMP. */
export function compareStrings(a: string, b: string): number {
  if (a === b) return 0;
  const x = utf8.encode(a);
  const y = utf8.encode(b);
  const length = Math.min(x.length, y.length);
  for (let i = 0; i < length; i++) {
    const difference = (x[i] as number) - (y[i] as number);
    if (difference !== 0) return difference;
  }
  return x.length - y.length;
}

/** expr-lang's len() of a string counts runes (code points), not bytes. */
export function runeCount(value: string): number {
  let count = 0;
  for (const _ of value) count++;
  return count;
}

/** expr-lang's runtime.Equal: numbers compare across int/float, arrays element-wise, maps deeply. */
export function exprEqual(a: ExprValue, b: ExprValue): boolean {
  if (isNumber(a) && isNumber(b)) {
    if (typeof a === 'bigint' && typeof b === 'bigint') return a === b;
    return toFloat(a) === toFloat(b);
  }
  if (isArray(a) && isArray(b)) {
    return a.length === b.length && a.every((item, index) => exprEqual(item, b[index] as ExprValue));
  }
  if (isMap(a) && isMap(b)) return deepEqual(a, b);
  return a === b;
}

/** reflect.DeepEqual on decoded values: strict about int vs float64 inside maps, as Go is. */
function deepEqual(a: ExprValue, b: ExprValue): boolean {
  if (typeof a !== typeof b || isArray(a) !== isArray(b) || isMap(a) !== isMap(b)) return false;
  if (isArray(a) && isArray(b))
    return a.length === b.length && a.every((item, index) => deepEqual(item, b[index] as ExprValue));
  if (isMap(a) && isMap(b)) {
    if (a.size !== b.size) return false;
    for (const [key, value] of a) {
      if (!b.has(key) || !deepEqual(value, b.get(key) as ExprValue)) return false;
    }
    return true;
  }
  // NaN is not DeepEqual to itself in Go either.
  return a === b;
}

/** For messages: a short, Go-like rendering of a value. */
export function describe(value: ExprValue): string {
  if (value === null) return 'nil';
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'number')
    return Number.isNaN(value)
      ? 'NaN'
      : value === Infinity
        ? '+Inf'
        : value === -Infinity
          ? '-Inf'
          : String(value);
  if (isArray(value)) return `[${value.slice(0, 5).map(describe).join(' ')}${value.length > 5 ? ' …' : ''}]`;
  if (isMap(value)) return `map[${[...value.keys()].slice(0, 5).join(' ')}${value.size > 5 ? ' …' : ''}]`;
  return String(value);
}
