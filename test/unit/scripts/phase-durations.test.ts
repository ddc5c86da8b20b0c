// scripts/phase-durations.json orders a fresh machine's first `npm test` (longest first): it must name every
// end-to-end phase there is (a file, or a part of a split one: scripts/test-files.ts), and nothing else, or a new
// long file would start last again.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { filePhases } from '../../../scripts/test-files.ts';

const repoRoot = fileURLToPath(new URL('../../../', import.meta.url)).replace(/\/$/, '');

test('the committed phase durations name every sandbox and end-to-end phase (a file or a part of one) and the two other phases', () => {
  const durations = JSON.parse(
    readFileSync(join(repoRoot, 'scripts/phase-durations.json'), 'utf8'),
  ) as Record<string, unknown>;
  for (const [phase, seconds] of Object.entries(durations))
    assert.ok(typeof seconds === 'number' && seconds > 0, `${phase}: ${String(seconds)}`);
  assert.deepEqual(
    Object.keys(durations).sort(),
    [
      'conformance',
      ...filePhases('test/e2e').map((p) => p.name),
      ...filePhases('test/sandbox').map((p) => p.name),
      'unit tests',
    ].sort(),
  );
});
