// A type check before evaluation, like expr-lang's checker: operands whose types are known from the
// expression itself (literals, len(), comparisons, …) and can never fit are an error even in a branch that
// evaluation would skip — `result.ok || 1 + "a"` is an Error measurement in Argo Rollouts, so it is here.
// `result` and what comes out of it have unknown types and are checked while evaluating.

import type { Node } from './ast.ts';
import { typeError } from './errors.ts';

export type StaticType = 'int' | 'float' | 'string' | 'bool' | 'nil' | 'array' | 'map' | 'unknown';

const goNames: Record<StaticType, string> = {
  int: 'int',
  float: 'float64',
  string: 'string',
  bool: 'bool',
  nil: 'nil',
  array: '[]interface {}',
  map: 'map[string]interface {}',
  unknown: 'interface {}',
};

const numeric = (type: StaticType) => type === 'int' || type === 'float';
const known = (type: StaticType) => type !== 'unknown';

/** Arity of the functions: [minimum, maximum]. */
export const functionArity: Record<string, [number, number]> = {
  len: [1, 1],
  abs: [1, 1],
  max: [1, Number.POSITIVE_INFINITY],
  min: [1, Number.POSITIVE_INFINITY],
  isNaN: [1, 1],
  isInf: [1, 1],
  asInt: [1, 1],
  asFloat: [1, 1],
  isNil: [1, 1],
  default: [2, 2],
};

/**
 * Argo Rollouts compiles each condition against the actual result, so `result` has the static type of the
 * value (a map for our measurements; nil when there is none), and what is read out of it is unknown.
 */
export function checkTypes(node: Node, resultType: StaticType = 'unknown'): StaticType {
  return new Checker(resultType).check(node);
}

class Checker {
  private readonly resultType: StaticType;

  constructor(resultType: StaticType) {
    this.resultType = resultType;
  }

  check(node: Node): StaticType {
    switch (node.kind) {
      case 'nil':
        return 'nil';
      case 'bool':
        return 'bool';
      case 'int':
        return 'int';
      case 'float':
        return 'float';
      case 'string':
        return 'string';
      case 'array':
        for (const item of node.items) this.check(item);
        return 'array';
      case 'identifier':
        return this.resultType;
      case 'pointer':
        return 'unknown';
      case 'chain':
        return this.check(node.node);
      case 'member': {
        const object = this.check(node.object);
        const property = this.check(node.property);
        const name = node.property.kind === 'string' ? node.property.value : 'element';
        if (object === 'int' || object === 'float' || object === 'bool' || object === 'nil') {
          throw typeError(`type ${goNames[object]} has no field ${name}`, node.position);
        }
        if (object === 'array' && known(property) && property !== 'int') {
          throw typeError(
            `array elements can only be selected using an integer (got ${goNames[property]})`,
            node.property.position,
          );
        }
        return 'unknown';
      }
      case 'unary': {
        const operand = this.check(node.operand);
        if (node.operator === '!') {
          if (known(operand) && operand !== 'bool')
            throw typeError(`invalid operation: ! (mismatched type ${goNames[operand]})`, node.position);
          return 'bool';
        }
        if (known(operand) && !numeric(operand)) {
          throw typeError(
            `invalid operation: ${node.operator} (mismatched type ${goNames[operand]})`,
            node.position,
          );
        }
        return operand;
      }
      case 'conditional': {
        const test = this.check(node.test);
        if (known(test) && test !== 'bool')
          throw typeError(`non-bool expression (type ${goNames[test]}) used as condition`, node.position);
        const consequent = this.check(node.consequent);
        const alternate = this.check(node.alternate);
        return consequent === alternate ? consequent : 'unknown';
      }
      case 'predicate': {
        const collection = this.check(node.collection);
        if (known(collection) && collection !== 'array') {
          throw typeError(
            `builtin ${node.name} takes only array (got ${goNames[collection]})`,
            node.position,
          );
        }
        const predicate = this.check(node.predicate);
        if (known(predicate) && predicate !== 'bool') {
          throw typeError(
            `predicate should return boolean (got ${goNames[predicate]})`,
            node.predicate.position,
          );
        }
        return 'bool';
      }
      case 'call':
        return checkCall(
          node.name,
          node.args.map((arg) => this.check(arg)),
          node.position,
        );
      case 'binary':
        return checkBinary(node.operator, this.check(node.left), this.check(node.right), node.position);
    }
  }
}

