// Evaluates a parsed condition against `result`, with expr-lang's runtime semantics (vm/runtime): int
// arithmetic wraps at 64 bits, `/` always gives float64, `%` wants ints, `**` is float64 math.Pow, numbers
// compare across int/float64, a missing map key is nil, `&&`/`||` short-circuit on a bool left side, and
// anything else fails with an ExprError rather than a guess. No eval, no Function: a plain tree walk.

import type { Node } from './ast.ts';
import { builtins } from './builtins.ts';
import { checkTypes, type StaticType } from './check.ts';
import { ExprError, runtimeError } from './errors.ts';
import { parse } from './parser.ts';
import {
  compareStrings,
  describe,
  type ExprValue,
  exprEqual,
  fromJson,
  goTypeName,
  isArray,
  isMap,
  isNumber,
  toFloat,
  wrapInt,
} from './values.ts';

export interface CompiledExpression {
  readonly source: string;
  /** Evaluates against a JSON-shaped `result` (numbers are float64, as after Go's json.Unmarshal). */
  evaluate(result: unknown): ExprValue;
}

/** Parses and type-checks once; throws ExprError for syntax, unsupported features and static type errors. */
export function compileExpression(source: string): CompiledExpression {
  const tree = parse(source);
  checkTypes(tree);
  return {
    source,
    evaluate(result: unknown): ExprValue {
      const value = fromJson(result);
      // Argo Rollouts compiles against the actual result: its top-level type is known statically.
      checkTypes(tree, staticTypeOf(value));
      return new Evaluation(value).run(tree);
    },
  };
}

function staticTypeOf(value: ExprValue): StaticType {
  if (value === null) return 'nil';
  if (typeof value === 'boolean') return 'bool';
  if (typeof value === 'bigint') return 'int';
  if (typeof value === 'number') return 'float';
  if (typeof value === 'string') return 'string';
  return isArray(value) ? 'array' : 'map';
}

/** Evaluates a condition that must yield a bool, as Argo Rollouts' EvalCondition does. */
export function evaluateCondition(source: string, result: unknown): boolean {
  const value = compileExpression(source).evaluate(result);
  if (typeof value !== 'boolean') throw runtimeError(`expected bool, but got ${goTypeName(value)}`);
  return value;
}

/** Thrown by `?.` on nil and caught at the end of its chain, which then yields nil. */
const chainIsNil = Symbol('chainIsNil');

interface PredicateScope {
  readonly element: ExprValue;
}

class Evaluation {
  private readonly result: ExprValue;
  private readonly scopes: PredicateScope[] = [];

  constructor(result: ExprValue) {
    this.result = result;
  }

  run(node: Node): ExprValue {
    try {
      return this.evaluate(node);
    } catch (error) {
      if (error instanceof ExprError) throw error;
      if (error instanceof RangeError) throw runtimeError(`evaluation failed: ${error.message}`);
      throw error;
    }
  }

  private evaluate(node: Node): ExprValue {
    switch (node.kind) {
      case 'nil':
        return null;
      case 'bool':
      case 'int':
      case 'float':
      case 'string':
        return node.value;
      case 'array':
        return node.items.map((item) => this.evaluate(item));
      case 'identifier':
        return this.result;
      case 'pointer': {
        const scope = this.scopes.at(-1);
        if (scope === undefined) throw runtimeError('# used outside a predicate', node.position);
        return scope.element;
      }
      case 'chain':
        try {
          return this.evaluate(node.node);
        } catch (error) {
          if (error === chainIsNil) return null;
          throw error;
        }
      case 'member': {
        const object = this.evaluate(node.object);
        if (object === null && node.optional) throw chainIsNil;
        return fetch(object, this.evaluate(node.property), node.position);
      }
      case 'unary':
        return this.unary(node.operator, this.evaluate(node.operand), node.position);
      case 'binary':
        return this.binary(node);
      case 'conditional': {
        const test = this.evaluate(node.test);
        if (typeof test !== 'boolean')
          throw runtimeError(
            `non-bool expression (type ${goTypeName(test)}) used as condition`,
            node.position,
          );
        return this.evaluate(test ? node.consequent : node.alternate);
      }
      case 'call': {
        const builtin = builtins[node.name];
        if (builtin === undefined) throw runtimeError(`unknown function ${node.name}`, node.position);
        const args = node.args.map((arg) => this.evaluate(arg));
        return builtin(args, { result: this.result, position: node.position });
      }
      case 'predicate':
        return this.predicate(node);
    }
  }

