// Pratt parser for the supported subset of expr-lang, following its parser (parser/parser.go): the same
// precedences and associativity, chained comparisons (`a < b < c` is `a < b && b < c`), `not in`,
// right-associative `**`, `?:` at the lowest level, `??` that may not mix with other operators unparenthesised,
// predicates with `#` / `#index` / `.field`. Everything else that expr-lang accepts is refused by name.

import type { BinaryOperator, Node, PredicateName, UnaryOperator } from './ast.ts';
import { nameError, syntaxError, unsupported } from './errors.ts';
import { isAlphabetic, isAlphaNumeric, type Token, tokenize } from './lexer.ts';
import { maxInt } from './values.ts';

interface OperatorInfo {
  readonly precedence: number;
  readonly rightAssociative?: boolean;
}

// expr-lang's parser/operator/operator.go.
const binaryOperators: Record<string, OperatorInfo> = {
  '|': { precedence: 0 },
  or: { precedence: 10 },
  '||': { precedence: 10 },
  and: { precedence: 15 },
  '&&': { precedence: 15 },
  '==': { precedence: 20 },
  '!=': { precedence: 20 },
  '<': { precedence: 20 },
  '>': { precedence: 20 },
  '>=': { precedence: 20 },
  '<=': { precedence: 20 },
  in: { precedence: 20 },
  matches: { precedence: 20 },
  contains: { precedence: 20 },
  startsWith: { precedence: 20 },
  endsWith: { precedence: 20 },
  '..': { precedence: 25 },
  '+': { precedence: 30 },
  '-': { precedence: 30 },
  '*': { precedence: 60 },
  '/': { precedence: 60 },
  '%': { precedence: 60 },
  '**': { precedence: 100, rightAssociative: true },
  '^': { precedence: 100, rightAssociative: true },
  '??': { precedence: 500 },
};

const unaryOperators: Record<string, { precedence: number; operator: UnaryOperator }> = {
  not: { precedence: 50, operator: '!' },
  '!': { precedence: 50, operator: '!' },
  '-': { precedence: 90, operator: '-' },
  '+': { precedence: 90, operator: '+' },
};

const spelledOperators: Record<string, BinaryOperator> = { or: '||', and: '&&', '^': '**' };
const comparisons = new Set(['<', '>', '<=', '>=']);
const negatable = new Set(['in', 'matches', 'contains', 'startsWith', 'endsWith']);
const unsupportedOperators: Record<string, string> = {
  '|': 'the pipe operator |',
  matches: 'the operator matches',
  contains: 'the operator contains',
  startsWith: 'the operator startsWith',
  endsWith: 'the operator endsWith',
  '..': 'the range operator ..',
};

/** Functions callable in conditions: expr-lang builtins we implement, and those Argo Rollouts adds. */
export const supportedFunctions = new Set([
  'len',
  'abs',
  'max',
  'min',
  'isNaN',
  'isInf',
  'asInt',
  'asFloat',
  'isNil',
  'default',
]);
const predicateFunctions = new Set<string>(['all', 'any', 'none', 'one']);
// expr-lang builtins outside the subset (builtin/builtin.go), refused as "not supported" rather than unknown.
// biome-ignore format: one list, easier to compare with expr-lang's
const unsupportedFunctions = new Set([
  'filter', 'map', 'find', 'findIndex', 'findLast', 'findLastIndex', 'count', 'sum', 'groupBy', 'sortBy', 'reduce',
  'type', 'ceil', 'floor', 'round', 'int', 'float', 'string', 'trim', 'trimPrefix', 'trimSuffix', 'upper', 'lower',
  'split', 'splitAfter', 'replace', 'repeat', 'join', 'indexOf', 'lastIndexOf', 'hasPrefix', 'hasSuffix', 'mean',
  'median', 'toJSON', 'fromJSON', 'toBase64', 'fromBase64', 'now', 'duration', 'date', 'timezone', 'first', 'last',
  'get', 'take', 'keys', 'values', 'toPairs', 'fromPairs', 'reverse', 'uniq', 'concat', 'flatten', 'sort',
  'bitand', 'bitor', 'bitxor', 'bitnand', 'bitnot', 'bitshl', 'bitshr', 'bitushr',
]);

