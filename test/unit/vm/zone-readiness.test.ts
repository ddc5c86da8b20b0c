// A zone is operational only with no storage pod's change deferred (plugin/vm/zone-readiness.ts), read on the
// in-memory API with objects shaped as the operator and Kubernetes leave them:
// - the VMCluster/VLCluster spec fields maintenanceInsertNodeIDs, maintenanceSelectNodeIDs (node ID = pod ordinal)
//   and rollingUpdateStrategy (default OnDelete): operator v0.74.1 api/operator/v1beta1/vmcluster_types.go:580-597,
//   api/operator/v1/vlcluster_types.go:565-597, internal/controller/operator/factory/build/defaults.go:150-153;
// - since v0.75.1 (#2665, its release notes): with OnDelete, storage pods in both lists are not waited for and
//   their spec changes are deferred while the object is `operational` (updateStatus, observedGeneration as ever);
//   v0.75.1's source is neither on the Go module proxy (403) nor in the stored operator snapshot (master d0d258c8,
//   2026-08-21, before #2665), so no newer status field is assumed (docs/victoriametrics.md);
// - the storage StatefulSet `vmstorage-<name>` (`<name>-vmstorage` with useLegacyNaming) and its pods' labels:
//   api/operator/v1beta1/vmextra_types.go:145-188 (ClusterSelectorLabels, ClusterPrefixedName/SuffixedName);
// - a pod not yet updated carries a `controller-revision-hash` other than the StatefulSet's status.updateRevision,
//   which is how the operator itself tells (reconcile/statefulset.go:253-300, 412-437); currentRevision is left
//   as it was under OnDelete until every pod is updated (patchSTSCurrentRevision, :231-251).

import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { KubeObject } from '../../../plugin/kube/objects.ts';
import { podRevisionLabel, zoneReadiness } from '../../../plugin/vm/zone-readiness.ts';
import { awaitOperational } from '../../../plugin/zones/moves/await-operational.ts';
import { FakeClock } from '../fake-clock.ts';
import { MemoryKube, readyPod } from '../kube/memory-kube.ts';

const vmApi = 'operator.victoriametrics.com/v1beta1';

function vmcluster(vmstorage: Record<string, unknown>, extra: Record<string, unknown> = {}) {
  return {
    apiVersion: vmApi,
    kind: 'VMCluster',
    metadata: { name: 'vm-zone-a', namespace: 'vm', generation: 4 },
    spec: { vmstorage: { replicaCount: 3, ...vmstorage }, ...extra },
    status: { updateStatus: 'operational', observedGeneration: 4, reason: '' },
  } satisfies KubeObject & { apiVersion: string; kind: string };
}

/** The storage StatefulSet as Kubernetes reports it after the operator wrote generation 7 of it. */
function statefulSet(name: string, status: { observedGeneration: number; updateRevision: string }) {
  return {
    apiVersion: 'apps/v1',
    kind: 'StatefulSet',
    metadata: { name, namespace: 'vm', generation: 7 },
    spec: { replicas: 3, updateStrategy: { type: 'OnDelete' } },
    // Under OnDelete, Kubernetes leaves currentRevision at the old template until the operator patches it.
    status: { ...status, currentRevision: `${name}-old`, replicas: 3, readyReplicas: 3 },
  };
}

function storagePods(kube: MemoryKube, sts: string, component: string, revisions: string[]) {
  revisions.forEach((revision, ordinal) => {
    kube.put(
      readyPod(
        'vm',
        `${sts}-${ordinal}`,
        {
          'app.kubernetes.io/name': component,
          'app.kubernetes.io/instance': 'vm-zone-a',
          'app.kubernetes.io/component': 'monitoring',
          'managed-by': 'vm-operator',
          [podRevisionLabel]: `${sts}-${revision}`,
        },
        { http: 8482 },
      ),
    );
  });
}

