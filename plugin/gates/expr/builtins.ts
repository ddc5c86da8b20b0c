// The functions of the subset, with expr-lang's semantics (builtin/builtin.go, builtin/lib.go) and those
// that Argo Rollouts binds next to `result` (utils/evaluate/evaluate.go).

import { runtimeError } from './errors.ts';
import {
  type ExprValue,
  goTypeName,
  isArray,
  isMap,
  isNumber,
  maxInt,
  minInt,
  runeCount,
  toFloat,
} from './values.ts';

export interface CallContext {
  /** The `result` the expression runs against: isNil() and default() look at it, not at their argument. */
  readonly result: ExprValue;
  readonly position: number;
}

export type Builtin = (args: readonly ExprValue[], context: CallContext) => ExprValue;

function len([argument]: readonly ExprValue[], { position }: CallContext): ExprValue {
  const value = argument ?? null;
  if (typeof value === 'string') return BigInt(runeCount(value));
  if (isArray(value)) return BigInt(value.length);
  if (isMap(value)) return BigInt(value.size);
  throw runtimeError(`invalid argument for len (type ${goTypeName(value)})`, position);
}

function abs([value]: readonly ExprValue[], { position }: CallContext): ExprValue {
  if (typeof value === 'bigint') return value < 0n ? BigInt.asIntN(64, -value) : value;
  if (typeof value === 'number') return Math.abs(value);
  throw runtimeError(`invalid argument for abs (type ${goTypeName(value ?? null)})`, position);
}

/** expr-lang's minMax: arrays are flattened, ties keep the first, NaN is never picked after a number. */
function extreme(name: 'max' | 'min', args: readonly ExprValue[], position: number, depth = 0): ExprValue {
  if (depth > 10_000) throw runtimeError(`${name}: nesting too deep`, position);
  let best: bigint | number | undefined;
  const better = (candidate: bigint | number, current: bigint | number) =>
    name === 'max' ? lessThan(current, candidate) : lessThan(candidate, current);
  for (const arg of args) {
    if (isArray(arg)) {
      for (const item of arg) {
        const value = extreme(name, [item], position, depth + 1);
        if (!isNumber(value))
          throw runtimeError(`invalid argument for ${name} (type ${goTypeName(value)})`, position);
        if (best === undefined || better(value, best)) best = value;
      }
    } else if (isNumber(arg)) {
      if (best === undefined || better(arg, best)) best = arg;
    } else {
      if (args.length === 1) return arg;
      throw runtimeError(`invalid argument for ${name} (type ${goTypeName(arg)})`, position);
    }
  }
  return best ?? null;
}

function lessThan(a: bigint | number, b: bigint | number): boolean {
  if (typeof a === 'bigint' && typeof b === 'bigint') return a < b;
  return toFloat(a) < toFloat(b);
}

function floatArgument(name: string, value: ExprValue | undefined, position: number): number {
  if (typeof value === 'number') return value;
  if (typeof value === 'bigint') return Number(value);
  throw runtimeError(`${name} needs a float64 argument, got ${goTypeName(value ?? null)}`, position);
}

/** Go's int64(f): we refuse what Go leaves undefined (NaN, ±Inf, out of range) instead of inventing a value. */
function floatToInt(value: number, position: number): bigint {
  if (!Number.isFinite(value) || value >= 2 ** 63 || value < -(2 ** 63)) {
    throw runtimeError(`cannot convert ${value} to int`, position);
  }
  return BigInt(Math.trunc(value));
}

const goFloatPattern = /^[+-]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|inf|infinity|nan)$/i;

function asInt([value]: readonly ExprValue[], { position }: CallContext): ExprValue {
  if (typeof value === 'bigint') return value;
  if (typeof value === 'number') return floatToInt(value, position);
  if (typeof value === 'string') {
    // strconv.ParseInt(s, 10, 64)
    if (!/^[+-]?\d+$/.test(value))
      throw runtimeError(`strconv.ParseInt: parsing ${JSON.stringify(value)}: invalid syntax`, position);
    const parsed = BigInt(value);
    if (parsed > maxInt || parsed < minInt) {
      throw runtimeError(`strconv.ParseInt: parsing ${JSON.stringify(value)}: value out of range`, position);
    }
    return parsed;
  }
  throw runtimeError(`asInt() not supported on ${goTypeName(value ?? null)}`, position);
}

function asFloat([value]: readonly ExprValue[], { position }: CallContext): ExprValue {
  if (isNumber(value ?? null)) return toFloat(value as bigint | number);
  if (typeof value === 'string') {
    // strconv.ParseFloat(s, 64), decimal forms
    if (!goFloatPattern.test(value))
      throw runtimeError(`strconv.ParseFloat: parsing ${JSON.stringify(value)}: invalid syntax`, position);
    const lower = value.toLowerCase().replace(/^\+/, '');
    if (lower.endsWith('nan')) return Number.NaN;
    if (lower.endsWith('inf') || lower.endsWith('infinity'))
      return lower.startsWith('-') ? -Infinity : Infinity;
    const parsed = Number(value);
    if (!Number.isFinite(parsed))
      throw runtimeError(
        `strconv.ParseFloat: parsing ${JSON.stringify(value)}: value out of range`,
        position,
      );
    return parsed;
  }
  throw runtimeError(`asFloat() not supported on ${goTypeName(value ?? null)}`, position);
}

export const builtins: Readonly<Record<string, Builtin>> = {
  len,
  abs,
  max: (args, { position }) => extreme('max', args, position),
  min: (args, { position }) => extreme('min', args, position),
  isNaN: ([value], { position }) => Number.isNaN(floatArgument('isNaN', value, position)),
  isInf: ([value], { position }) => {
    const number = floatArgument('isInf', value, position);
    return number === Infinity || number === -Infinity;
  },
  asInt,
  asFloat,
  // Argo Rollouts' isNil(x) and default(x, d) ignore x and look at the whole result (evaluate.go); kept so
  // that conditions mean here what they mean there.
  isNil: (_args, { result }) => result === null,
  default: ([, fallback], { result }) => (result === null ? (fallback ?? null) : result),
};
