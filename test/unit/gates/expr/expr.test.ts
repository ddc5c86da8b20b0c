import assert from 'node:assert/strict';
import { test } from 'node:test';
import { evaluateMetricConditions } from '../../../../plugin/gates/expr/conditions.ts';
import { ExprError, type ExprErrorKind } from '../../../../plugin/gates/expr/errors.ts';
import { compileExpression, evaluateCondition } from '../../../../plugin/gates/expr/evaluate.ts';
import { tokenize } from '../../../../plugin/gates/expr/lexer.ts';
import { parse } from '../../../../plugin/gates/expr/parser.ts';

function failsWith(source: string, kind: ExprErrorKind, message: RegExp, result: unknown = { x: 1 }) {
  assert.throws(
    () => compileExpression(source).evaluate(result),
    (error: unknown) => {
      assert.ok(error instanceof ExprError, `${source}: ${String(error)}`);
      assert.equal(error.kind, kind, `${source}: ${error.message}`);
      assert.match(error.message, message, source);
      return true;
    },
  );
}

const figures = {
  verdict: 'drained',
  drained: true,
  pendingDataBytes: 0,
  onDiskPendingBytes: 0,
  pods: { 'vm/agent-0': { reachable: true, pendingDataBytes: 0, retries: 3 } },
  list: [{ ready: true }, { ready: true }],
};

test('the conditions people write for the gates', () => {
  assert.equal(evaluateCondition('result.drained', figures), true);
  assert.equal(
    evaluateCondition('result.verdict == "drained" && result.pendingDataBytes == 0', figures),
    true,
  );
  assert.equal(
    evaluateCondition('result.pendingDataBytes <= 1024 and not result.dataLost ?? true', figures),
    false,
  );
  assert.equal(evaluateCondition('result.pods["vm/agent-0"].retries < 5', figures), true);
  assert.equal(evaluateCondition('all(result.list, .ready) && len(result.pods) == 1', figures), true);
  assert.equal(evaluateCondition('result.missing?.deeper == nil', figures), true);
  assert.equal(evaluateCondition('"pods" in result', figures), true);
});

test('refuses expr-lang features outside the subset by name, never evaluating them', () => {
  const cases: [string, RegExp][] = [
    ['result.name contains "a"', /the operator contains is not supported/],
    ['result.name matches "^a"', /the operator matches/],
    ['result.name startsWith "a"', /the operator startsWith/],
    ['result.name not endsWith "a"', /the operator endsWith/],
    ['filter(result.list, .ready)', /the function filter\(\)/],
    ['count(result.list, .ready) > 1', /the function count\(\)/],
    ['upper("a") == "A"', /the function upper\(\)/],
    ['1..3', /the range operator \.\./],
    ['[1, 2, 3][1:2]', /slices \[a:b\]/],
    ['[1, 2, 3][:2]', /slices \[a:b\]/],
    ['let x = 1; x > 0', /let is not supported/],
    ['if true { 1 } else { 2 }', /if … else/],
    ['{a: 1}.a == 1', /a map literal/],
    ['result.list | len() > 0', /the pipe operator \|/],
    ['result.name.trim() == ""', /method calls/],
    ['$env.result == nil', /\$env/],
    ['(1; 2) == 2', /a sequence of expressions/],
    ['1 == 1; 2', /a sequence of expressions/],
    ['::upper("a")', /::/],
    ['reduce(result.list, #acc, 0)', /the function reduce\(\)/],
  ];
  for (const [source, message] of cases) {
    failsWith(source, 'unsupported', message);
  }
  failsWith('"abc"[0] == "a"', 'unsupported', /indexing a string/, {});
});