function checkBinary(operator: string, left: StaticType, right: StaticType, position: number): StaticType {
  const mismatch = () =>
    typeError(
      `invalid operation: ${operator} (mismatched types ${goNames[left]} and ${goNames[right]})`,
      position,
    );
  const bothKnown = known(left) && known(right);
  switch (operator) {
    case '==':
    case '!=':
      if (
        bothKnown &&
        left !== right &&
        left !== 'nil' &&
        right !== 'nil' &&
        !(numeric(left) && numeric(right))
      )
        throw mismatch();
      return 'bool';
    case '&&':
    case '||':
      if ((known(left) && left !== 'bool') || (known(right) && right !== 'bool')) throw mismatch();
      return 'bool';
    case '<':
    case '>':
    case '<=':
    case '>=':
      if (bothKnown && !(numeric(left) && numeric(right)) && !(left === 'string' && right === 'string'))
        throw mismatch();
      return 'bool';
    case 'in':
      if (right === 'nil') throw mismatch();
      if (known(right) && right !== 'array' && right !== 'map') {
        throw typeError(`operator "in" not defined on ${goNames[right]}`, position);
      }
      return 'bool';
    case '??':
      return left === 'nil' ? right : left === right ? left : 'unknown';
    case '+':
      if (left === 'string' && right === 'string') return 'string';
      if (bothKnown && !(numeric(left) && numeric(right))) throw mismatch();
      if (!bothKnown && (left === 'bool' || right === 'bool' || left === 'nil' || right === 'nil'))
        throw mismatch();
      return left === 'int' && right === 'int' ? 'int' : bothKnown ? 'float' : 'unknown';
    case '-':
    case '*':
      if ([left, right].some((type) => known(type) && !numeric(type))) throw mismatch();
      return left === 'int' && right === 'int' ? 'int' : bothKnown ? 'float' : 'unknown';
    case '/':
    case '**':
      if ([left, right].some((type) => known(type) && !numeric(type))) throw mismatch();
      return 'float';
    case '%':
      if ([left, right].some((type) => known(type) && type !== 'int')) throw mismatch();
      return 'int';
    default:
      throw typeError(`unknown operator ${operator}`, position);
  }
}

function checkCall(name: string, args: StaticType[], position: number): StaticType {
  const [minimum, maximum] = functionArity[name] ?? [0, 0];
  if (args.length < minimum) throw typeError(`not enough arguments to call ${name}`, position);
  if (args.length > maximum) throw typeError(`too many arguments to call ${name}`, position);
  const [first = 'unknown'] = args;
  const invalid = (type: StaticType) =>
    typeError(`invalid argument for ${name} (type ${goNames[type]})`, position);
  switch (name) {
    case 'len':
      if (known(first) && first !== 'string' && first !== 'array' && first !== 'map') throw invalid(first);
      return 'int';
    case 'abs':
      if (known(first) && !numeric(first)) throw invalid(first);
      return first;
    case 'max':
    case 'min':
      // Arguments of known type must be numbers or arrays (a lone unknown one that is neither is returned as is).
      for (const type of args) if (known(type) && !numeric(type) && type !== 'array') throw invalid(type);
      return args.length === 1 && first === 'array'
        ? 'unknown'
        : args.every((type) => type === 'int')
          ? 'int'
          : 'unknown';
    case 'isNaN':
    case 'isInf':
      // An int converts to the float64 parameter, as expr-lang does for Argo's func(float64) bool.
      if (known(first) && !numeric(first)) {
        throw typeError(`cannot use ${goNames[first]} as argument (type float64) to call ${name}`, position);
      }
      return 'bool';
    case 'asInt':
      return 'int';
    case 'asFloat':
      return 'float';
    case 'isNil':
      return 'bool';
    default:
      return 'unknown';
  }
}
