// scripts/test-files.ts splits the longest end-to-end files into phases by test name: each part must name tests
// that exist, no test may be in two parts, and the part without a pattern must keep every other test, or a split
// would quietly drop a scenario from npm test.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { fileParts, filePhases } from '../../../scripts/test-files.ts';

const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));

/** The names of a file's tests: the first string of each `test(` and the second of each `scenario(` call. */
function testNames(file: string): string[] {
  const source = readFileSync(join(repoRoot, file), 'utf8');
  const literal = String.raw`\s*'((?:[^'\\]|\\.)*)'`;
  const names = [
    ...[...source.matchAll(new RegExp(String.raw`\btest\(${literal}`, 'g'))].map((m) => m[1] ?? ''),
    ...[...source.matchAll(new RegExp(String.raw`\bscenario\(${literal},${literal}`, 'g'))].map(
      (m) => m[2] ?? '',
    ),
  ];
  return names;
}

for (const [file, parts] of Object.entries(fileParts)) {
  test(`${file}: every test in exactly one part`, () => {
    const names = testNames(file);
    assert.ok(names.length >= parts.length, `${file} has ${names.length} tests: ${names.join(' | ')}`);
    const patterns = parts.flatMap((p) => (p.tests === undefined ? [] : [new RegExp(p.tests)]));
    assert.equal(parts.length - patterns.length, 1, 'exactly one part runs the tests no other part names');
    for (const [i, pattern] of patterns.entries())
      assert.ok(
        names.some((n) => pattern.test(n)),
        `part ${i} (${pattern.source}) names no test of ${file}`,
      );
    for (const name of names) {
      const matching = patterns.filter((p) => p.test(name));
      assert.ok(matching.length <= 1, `"${name}" is in ${matching.length} parts`);
    }
    assert.ok(
      names.some((n) => !patterns.some((p) => p.test(n))),
      'the rest part runs at least one test',
    );
  });
}

test('a split file becomes one phase per part; the rest part skips what the others run', () => {
  const phases = filePhases('test/e2e').filter((p) => p.file === 'test/e2e/step/endings.test.ts');
  assert.deepEqual(
    phases.map((p) => [p.name, p.select]),
    [
      ['test/e2e/step/endings.test.ts [new revisions]', ['--test-name-pattern=^a new revision']],
      ['test/e2e/step/endings.test.ts [promote, revert, delete]', ['--test-skip-pattern=^a new revision']],
    ],
  );
  assert.ok(
    filePhases('test/e2e').some((p) => p.name === 'test/e2e/cli/status.test.ts' && p.select.length === 0),
  );
});