/** A VMCluster's storage StatefulSet at update revision `-new`, and its pods at the given revisions. */
function vmstorageWorld(revisions: string[], kube = new MemoryKube()): MemoryKube {
  kube.put(
    statefulSet('vmstorage-vm-zone-a', { observedGeneration: 7, updateRevision: 'vmstorage-vm-zone-a-new' }),
  );
  storagePods(kube, 'vmstorage-vm-zone-a', 'vmstorage', revisions);
  return kube;
}

const inMaintenance = { maintenanceInsertNodeIDs: [1], maintenanceSelectNodeIDs: [1] };

test('no node in both maintenance lists: the operator status decides alone, without reading pods', async () => {
  const kube = new MemoryKube();
  for (const storage of [
    {},
    // In one list only, the operator still waits for the pod (it defers only those in both).
    { maintenanceInsertNodeIDs: [1], maintenanceSelectNodeIDs: [2] },
    // RollingUpdate: Kubernetes updates the pods and the operator waits for every one (waitForStatefulSetReady).
    { ...inMaintenance, rollingUpdateStrategy: 'RollingUpdate' },
  ]) {
    const r = await zoneReadiness(kube, vmcluster(storage));
    assert.equal(r.state, 'ready', JSON.stringify(storage));
    assert.equal(r.message, 'VMCluster vm/vm-zone-a is operational at generation 4');
    assert.deepEqual(r.deferredPods, []);
  }
  assert.deepEqual(kube.reads, [], 'no StatefulSet or Pod read');
});

test('a storage pod in maintenance still at the old revision keeps an operational VMCluster from being ready, named with why', async () => {
  const kube = vmstorageWorld(['new', 'old', 'new']);

  const r = await zoneReadiness(kube, vmcluster(inMaintenance));
  assert.equal(r.state, 'progressing');
  assert.equal(
    r.message,
    'VMCluster vm/vm-zone-a is operational at generation 4, but the change is deferred on 1 of 3 vmstorage pods: ' +
      'vmstorage-vm-zone-a-1 (node ID 1 is in maintenanceInsertNodeIDs and maintenanceSelectNodeIDs: with ' +
      'rollingUpdateStrategy OnDelete the operator (>= v0.75.1) defers its change until it leaves maintenance; ' +
      'at revision vmstorage-vm-zone-a-old, not the update revision vmstorage-vm-zone-a-new)',
  );
  assert.deepEqual(r.deferredPods, [
    {
      pod: 'vmstorage-vm-zone-a-1',
      nodeId: 1,
      revision: 'vmstorage-vm-zone-a-old',
      inMaintenance: true,
      why: r.deferredPods[0]?.why,
    },
  ]);
  assert.deepEqual(kube.reads, [
    'StatefulSet vm/vmstorage-vm-zone-a',
    'list Pod vm app.kubernetes.io/component=monitoring,app.kubernetes.io/instance=vm-zone-a,app.kubernetes.io/name=vmstorage,managed-by=vm-operator',
  ]);
});

test('once the pod in maintenance runs the update revision, the zone is ready and the message says it was checked', async () => {
  const kube = vmstorageWorld(['new', 'new', 'new']);
  const r = await zoneReadiness(kube, vmcluster(inMaintenance));
  assert.equal(r.state, 'ready');
  assert.equal(
    r.message,
    'VMCluster vm/vm-zone-a is operational at generation 4; every vmstorage pod (3, node IDs 1 in maintenance ' +
      'included) runs the update revision vmstorage-vm-zone-a-new',
  );
});