/** The expression's only variable, as Argo Rollouts binds it. */
export const variables = new Set(['result']);

export function parse(source: string): Node {
  return new Parser(tokenize(source)).parseAll();
}

class Parser {
  private readonly tokens: Token[];
  private index = 0;
  private predicateDepth = 0;

  constructor(tokens: Token[]) {
    this.tokens = tokens;
  }

  private get current(): Token {
    return this.tokens[this.index] as Token;
  }

  private next(): void {
    if (this.index < this.tokens.length - 1) this.index++;
  }

  private is(kind: Token['kind'], value?: string): boolean {
    return this.current.kind === kind && (value === undefined || this.current.value === value);
  }

  private expect(kind: Token['kind'], value?: string): void {
    if (!this.is(kind, value)) throw this.unexpected();
    this.next();
  }

  private unexpected(): Error {
    if (this.current.kind === 'eof')
      return syntaxError('unexpected end of expression', this.current.position);
    const shown = this.current.kind === 'string' ? JSON.stringify(this.current.value) : this.current.value;
    return syntaxError(`unexpected token ${shown}`, this.current.position);
  }

  parseAll(): Node {
    const node = this.parseExpression(0);
    if (this.is('operator', ';')) throw unsupported('a sequence of expressions (;)', this.current.position);
    if (!this.is('eof')) throw this.unexpected();
    return node;
  }

  private parseExpression(precedence: number): Node {
    if (precedence === 0 && this.is('operator', 'let')) throw unsupported('let', this.current.position);
    if (precedence === 0 && this.is('operator', 'if')) throw unsupported('if … else', this.current.position);
    let left = this.parsePrimary();
    let previousOperator = '';
    while (this.is('operator')) {
      let token = this.current;
      let negate = false;
      if (token.value === 'not') {
        const following = this.tokens[this.index + 1];
        if (following === undefined || following.kind !== 'operator' || !negatable.has(following.value)) {
          throw syntaxError(
            `unexpected token ${following?.value || 'end of expression'} after not`,
            token.position,
          );
        }
        if ((binaryOperators[following.value]?.precedence ?? -1) < precedence) break;
        this.next();
        token = this.current;
        negate = true;
      }
      const info = binaryOperators[token.value];
      if (info === undefined || info.precedence < precedence) break;
      const what = unsupportedOperators[token.value];
      if (what !== undefined) throw unsupported(what, token.position);
      this.next();
      if (previousOperator === '??' && token.value !== '??') {
        throw syntaxError(
          `Operator (${token.value}) and coalesce expressions (??) cannot be mixed. Wrap either by parentheses.`,
          token.position,
        );
      }
      const operator = (spelledOperators[token.value] ?? token.value) as BinaryOperator;
      if (comparisons.has(operator)) {
        left = this.parseComparison(left, operator, token.position, info.precedence);
      } else {
        const right = this.parseExpression(
          info.rightAssociative === true ? info.precedence : info.precedence + 1,
        );
        left = { kind: 'binary', operator, left, right, position: token.position };
        if (negate) left = { kind: 'unary', operator: '!', operand: left, position: token.position };
      }
      previousOperator = token.value;
    }
    return precedence === 0 ? this.parseConditional(left) : left;
  }

  /** `a < b <= c` means `a < b && b <= c`, as in expr-lang. */
  private parseComparison(left: Node, operator: BinaryOperator, position: number, precedence: number): Node {
    let root: Node | undefined;
    for (;;) {
      const right = this.parseExpression(precedence + 1);
      const comparison: Node = { kind: 'binary', operator, left, right, position };
      root =
        root === undefined
          ? comparison
          : { kind: 'binary', operator: '&&', left: root, right: comparison, position };
      left = right;
      if (!this.is('operator') || !comparisons.has(this.current.value)) return root;
      operator = this.current.value as BinaryOperator;
      position = this.current.position;
      this.next();
    }
  }

