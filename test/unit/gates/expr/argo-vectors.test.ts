// Checks the evaluator against what the real expr-lang and Argo Rollouts' utils/evaluate answered for the
// same expressions (argo-vectors.json, recorded by argo-vectors.go from argo-vectors.cases.json).

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { evaluateMetricConditions } from '../../../../plugin/gates/expr/conditions.ts';
import { ExprError } from '../../../../plugin/gates/expr/errors.ts';
import { compileExpression, evaluateCondition } from '../../../../plugin/gates/expr/evaluate.ts';
import { type ExprValue, goTypeName } from '../../../../plugin/gates/expr/values.ts';

interface Outcome {
  expr?: string;
  success?: string;
  failure?: string;
  result?: string;
  type?: string;
  value?: string;
  phase?: string;
  error?: string;
}

const vectors = JSON.parse(readFileSync(new URL('./argo-vectors.json', import.meta.url), 'utf8')) as {
  generatedWith: string;
  results: Record<string, unknown>;
  values: Outcome[];
  conditions: Outcome[];
  metrics: Outcome[];
};

function resultOf(name: string | undefined): unknown {
  return name === undefined ? null : vectors.results[name];
}

/** Go's rendering of a value, as argo-vectors.go prints it. */
function render(value: ExprValue): string {
  if (value === null) return 'nil';
  if (typeof value === 'number') {
    if (Number.isNaN(value)) return 'NaN';
    if (value === Infinity) return '+Inf';
    if (value === -Infinity) return '-Inf';
  }
  if (
    typeof value === 'number' ||
    typeof value === 'bigint' ||
    typeof value === 'boolean' ||
    typeof value === 'string'
  ) {
    return String(value);
  }
  return JSON.stringify(value);
}

function sameNumber(goRendering: string, ours: string): boolean {
  const parse = (text: string) => (text === '+Inf' ? Infinity : text === '-Inf' ? -Infinity : Number(text));
  return Object.is(parse(goRendering), parse(ours)) || parse(goRendering) === parse(ours);
}

test('the vectors were recorded with the expr-lang and Argo Rollouts versions the controller uses', () => {
  assert.match(vectors.generatedWith, /github\.com\/expr-lang\/expr@v1\.17\./);
  assert.match(vectors.generatedWith, /github\.com\/argoproj\/argo-rollouts@v1\.10\./);
  assert.ok(vectors.values.length > 150);
});

test('values: same type and value as expr-lang, or an error where it errs', () => {
  for (const vector of vectors.values) {
    const source = vector.expr as string;
    const label = `${source} (result ${vector.result ?? 'nil'})`;
    if (vector.error !== undefined) {
      assert.throws(
        () => compileExpression(source).evaluate(resultOf(vector.result)),
        ExprError,
        `${label} should fail like: ${vector.error}`,
      );
      continue;
    }
    const value = compileExpression(source).evaluate(resultOf(vector.result));
    const goType = vector.type === 'int64' ? 'int' : vector.type;
    assert.equal(goTypeName(value), goType === '<nil>' ? '<nil>' : goType, label);
    if (goType === 'float64')
      assert.ok(
        sameNumber(vector.value as string, render(value)),
        `${label}: ${render(value)} vs ${vector.value}`,
      );
    else assert.equal(render(value), vector.value, label);
  }
});

test('conditions: the same bool as Argo Rollouts EvalCondition, or an error where it errs', () => {
  for (const vector of vectors.conditions) {
    const source = vector.expr as string;
    const label = `${source} (result ${vector.result ?? 'nil'})`;
    if (vector.error !== undefined) {
      assert.throws(
        () => evaluateCondition(source, resultOf(vector.result)),
        ExprError,
        `${label} should fail like: ${vector.error}`,
      );
      if (vector.error.startsWith('expected bool, but got')) {
        assert.throws(
          () => evaluateCondition(source, resultOf(vector.result)),
          { message: vector.error },
          label,
        );
      }
      continue;
    }
    assert.equal(String(evaluateCondition(source, resultOf(vector.result))), vector.value, label);
  }
});

test('metrics: the same phase as Argo Rollouts EvaluateResult for success and failure conditions', () => {
  for (const vector of vectors.metrics) {
    const conditions = {
      ...(vector.success === undefined ? {} : { successCondition: vector.success }),
      ...(vector.failure === undefined ? {} : { failureCondition: vector.failure }),
    };
    const label = JSON.stringify({ ...conditions, result: vector.result });
    const outcome = evaluateMetricConditions(resultOf(vector.result), conditions);
    assert.equal(outcome.phase, vector.phase, label);
    if (vector.error !== undefined) {
      // Same prefix as Argo's message; ours adds the column of the problem.
      const prefix = vector.error.replace(/": .*$/, '": ');
      assert.ok(outcome.message?.startsWith(prefix), `${label}: ${outcome.message}`);
      if (vector.error.includes('metric result is nil or empty')) assert.equal(outcome.message, vector.error);
    }
  }
});
