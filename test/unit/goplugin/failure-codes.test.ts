// The failure codes are a contract with users' alerts: the list is pinned literally here (a renamed or removed code
// breaks an alert silently, so this test must be edited on purpose), every error class of plugin/ carries a
// declared code, and the table in docs/step-plugin.md says the same as plugin/goplugin/failure-codes.ts.

import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { test } from 'node:test';
import { pathToFileURL } from 'node:url';
import {
  CodedError,
  failureCodeNames,
  failureCodeOf,
  failureCodes,
  isFailureCode,
} from '../../../plugin/goplugin/failure-codes.ts';

const root = resolve('plugin');

function* tsFiles(dir: string): Generator<string> {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) yield* tsFiles(path);
    else if (name.endsWith('.ts')) yield path;
  }
}

test('the failure codes, literally: add new ones, never rename or remove one', () => {
  assert.deepEqual(failureCodeNames, [
    'SpecInvalid',
    'NamespaceNotAllowed',
    'ClusterUnusable',
    'FlagInvalid',
    'LeaseHeld',
    'NotDrained',
    'NotRouted',
    'LastServingZone',
    'DrainBudget',
    'ReloadUnproven',
    'ServesReads',
    'OverridesRejected',
    'OverridesPruned',
    'ZoneFailed',
    'ReadyTimeout',
    'QueueNotDrained',
    'DataLost',
    'RestoreUnrouted',
    'HandoffTimeout',
    'QueryMismatch',
    'QueryUnanswered',
    'ServingZoneBehind',
    'RecordRefused',
    'StateInvalid',
    'ReadRoutingRefused',
    'VmagentSpecInvalid',
    'PodSelectionInvalid',
    'SecretRefInvalid',
    'ScrapeFailed',
    'MetricsMalformed',
    'ObjectMissing',
    'Forbidden',
    'ApiRejected',
    'ApiTransient',
    'GateConfigInvalid',
    'GateSetupInvalid',
    'ConditionInvalid',
    'ConditionFailed',
    'PluginStartFailed',
    'ProtocolError',
    'ConnectionClosed',
    'InputInvalid',
    'UsageInvalid',
    'Unexpected',
  ]);
  for (const code of failureCodeNames) {
    assert.match(code, /^[A-Z][A-Za-z]+$/, `${code}: one CamelCase word, usable as a label value`);
    assert.ok(failureCodes[code].length > 20, `${code} says what it means`);
  }
});

test('an error without a code is Unexpected; a coded one keeps its code; only declared codes count', () => {
  assert.equal(failureCodeOf(new Error('a bug')), 'Unexpected');
  assert.equal(failureCodeOf('thrown text'), 'Unexpected');
  assert.equal(failureCodeOf(new CodedError('LeaseHeld', 'held')), 'LeaseHeld');
  assert.equal(isFailureCode('LeaseHeld'), true);
  assert.equal(isFailureCode('leaseHeld'), false);
  assert.equal(isFailureCode('toString'), false, 'no inherited property is a code');
});

// Every `class X extends Y` of plugin/, by name, to follow each class up to Error or CodedError.
const classes = new Map<string, { parent: string; file: string }>();
for (const file of tsFiles(root)) {
  for (const m of readFileSync(file, 'utf8').matchAll(/\bclass\s+(\w+)\s+extends\s+(\w+)/g)) {
    classes.set(m[1] ?? '', { parent: m[2] ?? '', file: relative('.', file) });
  }
}
const builtinErrors = new Set(['Error', 'TypeError', 'RangeError', 'SyntaxError', 'AggregateError']);

function ancestry(name: string): string[] {
  const chain = [name];
  for (let at = classes.get(name); at !== undefined; at = classes.get(at.parent)) chain.push(at.parent);
  return chain;
}

test('every error class of plugin/ extends CodedError, so that it carries a declared code', async () => {
  const errorClasses = [...classes.keys()].filter((name) =>
    ancestry(name).some((n) => builtinErrors.has(n) || n === 'CodedError'),
  );
  assert.ok(errorClasses.length >= 30, `found only ${errorClasses.length} error classes: the scan is broken`);
  const uncoded = errorClasses.filter(
    (name) => name !== 'CodedError' && !ancestry(name).includes('CodedError'),
  );
  assert.deepEqual(
    uncoded.map((name) => `${classes.get(name)?.file}: ${name}`),
    [],
    'these extend Error directly: extend CodedError (plugin/goplugin/failure-codes.ts) with a declared code',
  );
  // The scan by name, checked against the classes themselves: each exported error class is a CodedError.
  const files = new Set(errorClasses.map((name) => classes.get(name)?.file ?? ''));
  let checked = 0;
  for (const file of files) {
    const module = (await import(pathToFileURL(resolve(file)).href)) as Record<string, unknown>;
    for (const [name, value] of Object.entries(module)) {
      if (typeof value !== 'function' || value === CodedError || !(value.prototype instanceof Error))
        continue;
      assert.ok(value.prototype instanceof CodedError, `${file}: ${name} is an Error but not a CodedError`);
      checked++;
    }
  }
  assert.ok(checked >= 30, `checked only ${checked} exported error classes`);
});

test('docs/step-plugin.md "Failure codes" lists every code once, in order, with its meaning and what to do', () => {
  const doc = readFileSync('docs/step-plugin.md', 'utf8');
  const section = doc.slice(doc.indexOf('\n## Failure codes\n'));
  assert.ok(section.length > 0 && doc.includes('\n## Failure codes\n'), 'the section exists');
  const rows = section
    .slice(0, section.indexOf('\n## ', 1))
    .split('\n')
    .filter((line) => line.startsWith('| `'))
    .map((line) => line.split(' | ').map((cell) => cell.replace(/^\| |\s*\|$/g, '')));
  assert.deepEqual(
    rows.map((cells) => cells[0]),
    failureCodeNames.map((code) => `\`${code}\``),
  );
  for (const [cell, meaning, action] of rows) {
    const code = (cell ?? '').replaceAll('`', '') as keyof typeof failureCodes;
    assert.equal(meaning, failureCodes[code], `${code}: the table's meaning is the declared one`);
    assert.ok((action ?? '').length > 10, `${code}: says what the user does`);
  }
});
