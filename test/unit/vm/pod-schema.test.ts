// Pods read back from Kubernetes go through plugin/vm/pods.ts podSchema: a listed object that is no Pod in the
// fields vmzones reads is refused naming the pod and the field, instead of being used as if it were one.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { listSelectedPods, PodSelectionError } from '../../../plugin/vm/pods.ts';
import { MemoryKube, readyPod } from '../kube/memory-kube.ts';

test('a listed pod whose container port is not a number is refused by name and field', async () => {
  const kube = new MemoryKube();
  const good = readyPod('vm', 'vmagent-0', { app: 'vmagent' }, { http: 8429 });
  const bad = readyPod('vm', 'vmagent-1', { app: 'vmagent' }, { http: 8429 });
  (bad.spec as { containers: { ports: unknown[] }[] }).containers[0]!.ports = [
    { name: 'http', containerPort: '8429' },
  ];
  await kube.create(good);
  await kube.create(bad);
  await assert.rejects(
    listSelectedPods(kube, 'vm', 'app=vmagent'),
    (e) =>
      e instanceof PodSelectionError &&
      /^pod vm\/vmagent-1: spec\.containers\.0\.ports\.0\.containerPort: /.test(e.message),
  );
  await kube.mergePatch(
    { apiVersion: 'v1', kind: 'Pod', namespace: 'vm', name: 'vmagent-1' },
    {
      spec: { containers: [{ name: 'main', ports: [{ name: 'http', containerPort: 8429 }] }] },
    },
  );
  const { active } = await listSelectedPods(kube, 'vm', 'app=vmagent');
  assert.deepEqual(
    active.map((p) => p.metadata?.name),
    ['vmagent-0', 'vmagent-1'],
  );
});
