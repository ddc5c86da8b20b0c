// Zones in registered clusters (docs/multicluster.md) on in-memory Kubernetes: the hub holds the Rollout, the
// VMUser and the cluster Secrets; zone-b and zone-c live in clusters of their own. Every write must land where its
// object lives, and an unknown or unreachable cluster must stop the step with its name, never pass.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { silentLogger } from '../../../plugin/goplugin/index.ts';
import { clusterClients } from '../../../plugin/kube/cluster-registry.ts';
import { KubeError, type KubeObjects } from '../../../plugin/kube/objects.ts';
import type { RolloutView } from '../../../plugin/rollouts/types.ts';
import type { ReadBalancerConfig } from '../../../plugin/vm/read-backends.ts';
import { zonesRoutedByVMUser } from '../../../plugin/vm/vmuser.ts';
import type { ZoneQueueRequest } from '../../../plugin/zones/moves/queue-check.ts';
import { ZoneReconciler } from '../../../plugin/zones/reconciler/reconciler.ts';
import { parseSpecDocument } from '../../../plugin/zones/spec.ts';
import { zoneState } from '../../../plugin/zones/state/zone-annotations.ts';
import { readBackends } from '../../../plugin/zones/step/target.ts';
import { FakeClock } from '../fake-clock.ts';
import { MemoryKube } from '../kube/memory-kube.ts';
import {
  clusterSecret,
  clusterSpecDocument,
  ns,
  rolloutObject,
  threeZones,
  untilSettled,
  useVmauthFixture,
  zonePlugins,
} from './memory-cluster.ts';

const clock = new FakeClock();
const vmauth = useVmauthFixture(clock);

const vmApi = 'operator.victoriametrics.com/v1beta1';
const token = 'remote-token-do-not-show';

const spec = (clusterOf: Record<string, string | undefined> = { 'zone-b': 'eu-b', 'zone-c': 'eu-c' }) =>
  clusterSpecDocument(clusterOf);

/** Moves a zone's VMCluster from the hub into a cluster of its own. */
function moveOut(hub: MemoryKube, zone: string): MemoryKube {
  const remote = new MemoryKube({ operator: true });
  const object = hub.getStored('VMCluster', `vm-${zone}`);
  hub.objects.delete(`${vmApi}|VMCluster|${ns}|vm-${zone}`);
  remote.put({ ...object, apiVersion: vmApi, kind: 'VMCluster' });
  return remote;
}

function register(hub: MemoryKube, name: string): void {
  hub.put(clusterSecret(name, `https://${name}.example:6443`, { bearerToken: token }));
}

function setup(options: { spec?: string; unreachable?: string } = {}) {
  const hub = threeZones(vmauth.port);
  const remotes: Record<string, MemoryKube> = {
    'eu-b': moveOut(hub, 'zone-b'),
    'eu-c': moveOut(hub, 'zone-c'),
  };
  register(hub, 'eu-b');
  register(hub, 'eu-c');
  hub.put(
    rolloutObject(
      'walk',
      { currentPodHash: 'rev-r', stableRS: 'rev-s', currentStepIndex: 0 },
      options.spec ?? spec(),
    ),
  );
  const dead: KubeObjects = {
    get: () => Promise.reject(new KubeError('unavailable', 'reading: connect ECONNREFUSED 127.0.0.1:1')),
    list: () => Promise.reject(new KubeError('unavailable', 'listing: connect ECONNREFUSED 127.0.0.1:1')),
    mergePatch: () =>
      Promise.reject(new KubeError('unavailable', 'patching: connect ECONNREFUSED 127.0.0.1:1')),
    create: () => Promise.reject(new KubeError('unavailable', 'creating: connect ECONNREFUSED 127.0.0.1:1')),
  };
  const clusters = clusterClients({
    hub,
    namespace: 'argo-rollouts',
    connect: (r) => (r.name === options.unreachable ? dead : (remotes[r.name] as MemoryKube)),
  });
  const { plugin, reconciler } = zonePlugins(hub, clusters, { clock });
  const step = (zone: string, action: string, operation: 'run' | 'abort' = 'run') =>
    plugin[operation](hub.getStored('Rollout', 'walk', 'argoproj.io/v1alpha1') as unknown as RolloutView, {
      pluginName: 'vmzones/step',
      config: { zone, action },
      status: undefined,
    });
  const routed = () =>
    zonesRoutedByVMUser(
      hub.getStored('VMUser', 'vmauth-read').spec?.targetRefs,
      ns,
      readBackends(parseSpecDocument(spec()), ns),
    );
  return { hub, remotes, clusters, step, routed, reconciler };
}