  private parseConditional(node: Node): Node {
    while (this.is('operator', '?')) {
      const position = this.current.position;
      this.next();
      let consequent: Node;
      let alternate: Node;
      if (this.is('operator', ':')) {
        this.next();
        consequent = node;
        alternate = this.parseExpression(0);
      } else {
        consequent = this.parseExpression(0);
        this.expect('operator', ':');
        alternate = this.parseExpression(0);
      }
      node = { kind: 'conditional', test: node, consequent, alternate, position };
    }
    return node;
  }

  private parsePrimary(): Node {
    const token = this.current;
    if (token.kind === 'operator') {
      const unary = unaryOperators[token.value];
      if (unary !== undefined) {
        this.next();
        const operand = this.parseExpression(unary.precedence);
        return this.parsePostfix({
          kind: 'unary',
          operator: unary.operator,
          operand,
          position: token.position,
        });
      }
      if (this.predicateDepth > 0 && (token.value === '#' || token.value === '.')) {
        let name = '';
        if (token.value === '#') {
          this.next();
          if (this.is('identifier')) {
            name = this.current.value;
            this.next();
          }
        }
        // expr-lang 1.17 (Argo Rollouts 1.10) knows only `#` here; #index and #acc are newer or for reduce.
        if (name !== '') throw syntaxError(`unknown pointer #${name}`, token.position);
        return this.parsePostfix({ kind: 'pointer', name, position: token.position });
      }
      if (token.value === '#')
        throw syntaxError('# can only be used inside a predicate such as all(…, # > 0)', token.position);
      if (token.value === '::') throw unsupported('::', token.position);
    }
    if (token.kind === 'bracket' && token.value === '(') {
      this.next();
      const node = this.parseExpression(0);
      if (this.is('operator', ';')) throw unsupported('a sequence of expressions (;)', this.current.position);
      this.expect('bracket', ')');
      return this.parsePostfix(node);
    }
    return this.parseSecondary();
  }

  private parseSecondary(): Node {
    const token = this.current;
    let node: Node;
    switch (token.kind) {
      case 'identifier':
        this.next();
        if (token.value === 'true' || token.value === 'false') {
          return { kind: 'bool', value: token.value === 'true', position: token.position };
        }
        if (token.value === 'nil') return { kind: 'nil', position: token.position };
        if (this.is('bracket', '(')) {
          node = this.parseCall(token);
        } else {
          if (token.value === '$env') throw unsupported('$env', token.position);
          if (!variables.has(token.value)) throw nameError(token.value, token.position);
          node = { kind: 'identifier', name: token.value, position: token.position };
        }
        break;
      case 'number':
        this.next();
        return parseNumber(token);
      case 'string':
        this.next();
        node = { kind: 'string', value: token.value, position: token.position };
        break;
      default:
        if (this.is('bracket', '[')) {
          node = this.parseArray();
        } else if (this.is('bracket', '{')) {
          throw unsupported('a map literal { … }', token.position);
        } else {
          throw this.unexpected();
        }
    }
    return this.parsePostfix(node);
  }

  private parseCall(token: Token): Node {
    const name = token.value;
    if (predicateFunctions.has(name)) {
      this.expect('bracket', '(');
      const collection = this.parseExpression(0);
      this.expect('operator', ',');
      const predicate = this.parsePredicate();
      if (this.is('operator', ',')) this.next();
      this.expect('bracket', ')');
      return {
        kind: 'predicate',
        name: name as PredicateName,
        collection,
        predicate,
        position: token.position,
      };
    }
    if (unsupportedFunctions.has(name)) throw unsupported(`the function ${name}()`, token.position);
    if (!supportedFunctions.has(name)) throw nameError(name, token.position);
    this.expect('bracket', '(');
    const args: Node[] = [];
    while (!this.is('bracket', ')')) {
      if (args.length > 0) {
        this.expect('operator', ',');
        if (this.is('bracket', ')')) break;
      }
      args.push(this.parseExpression(0));
    }
    this.expect('bracket', ')');
    return { kind: 'call', name, args, position: token.position };
  }

