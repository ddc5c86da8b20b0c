// Several read balancers (a vmauth in the hub and one in zone-b's cluster, each balancing over every zone,
// docs/multicluster.md) on in-memory Kubernetes: a zone leaves reads only when no balancer routes to it, comes
// back in each that had it, and a rollback after an Abort puts it back in each too.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { clusterClients, podAccessAnnotation } from '../../../plugin/kube/cluster-registry.ts';
import { KubeError } from '../../../plugin/kube/objects.ts';
import type { RolloutView } from '../../../plugin/rollouts/types.ts';
import type { ReadBalancerConfig } from '../../../plugin/vm/read-backends.ts';
import { zonesRoutedByVMUser } from '../../../plugin/vm/vmuser.ts';
import { parseSpecDocument } from '../../../plugin/zones/spec.ts';
import { recordedBalancers, zoneState } from '../../../plugin/zones/state/zone-annotations.ts';
import { readBackends } from '../../../plugin/zones/step/target.ts';
import { FakeClock } from '../fake-clock.ts';
import { MemoryKube, readyPod } from '../kube/memory-kube.ts';
import {
  clusterSecret,
  ns,
  operatorVmauthLabels,
  rolloutObject,
  specDocument,
  threeZones,
  untilSettled,
  useVmauthFixture,
  zoneNames,
  zonePlugins,
} from './memory-cluster.ts';

const clock = new FakeClock();
const vmauth = useVmauthFixture(clock);

const vmApi = 'operator.victoriametrics.com/v1beta1';
const pods = [{ labelSelector: 'app=vmauth', port: 'http' }];

/** zone-b in cluster eu-b; reads through the hub's VMUser and through eu-b's own vmauth. */
function twoBalancerSpec(): string {
  const doc = JSON.parse(specDocument()) as Record<string, unknown> & {
    zones: Record<string, Record<string, string>>;
  };
  (doc.zones['zone-b'] as Record<string, string>).cluster = 'eu-b';
  doc.vmauth = [
    { vmuser: 'vmauth-read', pods, drainGracePeriod: '0s' },
    { cluster: 'eu-b', vmuser: 'vmauth-read', pods, drainGracePeriod: '0s' },
  ];
  return JSON.stringify(doc);
}

/** eu-b's VMUser reaches every zone by static URL (its operator cannot resolve another cluster's VMClusters). */
function localVMUser(zones: readonly string[]) {
  return {
    apiVersion: vmApi,
    kind: 'VMUser',
    metadata: { name: 'vmauth-read', namespace: ns, generation: 1 },
    spec: {
      targetRefs: [
        { static: { urls: zones.map((z) => `http://vmselect-vm-${z}.${ns}.svc.cluster.local:8481/`) } },
      ],
    },
    status: { updateStatus: 'operational', observedGeneration: 1 },
  };
}

function setup(remoteZones: readonly string[] = zoneNames) {
  const hub = threeZones(vmauth.port);
  const remote = new MemoryKube({ operator: true });
  const zoneB = hub.getStored('VMCluster', 'vm-zone-b');
  hub.objects.delete(`${vmApi}|VMCluster|${ns}|vm-zone-b`);
  remote.put({ ...zoneB, apiVersion: vmApi, kind: 'VMCluster' });
  remote.put(localVMUser(remoteZones));
  // Served by a VMAuth there too: the reconciler finds these pods through it once the Rollout is gone.
  remote.put({
    apiVersion: vmApi,
    kind: 'VMAuth',
    metadata: { name: 'vmauth', namespace: ns },
    spec: { selectAllByDefault: true },
  });
  remote.put(
    readyPod(ns, 'vmauth-0', { app: 'vmauth', ...operatorVmauthLabels('vmauth') }, { http: vmauth.port }),
  );
  const registration = clusterSecret('eu-b', 'https://eu-b.example:6443', { bearerToken: 'secret-token' });
  // The test's vmauth pod answers on 127.0.0.1: the admin says eu-b's pods are reachable.
  hub.put({
    ...registration,
    metadata: { ...registration.metadata, annotations: { [podAccessAnnotation]: 'direct' } },
  });
  hub.put(
    rolloutObject(
      'walk',
      { currentPodHash: 'rev-r', stableRS: 'rev-s', currentStepIndex: 0 },
      twoBalancerSpec(),
    ),
  );
  const clusters = clusterClients({ hub, namespace: 'argo-rollouts', connect: () => remote });
  const { plugin, reconciler } = zonePlugins(hub, clusters, { clock });
  const step = async (zone: string, action: string, operation: 'run' | 'abort' = 'run') => {
    const rollout = hub.getStored('Rollout', 'walk', 'argoproj.io/v1alpha1') as unknown as RolloutView;
    let result = await plugin[operation](rollout, {
      pluginName: 'vmzones/step',
      config: { zone, action },
      status: undefined,
    });
    for (let i = 0; i < 5 && result.phase === 'Running'; i++) {
      result = await plugin[operation](rollout, {
        pluginName: 'vmzones/step',
        config: { zone, action },
        status: undefined,
      });
    }
    return result;
  };
  const backends = readBackends(parseSpecDocument(twoBalancerSpec()), ns);
  const routed = (cluster: MemoryKube) =>
    zonesRoutedByVMUser(cluster.getStored('VMUser', 'vmauth-read').spec?.targetRefs, ns, backends);
  /** A new plugin process's reconciler (after a crash), over the same clusters. */
  const restarted = () => zonePlugins(hub, clusters, { clock }).reconciler;
  return { hub, remote, step, routed, reconciler, restarted };
}