/** Makes zone-c an object of another kind in eu-c, and routes the hub's VMUser to it by that kind's crd ref. */
function zoneCAs(
  hub: MemoryKube,
  c: MemoryKube,
  object: { apiVersion: string; kind: string; name: string; spec: Record<string, unknown> },
  targetKind: string,
): void {
  c.objects.clear();
  c.put({
    apiVersion: object.apiVersion,
    kind: object.kind,
    metadata: { name: object.name, namespace: ns, generation: 1 },
    spec: object.spec,
    status: { updateStatus: 'operational', observedGeneration: 1 },
  });
  const crd = (kind: string, name: string) => ({ crd: { kind, name, namespace: ns } });
  hub.put({
    ...hub.getStored('VMUser', 'vmauth-read'),
    apiVersion: vmApi,
    kind: 'VMUser',
    spec: {
      targetRefs: [
        crd('VMCluster/vmselect', 'vm-zone-a'),
        crd('VMCluster/vmselect', 'vm-zone-b'),
        crd(targetKind, object.name),
      ],
    },
  });
}

async function untilDone(step: () => ReturnType<ReturnType<typeof setup>['step']>) {
  let result = await step();
  for (let i = 0; i < 5 && result.phase === 'Running'; i++) result = await step();
  return result;
}

test("a remote zone's lease, change and rollback record live on its VMCluster in its cluster; reads in the hub", async () => {
  const { hub, remotes, step, routed } = setup();
  const drained = await untilDone(() => step('zone-b', 'drainReads'));
  assert.equal(drained.phase, 'Successful', drained.message);
  assert.deepEqual(routed(), ['zone-a', 'zone-c'], "the hub's VMUser no longer routes to zone-b");
  const applied = await step('zone-b', 'apply');
  assert.equal(applied.phase, 'Successful', applied.message);
  const b = remotes['eu-b'] as MemoryKube;
  assert.equal(b.getStored('VMCluster', 'vm-zone-b').spec?.clusterVersion, 'v1.152.0-cluster');
  const state = zoneState(b.getStored('VMCluster', 'vm-zone-b'));
  assert.equal(state.lease?.revision, 'rev-r');
  assert.equal(state.rollback?.phase, 'applied');
  assert.equal(
    (state.lease?.reads as ReadBalancerConfig | undefined)?.cluster,
    undefined,
    'the reads stay in the controller cluster',
  );
  assert.equal(
    hub.patches.filter((p) => p.ref.startsWith('VMCluster')).length,
    0,
    'no VMCluster write in the hub',
  );
  assert.equal((remotes['eu-c'] as MemoryKube).patches.length, 0, 'zone-c untouched');
  const restored = await untilDone(() => step('zone-b', 'restoreReads'));
  assert.equal(restored.phase, 'Successful', restored.message);
  assert.deepEqual(routed(), ['zone-a', 'zone-b', 'zone-c']);
  assert.equal(zoneState(b.getStored('VMCluster', 'vm-zone-b')).lease, undefined, 'released');
});

test("a remote zone's vminsertHosts go into its lease and handoff, and the reconciler's queue check gets them", async () => {
  const doc = JSON.parse(spec()) as { zones: Record<string, Record<string, unknown>> };
  (doc.zones['zone-c'] as Record<string, unknown>).vminsertHosts = ['127.0.0.3'];
  const { hub, remotes, step, clusters } = setup({ spec: JSON.stringify(doc) });
  assert.equal((await untilDone(() => step('zone-c', 'drainReads'))).phase, 'Successful');
  assert.equal((await step('zone-c', 'apply')).phase, 'Successful');
  const c = remotes['eu-c'] as MemoryKube;
  assert.deepEqual(zoneState(c.getStored('VMCluster', 'vm-zone-c')).lease?.vminsertHosts, ['127.0.0.3']);
  const asked: ZoneQueueRequest[] = [];
  const reconciler = new ZoneReconciler({
    clock,
    kube: hub,
    clusters,
    logger: silentLogger,
    queueCheck: async (_clients, request) => {
      asked.push(request);
      return { verdict: 'pass', message: 'drained' };
    },
  });
  hub.setStatus('Rollout', 'walk', { abort: true });
  await untilSettled(reconciler);
  assert.equal(c.getStored('VMCluster', 'vm-zone-c').spec?.clusterVersion, 'v1.151.0-cluster', 'rolled back');
  assert.ok(asked.length > 0, 'the reconciler checked the queue before restoring the reads');
  assert.deepEqual(asked.at(-1)?.vminsertHosts, ['127.0.0.3']);
});

