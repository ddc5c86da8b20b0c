import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  NamespaceAllowanceError,
  namespaceAllowed,
  parseNamespaceAllowance,
  requireNamespaceAllowed,
} from '../../../plugin/kube/allowed-namespaces.ts';

test('without the flag only the own namespace is allowed; the flag adds names or *', () => {
  const none = parseNamespaceAllowance(['/opt/vmzones/lib/vmzones.mjs']);
  assert.equal(namespaceAllowed(none, 'apps', 'apps'), true);
  assert.equal(namespaceAllowed(none, 'apps', 'kube-system'), false);
  const some = parseNamespaceAllowance([
    'x.mjs',
    '--allowed-namespaces=monitoring, vm-shared',
    '--allowed-namespaces=ops',
  ]);
  assert.deepEqual(some, { all: false, extra: ['monitoring', 'ops', 'vm-shared'] });
  assert.equal(namespaceAllowed(some, 'apps', 'vm-shared'), true);
  assert.equal(namespaceAllowed(some, 'apps', 'kube-system'), false);
  assert.deepEqual(parseNamespaceAllowance(['--allowed-namespaces=*']), { all: true });
});

test('a bad flag is an error naming it; a refusal names both namespaces and the way to allow it', () => {
  assert.throws(() => parseNamespaceAllowance(['--allowed-namespaces']), { code: 'FlagInvalid' });
  assert.throws(
    () => parseNamespaceAllowance(['--allowed-namespaces=Bad_Name']),
    (error: unknown) =>
      error instanceof NamespaceAllowanceError && /"Bad_Name" is not a namespace name/.test(error.message),
  );
  assert.throws(
    () =>
      requireNamespaceAllowed(
        parseNamespaceAllowance([]),
        { describe: 'AnalysisRun apps/run-1', namespace: 'apps' },
        'kube-system',
        'Secret token',
      ),
    /Secret token is in namespace kube-system, outside namespace apps of AnalysisRun apps\/run-1; .*--allowed-namespaces=kube-system/,
  );
});
