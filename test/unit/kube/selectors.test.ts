import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  equalitySelector,
  LabelSelectorError,
  matchesLabelSelector,
} from '../../../plugin/kube/selectors.ts';

const labels = { app: 'vmauth', tier: 'read' };

test('an empty selector matches everything, as the API server does', () => {
  assert.equal(matchesLabelSelector({}, labels), true);
  assert.equal(matchesLabelSelector({}, undefined), true);
});

test('matchLabels needs every pair', () => {
  assert.equal(matchesLabelSelector({ matchLabels: { app: 'vmauth' } }, labels), true);
  assert.equal(matchesLabelSelector({ matchLabels: { app: 'vmauth', tier: 'write' } }, labels), false);
  assert.equal(matchesLabelSelector({ matchLabels: { app: 'vmauth' } }, undefined), false);
});

test('matchExpressions follow In, NotIn, Exists and DoesNotExist', () => {
  const m = (operator: string, key: string, values?: string[]) =>
    matchesLabelSelector({ matchExpressions: [{ key, operator, ...(values ? { values } : {}) }] }, labels);
  assert.equal(m('In', 'tier', ['read', 'x']), true);
  assert.equal(m('In', 'tier', ['write']), false);
  assert.equal(m('In', 'missing', ['read']), false);
  assert.equal(m('NotIn', 'tier', ['write']), true);
  assert.equal(m('NotIn', 'tier', ['read']), false);
  assert.equal(m('NotIn', 'missing', ['read']), true, 'NotIn matches an absent key');
  assert.equal(m('Exists', 'app'), true);
  assert.equal(m('Exists', 'missing'), false);
  assert.equal(m('DoesNotExist', 'missing'), true);
  assert.equal(m('DoesNotExist', 'app'), false);
});

test('an unknown operator is an error, not a silent match', () => {
  assert.throws(
    () => matchesLabelSelector({ matchExpressions: [{ key: 'app', operator: 'Equals' }] }, labels),
    (err: unknown) => err instanceof LabelSelectorError && /"Equals" is not In, NotIn/.test(err.message),
  );
});

test('equality selectors are sorted by key', () => {
  assert.equal(equalitySelector({ b: '2', a: '1' }), 'a=1,b=2');
});