test('an Abort lost to a crash: the reconciler finds the remote zone by scanning its cluster and rolls it back', async () => {
  const { hub, remotes, step, routed, reconciler } = setup();
  assert.equal((await untilDone(() => step('zone-c', 'drainReads'))).phase, 'Successful');
  assert.equal((await step('zone-c', 'apply')).phase, 'Successful');
  hub.setStatus('Rollout', 'walk', { abort: true });
  const progress = await untilSettled(reconciler);
  assert.deepEqual(Object.keys(progress), ['eu-c/vm/vm-zone-c'], 'keyed by the cluster that holds it');
  const c = remotes['eu-c'] as MemoryKube;
  assert.equal(c.getStored('VMCluster', 'vm-zone-c').spec?.clusterVersion, 'v1.151.0-cluster', 'rolled back');
  assert.equal(zoneState(c.getStored('VMCluster', 'vm-zone-c')).lease, undefined);
  assert.deepEqual(routed(), ['zone-a', 'zone-b', 'zone-c']);
});

test('a VMSingle zone in a registered cluster: an Abort lost to a crash is rolled back there, found past a watched hub view', async () => {
  const doc = JSON.parse(spec()) as { zones: Record<string, unknown> };
  doc.zones['zone-c'] = { cluster: 'eu-c', vmsingle: 'single-c' };
  const { hub, remotes, clusters, step } = setup({ spec: JSON.stringify(doc) });
  const c = remotes['eu-c'] as MemoryKube;
  zoneCAs(
    hub,
    c,
    { apiVersion: vmApi, kind: 'VMSingle', name: 'single-c', spec: { retentionPeriod: '1' } },
    'VMSingle',
  );
  assert.equal((await untilDone(() => step('zone-c', 'drainReads'))).phase, 'Successful');
  assert.equal((await step('zone-c', 'apply')).phase, 'Successful');
  assert.equal(c.getStored('VMSingle', 'single-c').spec?.clusterVersion, 'v1.152.0-cluster', 'changed there');
  assert.equal(
    hub.patches.filter((p) => p.ref.startsWith('VMSingle')).length,
    0,
    'no VMSingle write in the hub',
  );
  hub.setStatus('Rollout', 'walk', { abort: true });
  // A watched view of the hub (its own object, so every verdict is confirmed live); the remote cluster is listed live.
  const watched: KubeObjects = {
    get: (ref) => hub.get(ref),
    list: (apiVersion, kind, namespace, selector) => hub.list(apiVersion, kind, namespace, selector),
    mergePatch: () => Promise.reject(new Error('a watched view is never written')),
    create: () => Promise.reject(new Error('a watched view is never written')),
  };
  const reconciler = new ZoneReconciler({ clock, kube: hub, clusters, watched, logger: silentLogger });
  const progress = await untilSettled(reconciler);
  assert.deepEqual(progress, { 'VMSingle eu-c/vm/single-c': 'done' }, 'keyed by kind and cluster');
  const single = c.getStored('VMSingle', 'single-c');
  assert.equal(single.spec?.clusterVersion, undefined, 'rolled back');
  assert.equal(single.spec?.retentionPeriod, '1');
  assert.equal(zoneState(single).lease, undefined, 'released');
  const refs = hub.getStored('VMUser', 'vmauth-read').spec?.targetRefs as { crd: { name: string } }[];
  assert.deepEqual(
    refs.map((r) => r.crd.name),
    ['vm-zone-a', 'vm-zone-b', 'single-c'],
    'reads restored',
  );
});

test('a VLCluster zone in a registered cluster: leased and changed there; an Abort rolls it back there and restores its reads', async () => {
  const doc = JSON.parse(spec()) as { zones: Record<string, unknown>; vlagent?: unknown };
  doc.zones['zone-c'] = { cluster: 'eu-c', vlcluster: 'logs-c' };
  doc.vlagent = { vlagent: 'vlagent' };
  const { hub, remotes, clusters, step } = setup({ spec: JSON.stringify(doc) });
  const c = remotes['eu-c'] as MemoryKube;
  zoneCAs(
    hub,
    c,
    {
      apiVersion: 'operator.victoriametrics.com/v1',
      kind: 'VLCluster',
      name: 'logs-c',
      spec: { vlstorage: { retentionPeriod: '1d' } },
    },
    'VLCluster/vlselect',
  );
  const names = () =>
    ((hub.getStored('VMUser', 'vmauth-read').spec?.targetRefs ?? []) as { crd: { name: string } }[]).map(
      (r) => r.crd.name,
    );
  const drained = await untilDone(() => step('zone-c', 'drainReads'));
  assert.equal(drained.phase, 'Successful', drained.message);
  assert.match(drained.message ?? '', /VLCluster vm\/logs-c/);
  assert.deepEqual(names(), ['vm-zone-a', 'vm-zone-b'], 'out of reads in the hub');
  assert.equal((await step('zone-c', 'apply')).phase, 'Successful');
  const logs = () => c.getStored('VLCluster', 'logs-c', 'operator.victoriametrics.com/v1');
  assert.equal(logs().spec?.clusterVersion, 'v1.152.0-cluster', 'changed in eu-c');
  assert.equal(zoneState(logs()).lease?.revision, 'rev-r', 'leased in eu-c');
  assert.equal(
    hub.patches.filter((p) => p.ref.startsWith('VLCluster')).length,
    0,
    'no VLCluster write in the hub',
  );
  hub.setStatus('Rollout', 'walk', { abort: true });
  const reconciler = new ZoneReconciler({ clock, kube: hub, clusters, logger: silentLogger });
  const progress = await untilSettled(reconciler);
  assert.deepEqual(progress, { 'VLCluster eu-c/vm/logs-c': 'done' }, 'keyed by kind and cluster');
  assert.equal(logs().spec?.clusterVersion, undefined, 'rolled back in eu-c');
  assert.equal(zoneState(logs()).lease, undefined, 'released');
  assert.deepEqual(names(), ['vm-zone-a', 'vm-zone-b', 'logs-c'], 'reads restored');
});