test('a pod behind outside maintenance is named too; an unobserved StatefulSet generation waits', async () => {
  const kube = vmstorageWorld(['old', 'new', 'new']);
  const behind = await zoneReadiness(kube, vmcluster(inMaintenance));
  assert.equal(behind.state, 'progressing');
  assert.deepEqual(
    behind.deferredPods.map((p) => [p.pod, p.nodeId, p.inMaintenance]),
    [['vmstorage-vm-zone-a-0', 0, false]],
  );
  assert.match(
    behind.message,
    /vmstorage-vm-zone-a-0 \(node ID 0: at revision vmstorage-vm-zone-a-old, not the update revision vmstorage-vm-zone-a-new\)/,
  );

  // The operator wrote the StatefulSet (generation 7) and Kubernetes has not computed its revision yet: the update
  // revision it shows is the old template's, so no pod can be judged by it.
  kube.put(
    statefulSet('vmstorage-vm-zone-a', { observedGeneration: 6, updateRevision: 'vmstorage-vm-zone-a-old' }),
  );
  const unobserved = await zoneReadiness(kube, vmcluster(inMaintenance));
  assert.equal(unobserved.state, 'progressing');
  assert.match(
    unobserved.message,
    /waiting for the StatefulSet controller to observe StatefulSet vm\/vmstorage-vm-zone-a generation 7 \(observed: 6\)$/,
  );
});

test('a VLCluster reads vlstorage-<name>; useLegacyNaming names <name>-vmstorage; a missing StatefulSet is an error', async () => {
  const kube = new MemoryKube().put(
    statefulSet('vlstorage-vm-zone-a', { observedGeneration: 7, updateRevision: 'vlstorage-vm-zone-a-new' }),
  );
  storagePods(kube, 'vlstorage-vm-zone-a', 'vlstorage', ['new', 'old']);
  const logs = {
    ...vmcluster({}),
    apiVersion: 'operator.victoriametrics.com/v1',
    kind: 'VLCluster',
    spec: { vlstorage: { replicaCount: 2, ...inMaintenance } },
  };
  const r = await zoneReadiness(kube, logs);
  assert.equal(r.state, 'progressing');
  assert.match(
    r.message,
    /^VLCluster vm\/vm-zone-a is operational at generation 4, but the change is deferred on 1 of 2 vlstorage pods: vlstorage-vm-zone-a-1 \(node ID 1 is in maintenance/,
  );

  kube.put(
    statefulSet('vm-zone-a-vmstorage', { observedGeneration: 7, updateRevision: 'vm-zone-a-vmstorage-new' }),
  );
  storagePods(kube, 'vm-zone-a-vmstorage', 'vmstorage', ['new', 'new', 'new']);
  const legacy = await zoneReadiness(kube, vmcluster(inMaintenance, { useLegacyNaming: true }));
  assert.equal(legacy.state, 'ready');

  await assert.rejects(
    zoneReadiness(new MemoryKube(), vmcluster(inMaintenance)),
    (error: Error & { code?: string }) => error.code === 'ObjectMissing',
  );
});

test('not operational yet: the operator status answers, nothing else is read', async () => {
  const kube = new MemoryKube();
  const expanding = {
    ...vmcluster(inMaintenance),
    status: { updateStatus: 'expanding', observedGeneration: 4 },
  };
  const r = await zoneReadiness(kube, expanding);
  assert.equal(r.state, 'progressing');
  assert.match(r.message, /waiting for updateStatus operational \(now: expanding\)/);
  assert.deepEqual(kube.reads, []);
});

test("the step's await-operational move takes the same check: it waits naming the deferred pod", async () => {
  const kube = vmstorageWorld(['new', 'old', 'new'], new MemoryKube().put(vmcluster(inMaintenance)));
  const clock = new FakeClock();
  const deps = {
    kube,
    clusters: undefined as never,
    now: clock.now,
    sleep: clock.sleep,
    inCallWaitMs: 0,
  };
  const ref = { apiVersion: vmApi, kind: 'VMCluster', namespace: 'vm', name: 'vm-zone-a' };
  const waiting = await awaitOperational(deps, ref, 4);
  assert.equal(waiting.kind, 'waiting');
  assert.match(
    waiting.message,
    /the change is deferred on 1 of 3 vmstorage pods: vmstorage-vm-zone-a-1 \(node ID 1/,
  );

  storagePods(kube, 'vmstorage-vm-zone-a', 'vmstorage', ['new', 'new', 'new']);
  const done = await awaitOperational(deps, ref, 4);
  assert.equal(done.kind, 'done');
});