test('a zone is taken out of every balancer that routes to it, changed, and put back into each', async () => {
  const { hub, remote, step, routed } = setup();
  const drained = await step('zone-a', 'drainReads');
  assert.equal(drained.phase, 'Successful', drained.message);
  assert.deepEqual(routed(hub), ['zone-b', 'zone-c'], 'out of the hub vmauth');
  assert.deepEqual(routed(remote), ['zone-b', 'zone-c'], "out of eu-b's vmauth");
  assert.match(drained.message ?? '', /VMUser vm\/vmauth-read, VMUser vm\/vmauth-read in cluster eu-b/);
  const lease = zoneState(hub.getStored('VMCluster', 'vm-zone-a')).lease;
  assert.deepEqual(
    recordedBalancers(lease?.reads as ReadBalancerConfig).map((b) => b.cluster),
    [undefined, 'eu-b'],
    'the lease names both balancers, so the reconciler can restore each without the Rollout',
  );

  const applied = await step('zone-a', 'apply');
  assert.equal(applied.phase, 'Successful', applied.message);
  const restored = await step('zone-a', 'restoreReads');
  assert.equal(restored.phase, 'Successful', restored.message);
  assert.deepEqual(routed(hub), ['zone-a', 'zone-b', 'zone-c']);
  assert.deepEqual(routed(remote), ['zone-a', 'zone-b', 'zone-c']);
  assert.equal(zoneState(hub.getStored('VMCluster', 'vm-zone-a')).lease, undefined, 'released');
});

test('apply refuses while any one balancer routes reads to the zone again', async () => {
  const { hub, remote, step } = setup();
  assert.equal((await step('zone-a', 'drainReads')).phase, 'Successful');
  // Someone (a sync of eu-b's vmauth) puts zone-a back there only.
  remote.put(localVMUser(zoneNames));
  const applied = await step('zone-a', 'apply');
  assert.equal(applied.phase, 'Failed');
  assert.match(applied.message ?? '', /serves reads again through VMUser vm\/vmauth-read in cluster eu-b/);
  assert.equal(
    hub.getStored('VMCluster', 'vm-zone-a').spec?.clusterVersion,
    'v1.151.0-cluster',
    'nothing was changed',
  );
});

test('the last zone of one balancer is refused before any balancer is touched', async () => {
  // eu-b's vmauth serves zone-b's reads only: draining zone-b would leave it nothing to serve.
  const { hub, remote, step, routed } = setup(['zone-b']);
  const drained = await step('zone-b', 'drainReads');
  assert.equal(drained.phase, 'Failed');
  assert.match(
    drained.message ?? '',
    /last zone that serves reads through VMUser vm\/vmauth-read in cluster eu-b/,
  );
  assert.deepEqual(routed(hub), ['zone-a', 'zone-b', 'zone-c'], 'the hub vmauth is untouched');
  assert.deepEqual(routed(remote), ['zone-b']);
  assert.equal(zoneState(remote.getStored('VMCluster', 'vm-zone-b')).lease, undefined, 'no lease taken');
});

test('an Abort after the change: the reconciler rolls the zone back and restores it in both balancers', async () => {
  const { hub, remote, step, routed, reconciler } = setup();
  assert.equal((await step('zone-b', 'drainReads')).phase, 'Successful');
  assert.equal((await step('zone-b', 'apply')).phase, 'Successful');
  assert.equal(remote.getStored('VMCluster', 'vm-zone-b').spec?.clusterVersion, 'v1.152.0-cluster');
  const aborted = await step('zone-b', 'apply', 'abort');
  assert.equal(aborted.phase, 'Successful', aborted.message);
  const progress = await untilSettled(reconciler);
  assert.deepEqual(Object.values(progress), ['done'], JSON.stringify(progress));
  assert.equal(remote.getStored('VMCluster', 'vm-zone-b').spec?.clusterVersion, 'v1.151.0-cluster');
  assert.deepEqual(routed(hub), ['zone-a', 'zone-b', 'zone-c']);
  assert.deepEqual(routed(remote), ['zone-a', 'zone-b', 'zone-c']);
  const state = zoneState(remote.getStored('VMCluster', 'vm-zone-b'));
  assert.equal(state.lease, undefined);
  assert.equal(state.handoff, undefined);
});

