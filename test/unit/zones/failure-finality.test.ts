// Each failure code declares whether it is final (a human must act) or may clear by itself
// (plugin/goplugin/failure-codes.ts failureFinality), and docs/step-plugin.md's "Failure codes" table says the same in
// its "final" column; the reconciler acts on it (a final restore failure: a Warning and the zone blocked).

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { failureCodeNames, failureFinality, isFinalCode } from '../../../plugin/goplugin/failure-codes.ts';

test('every code declares its finality, and the docs table says the same', () => {
  assert.deepEqual(Object.keys(failureFinality), [...failureCodeNames], 'one entry per code, in order');
  const doc = readFileSync('docs/step-plugin.md', 'utf8');
  const section = doc.slice(doc.indexOf('\n## Failure codes\n'));
  const rows = section
    .slice(0, section.indexOf('\n## ', 1))
    .split('\n')
    .filter((line) => line.startsWith('| `'))
    .map((line) => line.split(' | ').map((cell) => cell.replace(/^\| |\s*\|$/g, '')));
  assert.equal(rows.length, failureCodeNames.length);
  for (const cells of rows) {
    const code = (cells[0] ?? '').replaceAll('`', '') as keyof typeof failureFinality;
    assert.equal(cells[3], isFinalCode(code) ? 'yes' : 'no', `${code}: the "final" column`);
  }
});

test('the waits that may clear are not final; what a human must fix is', () => {
  for (const code of [
    'LeaseHeld',
    'DrainBudget',
    'ReloadUnproven',
    'ApiTransient',
    'HandoffTimeout',
  ] as const) {
    assert.equal(isFinalCode(code), false, code);
  }
  for (const code of [
    'SpecInvalid',
    'RecordRefused',
    'RestoreUnrouted',
    'Forbidden',
    'Unexpected',
  ] as const) {
    assert.equal(isFinalCode(code), true, code);
  }
});