  private parsePredicate(): Node {
    const braces = this.is('bracket', '{');
    if (braces) this.next();
    this.predicateDepth++;
    const node = this.parseExpression(0);
    this.predicateDepth--;
    if (this.is('operator', ';')) throw unsupported('a sequence of expressions (;)', this.current.position);
    if (braces) this.expect('bracket', '}');
    return node;
  }

  private parseArray(): Node {
    const position = this.current.position;
    this.expect('bracket', '[');
    const items: Node[] = [];
    while (!this.is('bracket', ']')) {
      if (items.length > 0) {
        this.expect('operator', ',');
        if (this.is('bracket', ']')) break;
      }
      items.push(this.parseExpression(0));
    }
    this.expect('bracket', ']');
    return { kind: 'array', items, position };
  }

  private parsePostfix(node: Node): Node {
    for (;;) {
      const token = this.current;
      let optional = false;
      let property: Node;
      if (token.kind === 'operator' && (token.value === '.' || token.value === '?.')) {
        optional = token.value === '?.';
        this.next();
        if (optional && this.is('bracket', '[')) {
          property = this.parseIndex();
        } else {
          const name = this.current;
          const isName = name.kind === 'identifier' || (name.kind === 'operator' && isIdentifier(name.value));
          if (!isName) throw syntaxError('expected name', name.position);
          this.next();
          if (this.is('bracket', '(')) throw unsupported('method calls', name.position);
          property = { kind: 'string', value: name.value, position: name.position };
        }
      } else if (token.kind === 'bracket' && token.value === '[') {
        property = this.parseIndex();
      } else {
        break;
      }
      // As in expr-lang, a chain started by `?.` extends over every member access that follows it.
      const inChain = node.kind === 'chain';
      const object = node.kind === 'chain' ? node.node : node;
      node = { kind: 'member', object, property, optional, position: token.position };
      if (inChain || optional) node = { kind: 'chain', node, position: token.position };
    }
    return node;
  }

  /** `[index]`; slices (`[a:b]`) are outside the subset. */
  private parseIndex(): Node {
    const open = this.current;
    this.expect('bracket', '[');
    if (this.is('operator', ':')) throw unsupported('slices [a:b]', open.position);
    const index = this.parseExpression(0);
    if (this.is('operator', ':')) throw unsupported('slices [a:b]', open.position);
    this.expect('bracket', ']');
    return index;
  }
}

function isIdentifier(value: string): boolean {
  const chars = [...value];
  return chars.length > 0 && isAlphabetic(chars[0] as string) && chars.every(isAlphaNumeric);
}

/** Number literals as expr-lang reads them: ints are Go int (64-bit), anything with `.` or `e` is float64. */
function parseNumber(token: Token): Node {
  const text = token.value.replaceAll('_', '');
  const lower = text.toLowerCase();
  const position = token.position;
  const integer = (digits: string, radix: bigint, prefix: string): Node => {
    let value = 0n;
    for (const digit of digits.slice(prefix.length))
      value = value * radix + BigInt(Number.parseInt(digit, Number(radix)));
    if (digits.length === prefix.length || value > maxInt)
      throw syntaxError(`invalid integer literal: ${token.value}`, position);
    return { kind: 'int', value, position };
  };
  if (lower.startsWith('0x')) return integer(lower, 16n, '0x');
  if (lower.includes('.') || lower.includes('e')) {
    const value = Number(text);
    if (!/^(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/.test(lower) || !Number.isFinite(value)) {
      throw syntaxError(`invalid float literal: ${token.value}`, position);
    }
    return { kind: 'float', value, position };
  }
  if (lower.startsWith('0b')) return integer(lower, 2n, '0b');
  if (lower.startsWith('0o')) return integer(lower, 8n, '0o');
  return integer(lower, 10n, '');
}
