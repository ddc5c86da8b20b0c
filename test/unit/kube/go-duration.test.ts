import assert from 'node:assert/strict';
import { test } from 'node:test';
import { formatGoDuration, GoDurationError, parseGoDuration } from '../../../plugin/kube/go-duration.ts';

test('parses the Go duration forms users write', () => {
  assert.equal(parseGoDuration('0'), 0n);
  assert.equal(parseGoDuration('17s'), 17_000_000_000n);
  assert.equal(parseGoDuration('1m30s'), 90_000_000_000n);
  assert.equal(parseGoDuration('1.5h'), 5_400_000_000_000n);
  assert.equal(parseGoDuration('500ms'), 500_000_000n);
  assert.equal(parseGoDuration('2us'), 2_000n);
  assert.equal(parseGoDuration('2µs'), 2_000n);
  assert.equal(parseGoDuration('-1m'), -60_000_000_000n);
  assert.equal(parseGoDuration('.5s'), 500_000_000n);
  assert.equal(parseGoDuration('2562047h47m16.854775807s'), (1n << 63n) - 1n);
});

test('rejects what Go rejects, naming the input', () => {
  for (const bad of ['', '10', 's', '1x', '1m 2s', '1.s.', '-', '2562047h47m16.854775808s']) {
    assert.throws(() => parseGoDuration(bad), GoDurationError, bad);
  }
  assert.throws(() => parseGoDuration('5parsecs'), {
    code: 'SpecInvalid',
    message: /"parsecs"/,
  });
});

test('formats like Duration.String', () => {
  assert.equal(formatGoDuration(0n), '0s');
  assert.equal(formatGoDuration(30_000_000_000n), '30s');
  assert.equal(formatGoDuration(90_000_000_000n), '1m30s');
  assert.equal(formatGoDuration(3_600_000_000_000n), '1h0m0s');
  assert.equal(formatGoDuration(1_500_000n), '1.5ms');
  assert.equal(formatGoDuration(-2_000n), '-2µs');
  assert.equal(formatGoDuration(1_000_000_001n), '1.000000001s');
});