  private unary(operator: string, operand: ExprValue, position: number): ExprValue {
    if (operator === '!') {
      if (typeof operand !== 'boolean')
        throw runtimeError(`invalid operation: ! ${goTypeName(operand)}`, position);
      return !operand;
    }
    if (typeof operand === 'bigint') return operator === '-' ? wrapInt(-operand) : operand;
    if (typeof operand === 'number') return operator === '-' ? -operand : operand;
    throw runtimeError(`invalid operation: ${operator} ${goTypeName(operand)}`, position);
  }

  private binary(node: Extract<Node, { kind: 'binary' }>): ExprValue {
    const { operator, position } = node;
    if (operator === '&&' || operator === '||') {
      const left = this.evaluate(node.left);
      if (typeof left !== 'boolean')
        throw runtimeError(`invalid operation: ${operator} on ${goTypeName(left)}, want bool`, position);
      if (operator === '&&' ? !left : left) return left;
      // Like expr-lang's jump-based code, the right operand's value is the result, whatever its type.
      return this.evaluate(node.right);
    }
    if (operator === '??') {
      const left = this.evaluate(node.left);
      return left === null ? this.evaluate(node.right) : left;
    }
    const left = this.evaluate(node.left);
    const right = this.evaluate(node.right);
    const mismatch = () =>
      runtimeError(`invalid operation: ${goTypeName(left)} ${operator} ${goTypeName(right)}`, position);
    switch (operator) {
      case '==':
        return exprEqual(left, right);
      case '!=':
        return !exprEqual(left, right);
      case '<':
      case '>':
      case '<=':
      case '>=':
        return compare(operator, left, right, mismatch);
      case 'in':
        return contains(right, left, position);
      case '+':
        if (typeof left === 'string' && typeof right === 'string') return left + right;
        return arithmetic(
          left,
          right,
          mismatch,
          (a, b) => a + b,
          (a, b) => a + b,
        );
      case '-':
        return arithmetic(
          left,
          right,
          mismatch,
          (a, b) => a - b,
          (a, b) => a - b,
        );
      case '*':
        return arithmetic(
          left,
          right,
          mismatch,
          (a, b) => a * b,
          (a, b) => a * b,
        );
      case '/':
        if (!isNumber(left) || !isNumber(right)) throw mismatch();
        return toFloat(left) / toFloat(right);
      case '%':
        if (typeof left !== 'bigint' || typeof right !== 'bigint') throw mismatch();
        if (right === 0n) throw runtimeError('integer divide by zero', position);
        return wrapInt(left % right);
      case '**':
        if (!isNumber(left) || !isNumber(right)) throw mismatch();
        return goPow(toFloat(left), toFloat(right));
    }
  }

  private predicate(node: Extract<Node, { kind: 'predicate' }>): ExprValue {
    const collection = this.evaluate(node.collection);
    if (!isArray(collection)) {
      throw runtimeError(
        `${node.name}() needs an array, got ${goTypeName(collection)}`,
        node.collection.position,
      );
    }
    let matches = 0;
    for (const element of collection) {
      this.scopes.push({ element });
      let verdict: ExprValue;
      try {
        verdict = this.evaluate(node.predicate);
      } finally {
        this.scopes.pop();
      }
      if (typeof verdict !== 'boolean') {
        throw runtimeError(
          `the predicate of ${node.name}() gave ${goTypeName(verdict)}, want bool`,
          node.predicate.position,
        );
      }
      if (node.name === 'all' && !verdict) return false;
      if (node.name === 'any' && verdict) return true;
      if (node.name === 'none' && verdict) return false;
      if (verdict) matches++;
    }
    if (node.name === 'one') return matches === 1;
    return node.name !== 'any';
  }
}