test('an unregistered cluster fails the step naming it, and nothing is written anywhere', async () => {
  const { hub, remotes, step } = setup({ spec: spec({ 'zone-b': 'us-east-1a', 'zone-c': 'eu-c' }) });
  const result = await step('zone-b', 'drainReads');
  assert.equal(result.phase, 'Failed');
  assert.match(result.message ?? '', /cluster "us-east-1a" is not registered.*registered: eu-b, eu-c/);
  assert.equal(hub.patches.length + (remotes['eu-b'] as MemoryKube).patches.length, 0);
});

test('an unreachable cluster: a drain next to it is retried, its error names the cluster, and nothing is drained', async () => {
  const { hub, step, routed } = setup({ unreachable: 'eu-c' });
  // zone-c serves reads: before zone-b may leave, zone-c must be healthy, and its cluster does not answer.
  await assert.rejects(
    step('zone-b', 'drainReads'),
    (err: unknown) =>
      err instanceof KubeError && err.kind === 'unavailable' && /^cluster eu-c: /.test(err.message),
  );
  assert.deepEqual(routed(), ['zone-a', 'zone-b', 'zone-c'], 'no zone left the reads');
  assert.equal(
    hub.patches.filter((p) => p.ref.startsWith('VMUser')).length,
    0,
    'the read balancer was not touched',
  );
  // Its own zone: the step cannot even read the VMCluster; retried, named, and the token never shows.
  await assert.rejects(step('zone-c', 'drainReads'), (err: unknown) => {
    const message = err instanceof Error ? err.message : '';
    return /cluster eu-c/.test(message) && !message.includes(token);
  });
});

test('the reconciler skips an unreachable cluster with a warning naming it, and finishes zones elsewhere', async () => {
  const {
    hub,
    remotes,
    step,
    reconciler: _unused,
  } = setup({ spec: spec({ 'zone-b': 'eu-b' }), unreachable: 'eu-c' });
  // zone-c stays in the hub in this spec document; eu-c is registered but its API server does not answer.
  (remotes['eu-c'] as MemoryKube).objects.clear();
  hub.put({
    apiVersion: vmApi,
    kind: 'VMCluster',
    metadata: { name: 'vm-zone-c', namespace: ns, generation: 1 },
    spec: { clusterVersion: 'v1.151.0-cluster' },
    status: { updateStatus: 'operational', observedGeneration: 1 },
  });
  assert.equal((await untilDone(() => step('zone-b', 'drainReads'))).phase, 'Successful');
  assert.equal((await step('zone-b', 'apply')).phase, 'Successful');
  hub.setStatus('Rollout', 'walk', { abort: true });
  const warnings: string[] = [];
  const logger = {
    ...silentLogger,
    warn: (message: string, fields?: Record<string, unknown>) => {
      warnings.push(`${message} ${JSON.stringify(fields)}`);
    },
  };
  const clusters = clusterClients({
    hub,
    namespace: 'argo-rollouts',
    connect: (r) =>
      r.name === 'eu-c'
        ? {
            get: () => Promise.reject(new KubeError('unavailable', 'no answer')),
            list: () => Promise.reject(new KubeError('unavailable', 'no answer within 15 s')),
            mergePatch: () => Promise.reject(new KubeError('unavailable', 'no answer')),
            create: () => Promise.reject(new KubeError('unavailable', 'no answer')),
          }
        : (remotes['eu-b'] as MemoryKube),
  });
  const reconciler = new ZoneReconciler({ clock, kube: hub, clusters, logger });
  const progress = await untilSettled(reconciler);
  assert.deepEqual(progress, { 'eu-b/vm/vm-zone-b': 'done' });
  assert.equal(
    (remotes['eu-b'] as MemoryKube).getStored('VMCluster', 'vm-zone-b').spec?.clusterVersion,
    'v1.151.0-cluster',
  );
  assert.ok(
    warnings.some((w) => /a registered cluster cannot be listed/.test(w) && /"cluster":"eu-c"/.test(w)),
    warnings.join('\n'),
  );
});