/** zone-b (in eu-b) drained from both balancers and changed by revision rev-r, then the walk ends without its steps. */
async function zoneBChanged() {
  const walk = setup();
  assert.equal((await walk.step('zone-b', 'drainReads')).phase, 'Successful');
  assert.equal((await walk.step('zone-b', 'apply')).phase, 'Successful');
  assert.equal(walk.remote.getStored('VMCluster', 'vm-zone-b').spec?.clusterVersion, 'v1.152.0-cluster');
  return walk;
}

/** What every ending must leave: zone-b routed by both balancers, released, out of maintenance, no handoff. */
function zoneBServing(walk: ReturnType<typeof setup>, progress: Record<string, string>): void {
  assert.deepEqual(Object.values(progress), ['done'], JSON.stringify(progress));
  assert.deepEqual(walk.routed(walk.hub), ['zone-a', 'zone-b', 'zone-c'], 'back in the hub vmauth');
  assert.deepEqual(walk.routed(walk.remote), ['zone-a', 'zone-b', 'zone-c'], "back in eu-b's vmauth");
  const state = zoneState(walk.remote.getStored('VMCluster', 'vm-zone-b'));
  assert.equal(state.lease, undefined, 'released');
  assert.equal(state.maintenance, undefined, 'out of maintenance');
  assert.equal(state.handoff, undefined);
}

test('promote --full with the zone drained from both balancers: it comes back in each with the change', async () => {
  const walk = await zoneBChanged();
  walk.hub.setStatus('Rollout', 'walk', { stableRS: 'rev-r', currentStepIndex: 9 });
  zoneBServing(walk, await untilSettled(walk.reconciler));
  assert.equal(walk.remote.getStored('VMCluster', 'vm-zone-b').spec?.clusterVersion, 'v1.152.0-cluster');
});

test('a Git revert to the stable template with the zone drained from both balancers: rolled back, back in each', async () => {
  const walk = await zoneBChanged();
  walk.hub.setStatus('Rollout', 'walk', { currentPodHash: 'rev-s', currentStepIndex: 9 });
  zoneBServing(walk, await untilSettled(walk.reconciler, 20));
  assert.equal(walk.remote.getStored('VMCluster', 'vm-zone-b').spec?.clusterVersion, 'v1.151.0-cluster');
  assert.equal(zoneState(walk.remote.getStored('VMCluster', 'vm-zone-b')).rollback, undefined);
});

test('a new revision with the zone drained from both balancers: it comes back in each until its turn', async () => {
  const walk = await zoneBChanged();
  walk.hub.setStatus('Rollout', 'walk', { currentPodHash: 'rev-r2', currentStepIndex: 0 });
  zoneBServing(walk, await untilSettled(walk.reconciler));
});

test('the Rollout deleted with the zone drained from both balancers: finished with its change, back in each', async () => {
  const walk = await zoneBChanged();
  walk.hub.objects.delete(`argoproj.io/v1alpha1|Rollout|${ns}|walk`);
  zoneBServing(walk, await untilSettled(walk.reconciler));
  assert.equal(walk.remote.getStored('VMCluster', 'vm-zone-b').spec?.clusterVersion, 'v1.152.0-cluster');
});

test('an HTTP 503 from the second balancer’s cluster while the zone comes back: it is never released before both route to it', async () => {
  const walk = await zoneBChanged();
  walk.hub.objects.delete(`argoproj.io/v1alpha1|Rollout|${ns}|walk`);
  walk.remote.failNextPatch.set(
    'VMUser',
    new KubeError('unavailable', 'patching VMUser vm/vmauth-read: HTTP 503', 503),
  );
  let progress: Record<string, string> = {};
  for (let pass = 0; pass < 10; pass++) {
    progress = await walk.reconciler.tick();
    const released = zoneState(walk.remote.getStored('VMCluster', 'vm-zone-b')).lease === undefined;
    if (released)
      assert.ok(walk.routed(walk.remote).includes('zone-b'), `pass ${pass}: released while eu-b has it out`);
    if (Object.values(progress).every((p) => p === 'done')) break;
  }
  assert.equal(walk.remote.failNextPatch.size, 0, 'the 503 was met');
  zoneBServing(walk, progress);
});

test('the plugin process crashes between the two balancers’ restores: the next process finishes the zone in both', async () => {
  const walk = await zoneBChanged();
  walk.hub.objects.delete(`argoproj.io/v1alpha1|Rollout|${ns}|walk`);
  // The write to eu-b's VMUser fails: the pass ends with the hub's balancer restored and eu-b's not.
  walk.remote.failNextPatch.set('VMUser', new KubeError('unavailable', 'HTTP 503', 503));
  await walk.reconciler.tick();
  const halfway = walk.routed(walk.hub).includes('zone-b') && !walk.routed(walk.remote).includes('zone-b');
  assert.ok(
    halfway,
    `one balancer restored, the other not: hub ${walk.routed(walk.hub)}, eu-b ${walk.routed(walk.remote)}`,
  );
  assert.notEqual(
    zoneState(walk.remote.getStored('VMCluster', 'vm-zone-b')).lease,
    undefined,
    'still leased',
  );
  zoneBServing(walk, await untilSettled(walk.restarted()));
});
