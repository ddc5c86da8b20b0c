import assert from 'node:assert/strict';
import { test } from 'node:test';
import { failureDigest, firstReason } from '../../../scripts/failure-digest.ts';

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

test('the first reason: the first error line of a digest, cut to one short line; none when there is no error line', () => {
  assert.equal(
    firstReason([
      'test at test/e2e/multicluster/remote-cluster.test.ts:227:1',
      '✖ a dead port: the step is retried (6000ms)',
      '  Error: sandbox part "eu-b-kube-apiserver" failed to start: process exited',
      '      at waitFor (test/sandbox/processes.ts:213:11)',
    ]),
    'Error: sandbox part "eu-b-kube-apiserver" failed to start: process exited',
  );
  assert.equal(
    firstReason(['--- FAIL: TestA (0.1s)', '    a_test.go:10: want 1, got 2']),
    'a_test.go:10: want 1, got 2',
  );
  assert.equal(firstReason([`  Error: ${'y'.repeat(200)}`]), `Error: ${'y'.repeat(153)}…`);
  assert.equal(firstReason(['test at x.ts:1:1', '✖ a test (1ms)']), undefined);
});