test('reports syntax errors with their column', () => {
  const cases: [string, RegExp][] = [
    ['result.x ==', /unexpected end of expression/],
    ['result.x @ 1', /unrecognized character: U\+0040 '@' \(column 10\)/],
    ['"open', /literal not terminated \(column 1\)/],
    ['1x == 1', /bad number syntax/],
    ['(1 + 2', /unexpected end of expression/],
    ['1 + * 2', /unexpected token \* \(column 5\)/],
    ['nil ?? 1 + 2', /cannot be mixed/],
    ['# > 1', /# can only be used inside a predicate/],
    ['all([1], #index > 0)', /unknown pointer #index/],
    ['result.x not 1', /unexpected token 1 after not/],
    ['"\\q"', /unable to unescape string/],
    ['/* never closed', /unclosed comment/],
    ['99999999999999999999 > 1', /invalid integer literal/],
    ['1e999 > 1', /invalid float literal/],
    ['result.', /expected name/],
  ];
  for (const [source, message] of cases) failsWith(source, 'syntax', message);
});

test('unknown names are errors, not nil', () => {
  failsWith('drained == true', 'name', /unknown name drained \(column 1\)/);
  failsWith('sqrt(4) == 2', 'name', /unknown name sqrt/);
});

test('type errors are found before evaluation, even in a branch that would be skipped', () => {
  failsWith('true || 1 + "a" == "1a"', 'type', /invalid operation: \+ \(mismatched types int and string\)/);
  failsWith('result.x == 1 || len(3) > 0', 'type', /invalid argument for len \(type int\)/);
  failsWith('false && !5', 'type', /invalid operation: ! \(mismatched type int\)/);
  failsWith('result.x > 0 ? 1 : 2 > "a"', 'type', /mismatched types int and string/);
  failsWith('result.x', 'type', /type float64 has no field x/, 42);
});

test('runtime errors name the problem', () => {
  failsWith('result.list[9].ready', 'runtime', /index out of range: 9 \(array length is 2\)/, figures);
  failsWith('result.nope.deeper', 'runtime', /cannot fetch deeper from <nil>/, figures);
  failsWith('result.pendingDataBytes % 2 == 0', 'runtime', /invalid operation: float64 % int/, figures);
  failsWith('isNaN(result.verdict)', 'runtime', /isNaN needs a float64 argument, got string/, figures);
  failsWith('asInt("12x") > 0', 'runtime', /strconv.ParseInt: parsing "12x": invalid syntax/, figures);
  assert.throws(
    () => evaluateCondition('result.pendingDataBytes', figures),
    /expected bool, but got float64/,
  );
});

test('JSON numbers are float64, literals are int, and both compare as numbers', () => {
  assert.equal(compileExpression('result.n').evaluate({ n: 3 }), 3);
  assert.equal(compileExpression('result.n + 1').evaluate({ n: 3 }), 4);
  assert.equal(compileExpression('len(result.s) + 1').evaluate({ s: 'ab' }), 3n);
  assert.equal(evaluateCondition('result.n == 3', { n: 3 }), true);
  assert.equal(evaluateCondition('isNaN(result.n)', { n: Number.NaN }), true);
  assert.equal(evaluateCondition('isInf(result.n) && result.n > 0', { n: Infinity }), true);
  assert.equal(evaluateCondition('result.n == 3', { n: 3n }), true);
});

test('takes only JSON-shaped results', () => {
  assert.throws(
    () => evaluateCondition('result.when == nil', { when: new Date(0) }),
    /result.when: a object value cannot be used/,
  );
  assert.throws(
    () => evaluateCondition('result.f == nil', { f: () => 1 }),
    /result.f: a function value cannot be used/,
  );
  assert.equal(evaluateCondition('result.gone == nil', { gone: undefined }), true);
  assert.equal(evaluateCondition('"gone" in result', { gone: undefined }), false);
});

test('cannot reach JavaScript internals through member access', () => {
  for (const source of [
    'result.constructor',
    'result["__proto__"]',
    'result.toString',
    'result.pods.hasOwnProperty',
  ]) {
    assert.equal(compileExpression(source).evaluate(figures), null, source);
  }
  failsWith('result.list.length', 'runtime', /invalid operation: int\(string\)/, figures);
  failsWith(
    'result.constructor.constructor("return 1")()',
    'unsupported',
    /method calls|not supported/,
    figures,
  );
});

test('tokenizes like expr-lang: operators, words, numbers and comments', () => {
  const tokens = tokenize('a?.b ?? c not in [1..2] // x\n && d**2 != .5e1').map(
    (token) => `${token.kind}:${token.value}`,
  );
  assert.deepEqual(tokens, [
    'identifier:a',
    'operator:?.',
    'identifier:b',
    'operator:??',
    'identifier:c',
    'operator:not',
    'operator:in',
    'bracket:[',
    'number:1',
    'operator:..',
    'number:2',
    'bracket:]',
    'operator:&&',
    'identifier:d',
    'operator:**',
    'number:2',
    'operator:!=',
    'number:.5e1',
    'eof:',
  ]);
});

test('parses precedence as expr-lang does', () => {
  const shape = (source: string): string => {
    const walk = (node: ReturnType<typeof parse>): string => {
      switch (node.kind) {
        case 'binary':
          return `(${walk(node.left)} ${node.operator} ${walk(node.right)})`;
        case 'unary':
          return `(${node.operator}${walk(node.operand)})`;
        case 'conditional':
          return `(${walk(node.test)} ? ${walk(node.consequent)} : ${walk(node.alternate)})`;
        case 'int':
          return String(node.value);
        case 'identifier':
          return node.name;
        case 'bool':
          return String(node.value);
        default:
          return node.kind;
      }
    };
    return walk(parse(source));
  };
  assert.equal(shape('1 + 2 * 3 ** 2 ** 1'), '(1 + (2 * (3 ** (2 ** 1))))');
  assert.equal(shape('-2 ** 2'), '(-(2 ** 2))');
  assert.equal(shape('!true == false'), '((!true) == false)');
  assert.equal(shape('not 1 + 1'), '((!1) + 1)');
  assert.equal(shape('not 1 * 2'), '(!(1 * 2))');
  assert.equal(shape('true || false && true'), '(true || (false && true))');
  assert.equal(shape('1 < 2 <= 3'), '((1 < 2) && (2 <= 3))');
  assert.equal(shape('1 in 2 == true'), '((1 in 2) == true)');
  assert.equal(shape('true ? 1 : false ? 2 : 3'), '(true ? 1 : (false ? 2 : 3))');
  assert.equal(shape('1 not in 2'), '(!(1 in 2))');
  assert.equal(shape('result ?? 1 ?? 2'), '((result ?? 1) ?? 2)');
});

test('metric conditions: unsupported or broken conditions are Error measurements, never a pass', () => {
  const broken = evaluateMetricConditions(figures, { successCondition: 'result.verdict contains "drain"' });
  assert.equal(broken.phase, 'Error');
  assert.equal(
    broken.message,
    'could not evaluate successCondition "result.verdict contains "drain"": the operator contains is not supported ' +
      'in vmzones conditions (a subset of expr-lang) (column 16)',
  );
  assert.equal(broken.error?.kind, 'unsupported');

  const failing = evaluateMetricConditions(figures, {
    successCondition: 'result.drained',
    failureCondition: 'result.pods[7]',
  });
  assert.equal(failing.phase, 'Error');
  assert.match(
    failing.message ?? '',
    /could not evaluate failureCondition "result.pods\[7\]": cannot use int as a key/,
  );

  assert.deepEqual(evaluateMetricConditions(figures, { successCondition: 'result.drained' }), {
    phase: 'Successful',
  });
  assert.deepEqual(
    evaluateMetricConditions({ ...figures, drained: false }, { successCondition: 'result.drained' }),
    {
      phase: 'Failed',
    },
  );
  assert.deepEqual(evaluateMetricConditions(figures, {}), { phase: 'Successful' });
});