function arithmetic(
  left: ExprValue,
  right: ExprValue,
  mismatch: () => Error,
  ints: (a: bigint, b: bigint) => bigint,
  floats: (a: number, b: number) => number,
): ExprValue {
  if (typeof left === 'bigint' && typeof right === 'bigint') return wrapInt(ints(left, right));
  if (isNumber(left) && isNumber(right)) return floats(toFloat(left), toFloat(right));
  throw mismatch();
}

function compare(
  operator: '<' | '>' | '<=' | '>=',
  left: ExprValue,
  right: ExprValue,
  mismatch: () => Error,
): boolean {
  let order: number;
  if (typeof left === 'bigint' && typeof right === 'bigint') {
    order = left < right ? -1 : left > right ? 1 : 0;
  } else if (isNumber(left) && isNumber(right)) {
    const a = toFloat(left);
    const b = toFloat(right);
    if (Number.isNaN(a) || Number.isNaN(b)) return false;
    order = a < b ? -1 : a > b ? 1 : 0;
  } else if (typeof left === 'string' && typeof right === 'string') {
    order = compareStrings(left, right);
  } else {
    throw mismatch();
  }
  switch (operator) {
    case '<':
      return order < 0;
    case '>':
      return order > 0;
    case '<=':
      return order <= 0;
    case '>=':
      return order >= 0;
  }
}

function contains(haystack: ExprValue, needle: ExprValue, position: number): boolean {
  if (haystack === null) return false;
  if (isArray(haystack)) return haystack.some((item) => exprEqual(item, needle));
  if (isMap(haystack)) {
    if (typeof needle !== 'string') {
      throw runtimeError(`cannot use ${goTypeName(needle)} as a key of map[string]interface {}`, position);
    }
    return haystack.has(needle);
  }
  throw runtimeError(`operator "in" not defined on ${goTypeName(haystack)}`, position);
}

/** Go's math.Pow where it differs from JavaScript's: 1**y and (-1)**±Inf are 1. */
function goPow(base: number, exponent: number): number {
  if (base === 1 || exponent === 0) return 1;
  if (base === -1 && (exponent === Infinity || exponent === -Infinity)) return 1;
  return base ** exponent;
}

/** expr-lang's runtime.Fetch on decoded values. */
function fetch(object: ExprValue, key: ExprValue, position: number): ExprValue {
  if (isMap(object)) {
    if (typeof key !== 'string')
      throw runtimeError(`cannot use ${goTypeName(key)} as a key of map[string]interface {}`, position);
    return object.get(key) ?? null;
  }
  if (isArray(object)) {
    let index: bigint;
    if (typeof key === 'bigint') index = key;
    else if (typeof key === 'number' && Number.isFinite(key)) index = BigInt(Math.trunc(key));
    else throw runtimeError(`invalid operation: int(${goTypeName(key)})`, position);
    const length = BigInt(object.length);
    const at = index < 0n ? length + index : index;
    if (at < 0n || at >= length)
      throw runtimeError(`index out of range: ${at} (array length is ${length})`, position);
    return object[Number(at)] as ExprValue;
  }
  if (typeof object === 'string')
    throw new ExprError(
      'unsupported',
      'indexing a string is not supported in vmzones conditions',
      position + 1,
    );
  const shownKey = typeof key === 'string' ? key : describe(key);
  throw runtimeError(`cannot fetch ${shownKey} from ${goTypeName(object)}`, position);
}
