import assert from 'node:assert/strict';
import { test } from 'node:test';
import { failureDigest } from '../../../scripts/failure-digest.ts';

test('the digest is the spec reporter’s failing-tests section, with the first stack frames of each error', () => {
  const output = [
    '✔ a passing test (10ms)',
    '✖ promote --full during a pause (5000ms)',
    'ℹ fail 1',
    '✖ failing tests:',
    '',
    'test at test/e2e/step/endings.test.ts:141:1',
    '✖ promote --full during a pause (5000ms)',
    '  AssertionError [ERR_ASSERTION]: failed reads through vmauth: 503',
    '      at withProbes (test/e2e/step/endings.test.ts:120:12)',
    '      at frame2',
    '      at frame3',
    '      at frame4',
    '      at frame5',
  ].join('\n');
  assert.deepEqual(failureDigest(output), [
    'test at test/e2e/step/endings.test.ts:141:1',
    '✖ promote --full during a pause (5000ms)',
    '  AssertionError [ERR_ASSERTION]: failed reads through vmauth: 503',
    '      at withProbes (test/e2e/step/endings.test.ts:120:12)',
    '      at frame2',
    '      at frame3',
  ]);
});

test('Go test output: each --- FAIL line with what follows it', () => {
  const output = [
    '=== RUN   TestA',
    '--- FAIL: TestA (0.1s)',
    '    a_test.go:10: want 1, got 2',
    'FAIL',
  ].join('\n');
  assert.deepEqual(failureDigest(output), [
    '--- FAIL: TestA (0.1s)',
    '    a_test.go:10: want 1, got 2',
    'FAIL',
  ]);
});

test('output with neither: its last lines, long ones cut, at most 40 lines', () => {
  const output = Array.from({ length: 100 }, (_, i) => (i === 99 ? 'x'.repeat(300) : `line ${i}`)).join('\n');
  const digest = failureDigest(output);
  assert.equal(digest.length, 40);
  assert.equal(digest[0], 'line 60');
  assert.equal(digest.at(-1), `${'x'.repeat(240)}…`);
});
