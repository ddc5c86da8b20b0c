import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ReadRoutingError } from '../../../plugin/vm/read-backends.ts';
import { vmauthPodsOfBalancer, vmauthsServingUser } from '../../../plugin/vm/vmauth-pods.ts';
import { vmApiVersion } from '../../../plugin/vm/vmcluster.ts';
import { MemoryKube } from '../kube/memory-kube.ts';

const vmauth = (name: string, spec: Record<string, unknown>) => ({
  apiVersion: vmApiVersion,
  kind: 'VMAuth',
  metadata: { name, namespace: 'vm' },
  spec,
});
const vmuser = {
  apiVersion: vmApiVersion,
  kind: 'VMUser',
  metadata: { name: 'reads', namespace: 'vm', labels: { team: 'a' } },
  spec: {},
};

test('the VMAuths serving a VMUser: userSelector wins over selectAllByDefault; named ones must exist', async () => {
  const kube = new MemoryKube()
    .put(vmuser)
    .put(vmauth('all', { selectAllByDefault: true }))
    .put(vmauth('team-a', { userSelector: { matchLabels: { team: 'a' } } }))
    .put(vmauth('team-b', { selectAllByDefault: true, userSelector: { matchLabels: { team: 'b' } } }))
    .put(vmauth('none', {}));
  assert.deepEqual(await vmauthsServingUser(kube, 'vm', 'reads'), ['all', 'team-a']);
  assert.deepEqual(await vmauthsServingUser(kube, 'vm', 'reads', ['none']), ['none']);
  await assert.rejects(
    vmauthsServingUser(kube, 'vm', 'reads', ['gone']),
    (error: unknown) =>
      error instanceof ReadRoutingError && /VMAuth vm\/gone does not exist/.test(error.message),
  );
  await assert.rejects(
    vmauthsServingUser(new MemoryKube().put(vmuser), 'vm', 'reads'),
    /no VMAuth in namespace vm selects VMUser reads/,
  );
});

test("one pod selection for the step and the gate: the operator's four labels, no Secret read", async () => {
  const kube = new MemoryKube().put(vmuser).put(vmauth('main', { selectAllByDefault: true }));
  const pods = await vmauthPodsOfBalancer(kube, {
    ref: { kind: 'VMUser', namespace: 'vm', name: 'reads' },
    zones: [],
    reloadEvidence: 'required',
  });
  assert.deepEqual(pods, [
    {
      namespace: 'vm',
      labelSelector:
        'app.kubernetes.io/component=monitoring,app.kubernetes.io/instance=main,app.kubernetes.io/name=vmauth,managed-by=vm-operator',
      port: 'http',
    },
  ]);
  assert.deepEqual(
    kube.reads.filter((read) => read.startsWith('Secret')),
    [],
    'the operator config Secret holds every VMUser credential',
  );
});
