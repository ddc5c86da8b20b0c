// Who may act on a zone, and what a record may say (issue 35): a zone is its object — (cluster, kind, namespace,
// name, uid) — not the name a record or a spec document gives it. Each test reproduces one finding of the review of
// 383e85a on the in-memory API and the fake clock, as someone who may patch zone objects in their own namespace,
// or as two teams sharing one vmauth, and asserts what would have caught it.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { silentLogger } from '../../../plugin/goplugin/index.ts';
import { hubOnly } from '../../../plugin/kube/cluster-registry.ts';
import type { KubeObject } from '../../../plugin/kube/objects.ts';
import { ZoneReconciler } from '../../../plugin/zones/reconciler/reconciler.ts';
import { trustedReads } from '../../../plugin/zones/reconciler/record-trust.ts';
import { FakeClock } from '../fake-clock.ts';
import type { MemoryKube } from '../kube/memory-kube.ts';
import {
  ns,
  rolloutObject,
  routedObjects,
  specDocument,
  specOf,
  stepPluginOf,
  threeZones,
  untilSettled,
  useVmauthFixture,
  zoneNames,
} from './memory-cluster.ts';

const vmApi = 'operator.victoriametrics.com/v1beta1';
const clock = new FakeClock();
const vmauth = useVmauthFixture(clock);

/** The VMClusters (names) VMUser `name` routes reads to now, as its targetRefs say. */
function annotate(kube: MemoryKube, name: string, annotations: Record<string, string>, labels = {}): void {
  const object = kube.objects.get(`${vmApi}|VMCluster|${ns}|${name}`);
  assert.ok(object, name);
  object.metadata.annotations = { ...(object.metadata.annotations ?? {}), ...annotations };
  object.metadata.labels = { ...(object.metadata.labels ?? {}), ...labels };
}

/** A handoff (JSON text) on zone object `name`, with the pending label that makes the reconciler look. */
function handOverTo(kube: MemoryKube, name: string, handoff: string): void {
  annotate(kube, name, { 'vmzones.io/handoff': handoff }, { 'vmzones.io/pending': 'true' });
}

function operationalCluster(name: string): KubeObject & { apiVersion: string; kind: string } {
  return {
    apiVersion: vmApi,
    kind: 'VMCluster',
    metadata: { name, namespace: ns, generation: 1 },
    spec: { clusterVersion: 'v1.151.0-cluster' },
    status: { updateStatus: 'operational', observedGeneration: 1 },
  };
}

/** The read balancer of the test spec as a record carries it, with `zone`'s backend the object `object`. */
function readsNaming(zone: string, object: string) {
  return {
    ref: { kind: 'VMUser', namespace: ns, name: 'vmauth-read' },
    zones: zoneNames.map((z) => {
      const name = z === zone ? object : `vm-${z}`;
      return {
        zone: z,
        namespace: ns,
        vmcluster: name,
        hosts: [
          `vmselect-${name}.${ns}.svc`,
          `vmselect-${name}.${ns}.svc.cluster.local`,
          `vmselect-${name}.${ns}`,
        ],
      };
    }),
    reloadEvidence: 'required',
  };
}

function handoffOf(zone: string, holder: { rollout: string; uid: string; revision: string }, extra = {}) {
  return JSON.stringify({
    v: 1,
    zone,
    holder,
    requestedAt: '2029-12-31T00:00:00Z',
    by: 'a forger',
    rollback: false,
    reads: readsNaming(zone, `vm-${zone}`),
    drainGracePeriod: '0s',
    vmagents: ['vmagent'],
    ...extra,
  });
}

/** Rollout `name` walking its first step (revision `<name>-2` over stable `<name>-1`), with `spec` (default the
 *  test spec document). */
function walking(kube: MemoryKube, name: string, spec = specDocument()): void {
  kube.put(
    rolloutObject(name, { currentPodHash: `${name}-2`, stableRS: `${name}-1`, currentStepIndex: 0 }, spec),
  );
}

/** The three zones behind two VMUsers, vmauth-read and vmauth-read-2, each routing all of them. */
function twoVMUsers(): MemoryKube {
  const kube = threeZones(vmauth.port);
  const first = kube.getStored('VMUser', 'vmauth-read');
  kube.put({
    apiVersion: vmApi,
    kind: 'VMUser',
    metadata: { name: 'vmauth-read-2', namespace: ns, generation: 1 },
    spec: structuredClone(first.spec),
    status: { updateStatus: 'operational', observedGeneration: 1 },
  });
  return kube;
}

/** The spec's vmauth list: these VMUsers, in this order. */
function balancers(names: string[]) {
  return {
    vmauth: names.map((vmuser) => ({
      vmuser,
      pods: [{ labelSelector: 'app=vmauth', port: 'http' }],
      drainGracePeriod: '0s',
    })),
  };
}

const all = Object.fromEntries(zoneNames.map((z) => [z, `vm-${z}`]));

function reconcilerOf(kube: MemoryKube, allowance = { all: false, extra: [] as string[] }) {
  return new ZoneReconciler({ kube, clusters: hubOnly(kube), logger: silentLogger, clock, allowance });
}

/** A spec document of `zones` (zone → VMCluster), the test spec's balancer, and `budget` when given. */
test('scenario 1: a handoff on a scratch object that names zone-b never restores the drain record of the real zone-b', async () => {
  const kube = threeZones(vmauth.port);
  walking(kube, 'walk');
  const walk = stepPluginOf(kube, clock);
  assert.equal((await walk.run('zone-b', 'drainReads')).phase, 'Successful');
  kube.heldBack.add(`VMCluster ${ns}/vm-zone-b`);
  assert.equal((await walk.run('zone-b', 'apply')).phase, 'Successful');
  // The forger's scratch VMCluster, with a handoff naming zone-b and itself as zone-b's backend.
  kube.put(operationalCluster('scratch'));
  handOverTo(
    kube,
    'scratch',
    JSON.stringify({
      ...JSON.parse(handoffOf('zone-b', { rollout: `${ns}/ghost`, uid: 'uid-ghost', revision: 'r1' })),
      reads: readsNaming('zone-b', 'scratch'),
    }),
  );
  await untilSettled(reconcilerOf(kube), 5);
  assert.deepEqual(
    routedObjects(kube),
    ['vm-zone-a', 'vm-zone-c'],
    'vm-zone-b stays out of reads while the walk holds its lease and the operator rolls it out',
  );
  const warnings = kube.created.filter(
    (e) => e.type === 'Warning' && (e.regarding as { name?: string }).name === 'scratch',
  );
  assert.deepEqual(
    warnings.map((e) => e.reason),
    ['ZoneRestoreFailed'],
    'the reconciler says once, on the scratch object, why it did not finish it',
  );
  assert.match(
    String(warnings[0]?.note),
    /holds the drain record of VMCluster vm\/vm-zone-b \(zone zone-b\), not of this object/,
  );
});

test('scenario 2: two Rollouts that name different VMClusters zone-a behind one VMUser neither share a record nor pass the budget together', async () => {
  const kube = threeZones(vmauth.port);
  walking(kube, 'hot', specOf({ 'zone-a': 'vm-zone-a', 'zone-b': 'vm-zone-b' }));
  walking(kube, 'cold', specOf({ 'zone-a': 'vm-zone-c', 'zone-b': 'vm-zone-b' }));
  const hot = stepPluginOf(kube, clock, { rollout: 'hot' });
  const cold = stepPluginOf(kube, clock, { rollout: 'cold' });
  assert.equal((await hot.run('zone-a', 'drainReads')).phase, 'Successful');
  const second = await cold.run('zone-a', 'drainReads');
  assert.deepEqual(
    routedObjects(kube),
    ['vm-zone-b', 'vm-zone-c'],
    `cold's zone-a (vm-zone-c) stays in reads while hot's zone-a is out (budget one zone); cold said ${second.phase}: ${second.message}`,
  );
  assert.equal(second.phase, 'Running', second.message);
  // cold's restoreReads never puts hot's zone back.
  await cold.run('zone-a', 'restoreReads');
  assert.deepEqual(routedObjects(kube), ['vm-zone-b', 'vm-zone-c'], "hot's zone-a stays out of reads");
});

test('scenario 3: two Rollouts listing the same two VMUsers in opposite orders, draining at once: one drains, the other holds no half-drained zone', async () => {
  const kube = twoVMUsers();
  walking(kube, 'p', specOf(all, balancers(['vmauth-read', 'vmauth-read-2'])));
  walking(kube, 'q', specOf(all, balancers(['vmauth-read-2', 'vmauth-read'])));
  const p = stepPluginOf(kube, clock, { rollout: 'p' });
  const q = stepPluginOf(kube, clock, { rollout: 'q' });
  // Both at once, then each again as the controller would, until neither progresses.
  let [a, c] = await Promise.all([
    p.call('run', 'zone-a', 'drainReads'),
    q.call('run', 'zone-c', 'drainReads'),
  ]);
  for (let i = 0; i < 4; i++) {
    [a, c] = await Promise.all([
      a.phase === 'Running' ? p.call('run', 'zone-a', 'drainReads', a) : a,
      c.phase === 'Running' ? q.call('run', 'zone-c', 'drainReads', c) : c,
    ]);
  }
  const out = (zone: string) =>
    ['vmauth-read', 'vmauth-read-2'].filter((u) => !routedObjects(kube, u).includes(`vm-${zone}`));
  const halfDrained = ['zone-a', 'zone-c'].filter((z) => out(z).length === 1);
  assert.deepEqual(
    halfDrained,
    [],
    `no zone is out of one balancer only: p ${a.phase} (${a.message}); q ${c.phase} (${c.message})`,
  );
  assert.ok(
    [a, c].some((r) => r.phase === 'Successful'),
    `one of the two drains: p ${a.phase} (${a.message}); q ${c.phase} (${c.message})`,
  );
});

test('scenario 4: a reconciler restore that leaves the zone unrouted is a failure, never ZoneFinished', async () => {
  const kube = threeZones(vmauth.port);
  walking(kube, 'walk');
  const walk = stepPluginOf(kube, clock);
  assert.equal((await walk.run('zone-a', 'drainReads')).phase, 'Successful');
  // The drain record is lost (removed by hand): nothing to put back, and no balancer routes zone-a.
  const vmuser = kube.objects.get(`${vmApi}|VMUser|${ns}|vmauth-read`);
  assert.ok(vmuser);
  delete vmuser.metadata.annotations?.['vmzones.io/drained'];
  kube.setStatus('Rollout', 'walk', { abort: true }, ns);
  assert.equal((await walk.call('abort', 'zone-a', 'drainReads')).phase, 'Successful');
  const progress = await untilSettled(reconcilerOf(kube), 3);
  assert.notEqual(
    progress[`${ns}/vm-zone-a`],
    'done',
    'the zone is not finished while no balancer routes it',
  );
  assert.deepEqual(
    kube.created.filter((e) => e.reason === 'ZoneFinished').map((e) => e.note),
    [],
    'no ZoneFinished event',
  );
  assert.ok(
    kube.created.some((e) => e.type === 'Warning' && e.reason === 'ZoneRestoreFailed'),
    'a Warning event says the zone is not routed',
  );
  assert.ok(
    kube.getStored('VMCluster', 'vm-zone-a').metadata.annotations?.['vmzones.io/lease'],
    'the lease stays',
  );
});

test("scenario 5: the reconciler's events go only into the zone object's namespace, never with the record's own words", async () => {
  const kube = threeZones(vmauth.port);
  handOverTo(
    kube,
    'vm-zone-a',
    handoffOf(
      'zone-a',
      { rollout: 'kube-system/ghost', uid: 'uid-ghost', revision: 'r1' },
      { by: 'finished (INJECTED: see runbook at http://evil.example/)' },
    ),
  );
  const progress = await untilSettled(reconcilerOf(kube, { all: true, extra: [] }), 5);
  assert.equal(progress[`${ns}/vm-zone-a`], 'done');
  const events = kube.created.filter((e) => e.kind === 'Event');
  assert.ok(events.length > 0, 'the reconciler said what it did');
  assert.deepEqual(
    events.filter((e) => e.metadata.namespace !== ns).map((e) => `${e.metadata.namespace}: ${e.reason}`),
    [],
    'no event outside the zone object namespace (the holder does not exist)',
  );
  assert.deepEqual(
    events.filter((e) => String(e.note).includes('INJECTED')).map((e) => e.note),
    [],
    "no event carries the record's by text",
  );
});

test('scenario 6: a record naming a balancer hundreds of times is refused at once, the limit named', async () => {
  const kube = threeZones(vmauth.port);
  const reads = Array.from({ length: 200 }, () => readsNaming('zone-a', 'vm-zone-a'));
  handOverTo(
    kube,
    'vm-zone-a',
    handoffOf('zone-a', { rollout: `${ns}/ghost`, uid: 'uid-ghost', revision: 'r1' }, { reads }),
  );
  const before = kube.reads.length;
  await reconcilerOf(kube).tick();
  const calls = kube.reads.length - before;
  assert.ok(calls < 40, `one pass sent ${calls} API calls`);
  const refused = kube.created.filter((e) => e.reason === 'ZoneRecordRefused').map((e) => String(e.note));
  assert.equal(refused.length, 1, 'one Warning event');
  assert.match(refused[0] ?? '', /at most 16 read balancers/);
});

test('scenario 7: a record sets none of its own evidence: queue check, vminsertHosts, reload evidence and grace come from defaults', async () => {
  const kube = threeZones(vmauth.port);
  const reads = { ...readsNaming('zone-a', 'vm-zone-a'), reloadEvidence: 'bestEffort' };
  const trusted = await trustedReads(
    { allowance: { all: false, extra: [] }, clusters: hubOnly(kube) },
    { ref: { apiVersion: vmApi, kind: 'VMCluster', namespace: ns, name: 'vm-zone-a' }, cluster: undefined },
    'zone-a',
    { rollout: `${ns}/ghost`, uid: 'uid-ghost', revision: 'r1' },
    undefined,
    {
      reads: reads as never,
      drainGracePeriod: '876000h',
      vmagents: ['vmagent'],
      vmagentsCluster: undefined,
      vminsertHosts: ['evil.example'],
    },
  );
  const [balancer] = Array.isArray(trusted.reads) ? trusted.reads : [trusted.reads];
  assert.equal(balancer?.reloadEvidence, 'required', 'bestEffort only from a spec document');
  assert.equal(trusted.drainGracePeriod, '30s', "the default grace, not the record's 100 years");
  assert.equal(trusted.vminsertHosts, undefined, "the zone's default hosts, not the record's");
  await assert.rejects(
    trustedReads(
      { allowance: { all: false, extra: [] }, clusters: hubOnly(kube) },
      { ref: { apiVersion: vmApi, kind: 'VMCluster', namespace: ns, name: 'vm-zone-a' }, cluster: undefined },
      'zone-a',
      { rollout: `${ns}/ghost`, uid: 'uid-ghost', revision: 'r1' },
      undefined,
      {
        reads: reads as never,
        drainGracePeriod: '0s',
        vmagents: [],
        vmagentsCluster: undefined,
        vminsertHosts: undefined,
      },
    ),
    /turns the queue check off/,
    'a record cannot switch the queue check off',
  );
});

test("scenario 8: the budget belongs to the balancer: a Rollout with maxZonesOut 2 waits while another's zone is out under the default budget", async () => {
  const kube = threeZones(vmauth.port);
  walking(
    kube,
    'wide',
    specOf(Object.fromEntries(zoneNames.map((z) => [z, `vm-${z}`])), {
      disruptionBudget: { maxZonesOut: 2 },
    }),
  );
  walking(kube, 'narrow', specOf({ 'zone-b': 'vm-zone-b', 'zone-c': 'vm-zone-c' }));
  assert.equal(
    (await stepPluginOf(kube, clock, { rollout: 'narrow' }).run('zone-c', 'drainReads')).phase,
    'Successful',
  );
  const wide = await stepPluginOf(kube, clock, { rollout: 'wide' }).run('zone-a', 'drainReads');
  assert.deepEqual(
    routedObjects(kube),
    ['vm-zone-a', 'vm-zone-b'],
    `zone-a stays in reads: narrow's budget allows one zone out through the VMUser; wide said ${wide.phase}: ${wide.message}`,
  );
  assert.equal(wide.phase, 'Running');
  assert.match(wide.message ?? '', /strictest budget/);
});

test('scenario 9: a walk that finds its zone held by another live walk waits (naming the holder) and holds no lease while refused', async () => {
  const kube = threeZones(vmauth.port);
  walking(kube, 'one');
  walking(kube, 'two');
  const one = stepPluginOf(kube, clock, { rollout: 'one' });
  const two = stepPluginOf(kube, clock, { rollout: 'two' });
  assert.equal((await one.run('zone-a', 'drainReads')).phase, 'Successful');
  // two reaches zone-a while one holds it: it waits, naming the holder, instead of failing LeaseHeld at once.
  const waited = await two.call('run', 'zone-a', 'drainReads');
  assert.equal(waited.phase, 'Running', waited.message);
  assert.match(waited.message ?? '', /Rollout vm\/one/);
  // Both drains pass the budget on the same reading: two (zone-c) marks its lease, then one's drain of zone-b lands
  // on the VMUser first, so two's write conflicts and the budget then refuses it. The lease two took on zone-c for
  // a drain the budget refused protects nothing: it must not stay.
  assert.equal((await one.run('zone-a', 'apply')).phase, 'Successful');
  assert.equal((await one.run('zone-a', 'restoreReads')).phase, 'Successful');
  kube.beforePatch = async (what) => {
    if (what !== `VMUser ${ns}/vmauth-read`) return;
    kube.beforePatch = undefined;
    assert.equal((await one.run('zone-b', 'drainReads')).phase, 'Successful');
  };
  const refused = await two.call('run', 'zone-c', 'drainReads');
  assert.equal(refused.phase, 'Running', refused.message);
  assert.deepEqual(routedObjects(kube), ['vm-zone-a', 'vm-zone-c'], 'only zone-b is out');
  assert.equal(
    kube.getStored('VMCluster', 'vm-zone-c').metadata.annotations?.['vmzones.io/lease'],
    undefined,
    'a lease taken for a drain the budget refused protects nothing',
  );
  assert.equal((await one.run('zone-b', 'apply')).phase, 'Successful');
  assert.equal((await one.run('zone-b', 'restoreReads')).phase, 'Successful');
  // one let go of zone-a: two's wait for it ends in a drain.
  const after = await two.call('run', 'zone-a', 'drainReads', waited);
  assert.notEqual(after.phase, 'Failed', after.message);
  assert.ok(!routedObjects(kube).includes('vm-zone-a'), after.message);
  assert.equal((await two.run('zone-a', 'apply')).phase, 'Successful');
  assert.equal((await two.run('zone-a', 'restoreReads')).phase, 'Successful');
  // Bounded: a holder that never lets go fails the wait after readyTimeout, naming it.
  assert.equal((await one.run('zone-b', 'drainReads')).phase, 'Successful');
  const blocked = await two.call('run', 'zone-b', 'drainReads');
  assert.equal(blocked.phase, 'Running', blocked.message);
  clock.advance(31 * 60_000);
  const gaveUp = await two.call('run', 'zone-b', 'drainReads', blocked);
  assert.equal(gaveUp.phase, 'Failed', gaveUp.message);
  assert.match(gaveUp.message ?? '', /LeaseHeld|leased by Rollout vm\/one/);
});

test('scenario 10: apply names the fields it changed, never their values, in the message, status and event', async () => {
  const kube = threeZones(vmauth.port);
  const secretValue = 'hunter2-not-for-messages';
  walking(
    kube,
    'walk',
    specDocument({
      clusterVersion: 'v1.152.0-cluster',
      vmselect: { extraEnvs: [{ name: 'httpAuth_password', value: secretValue }] },
    }),
  );
  const walk = stepPluginOf(kube, clock);
  assert.equal((await walk.run('zone-a', 'drainReads')).phase, 'Successful');
  const applied = await walk.run('zone-a', 'apply');
  assert.equal(applied.phase, 'Successful', applied.message);
  const said = JSON.stringify({
    message: applied.message,
    status: applied.status,
    events: kube.created.filter((e) => e.reason === 'ZoneChanged').map((e) => e.note),
  });
  assert.ok(!said.includes(secretValue), `a value reached what apply says: ${said}`);
  assert.ok(!said.includes('v1.152.0-cluster'), `values are kept only in the rollback record: ${said}`);
  assert.match(said, /spec\.vmselect/);
  assert.match(said, /spec\.clusterVersion/);
  const record = kube.getStored('VMCluster', 'vm-zone-a').metadata.annotations?.['vmzones.io/rollback'] ?? '';
  assert.match(record, /v1\.151\.0-cluster/, 'the rollback record keeps the values to undo with');
});

test('scenario 1, copied records: a handoff and lease copied from zone-b onto a scratch object are refused, once, on the scratch object', async () => {
  const kube = threeZones(vmauth.port);
  walking(kube, 'walk');
  const walk = stepPluginOf(kube, clock);
  assert.equal((await walk.run('zone-b', 'drainReads')).phase, 'Successful');
  kube.heldBack.add(`VMCluster ${ns}/vm-zone-b`);
  assert.equal((await walk.run('zone-b', 'apply')).phase, 'Successful');
  kube.setStatus('Rollout', 'walk', { abort: true }, ns);
  assert.equal((await walk.call('abort', 'zone-b', 'apply')).phase, 'Successful');
  // Every vmzones record of zone-b, copied onto the forger's scratch object.
  kube.put(operationalCluster('scratch'));
  const real = kube.getStored('VMCluster', 'vm-zone-b').metadata;
  annotate(kube, 'scratch', real.annotations ?? {}, real.labels ?? {});
  const before = kube.getStored('VMCluster', 'scratch').metadata.annotations;
  const reconciler = reconcilerOf(kube);
  for (let pass = 0; pass < 3; pass++) await reconciler.tick();
  const refused = kube.created.filter(
    (e) => e.reason === 'ZoneRecordRefused' && (e.regarding as { name?: string }).name === 'scratch',
  );
  assert.equal(refused.length, 1, 'one Warning event on the scratch object');
  assert.match(
    String(refused[0]?.note),
    /names VMCluster vm\/vm-zone-b \(uid uid-vm-zone-b\), not this object/,
  );
  assert.equal(
    kube.created.filter((e) => e.metadata.namespace !== ns).length,
    0,
    'nothing written elsewhere',
  );
  assert.deepEqual(kube.getStored('VMCluster', 'scratch').metadata.annotations, before, 'nothing acted on');
  assert.ok(
    !routedObjects(kube).includes('vm-zone-b'),
    'vm-zone-b stays out of reads while it is rolled out',
  );
});

test('a drain record of an earlier object of the same name is never restored for the object there now', async () => {
  const kube = threeZones(vmauth.port);
  walking(kube, 'walk');
  const walk = stepPluginOf(kube, clock);
  assert.equal((await walk.run('zone-a', 'drainReads')).phase, 'Successful');
  // vm-zone-a is deleted and created again (a new uid) with the walk's lease copied onto it.
  const old = kube.getStored('VMCluster', 'vm-zone-a');
  kube.objects.delete(`${vmApi}|VMCluster|${ns}|vm-zone-a`);
  kube.put({
    ...operationalCluster('vm-zone-a'),
    metadata: { ...old.metadata, uid: 'uid-new', resourceVersion: undefined },
  });
  const restored = await walk.run('zone-a', 'restoreReads');
  assert.equal(restored.phase, 'Failed', restored.message);
  assert.ok(!routedObjects(kube).includes('vm-zone-a'), 'the record of the earlier object is not restored');
  assert.match(restored.message ?? '', /uid/);
});

test("the reconciler refuses, once and on the zone object, a drain record of an earlier object of the zone's name", async () => {
  const kube = threeZones(vmauth.port);
  walking(kube, 'walk');
  const walk = stepPluginOf(kube, clock);
  assert.equal((await walk.run('zone-a', 'drainReads')).phase, 'Successful');
  // vm-zone-a deleted and created again with its records, then the walk is aborted: the reconciler finishes it.
  const old = kube.getStored('VMCluster', 'vm-zone-a');
  kube.objects.delete(`${vmApi}|VMCluster|${ns}|vm-zone-a`);
  const copied = { ...(old.metadata.annotations ?? {}) };
  delete copied['vmzones.io/lease'];
  kube.put({
    ...operationalCluster('vm-zone-a'),
    metadata: { ...old.metadata, annotations: copied, uid: 'uid-new', resourceVersion: undefined },
  });
  handOverTo(
    kube,
    'vm-zone-a',
    handoffOf('zone-a', {
      rollout: `${ns}/walk`,
      uid: 'uid-walk',
      revision: 'walk-2',
    }),
  );
  const reconciler = reconcilerOf(kube);
  for (let pass = 0; pass < 3; pass++) await reconciler.tick();
  const refused = kube.created.filter((e) => e.reason === 'ZoneRecordRefused');
  assert.equal(refused.length, 1, 'one Warning event');
  assert.equal(refused[0]?.metadata.namespace, ns);
  assert.match(String(refused[0]?.note), /uid uid-vm-zone-a, not of the one there now \(uid uid-new\)/);
  assert.ok(!routedObjects(kube).includes('vm-zone-a'), 'the record of the earlier object is not restored');
});

// Found by the model test (zone-model.test.ts): a spec that names only some of a VMUser's zones judged its zone the
// last serving one while another walk had the other out, and failed LastServingZone (final) instead of waiting.
test('a zone that is the last serving one only while another walk has its zone out waits for it, never fails LastServingZone', async () => {
  const kube = threeZones(vmauth.port);
  walking(kube, 'full');
  walking(kube, 'pair', specOf({ 'zone-b': 'vm-zone-b', 'zone-c': 'vm-zone-c' }));
  const full = stepPluginOf(kube, clock, { rollout: 'full' });
  const pair = stepPluginOf(kube, clock, { rollout: 'pair' });
  assert.equal((await full.run('zone-c', 'drainReads')).phase, 'Successful');
  const waits = await pair.call('run', 'zone-b', 'drainReads');
  assert.equal(waits.phase, 'Running', waits.message);
  assert.match(waits.message ?? '', /zone-c \(drainReads by Rollout vm\/full/);
  assert.equal((await full.run('zone-c', 'apply')).phase, 'Successful');
  assert.equal((await full.run('zone-c', 'restoreReads')).phase, 'Successful');
  assert.equal((await pair.run('zone-b', 'drainReads')).phase, 'Successful');
});

test('scenario 3, half drained: a drain found out of one balancer and refused for the next puts back its own part, and its failure says what is out', async () => {
  const kube = twoVMUsers();
  walking(kube, 'p', specOf(all, balancers(['vmauth-read', 'vmauth-read-2'])));
  walking(kube, 'q', specOf({ 'zone-b': 'vm-zone-b', 'zone-c': 'vm-zone-c' }, balancers(['vmauth-read-2'])));
  const p = stepPluginOf(kube, clock, { rollout: 'p' });
  const q = stepPluginOf(kube, clock, { rollout: 'q' });
  // p drained zone-a out of vmauth-read, then crashed; q took zone-c out of vmauth-read-2 meanwhile.
  kube.beforePatch = async (what) => {
    if (what !== `VMUser ${ns}/vmauth-read-2`) return;
    kube.beforePatch = undefined;
    assert.equal((await q.run('zone-c', 'drainReads')).phase, 'Successful');
  };
  const first = await p.call('run', 'zone-a', 'drainReads');
  assert.equal(first.phase, 'Running', first.message);
  assert.ok(routedObjects(kube, 'vmauth-read').includes('vm-zone-a'), 'its part in vmauth-read was put back');
  assert.ok(routedObjects(kube, 'vmauth-read-2').includes('vm-zone-a'));
  clock.advance(16 * 60_000);
  const failed = await p.call('run', 'zone-a', 'drainReads', first);
  assert.equal(failed.phase, 'Failed', failed.message);
  assert.match(failed.message ?? '', /It serves reads as before$/);
  assert.doesNotMatch(failed.message ?? '', /Nothing was changed/);
  assert.equal(
    kube.getStored('VMCluster', 'vm-zone-a').metadata.annotations?.['vmzones.io/lease'],
    undefined,
    'no lease left for a drain that did not happen',
  );
});

test('scenario 9, a wave restore replayed: a zone this walk restored and released, leased since by another walk, is done, not LeaseHeld (found on the sandbox)', async () => {
  const kube = threeZones(vmauth.port);
  const budgetTwo = specOf(
    { 'zone-a': 'vm-zone-a', 'zone-b': 'vm-zone-b', 'zone-c': 'vm-zone-c' },
    { disruptionBudget: { maxZonesOut: 2 } },
  );
  for (const name of ['west', 'east']) walking(kube, name, budgetTwo);
  const west = stepPluginOf(kube, clock, { rollout: 'west', inCallWaitMs: 0 });
  const east = stepPluginOf(kube, clock, { rollout: 'east', inCallWaitMs: 0 });
  const wave = ['zone-a', 'zone-b'];
  assert.equal((await west.run(wave, 'drainReads')).phase, 'Successful');
  // zone-a's change is still rolling out; zone-b's is done.
  kube.heldBack.add(`VMCluster ${ns}/vm-zone-a`);
  assert.equal((await west.run(wave, 'apply')).phase, 'Successful');
  const first = await west.call('run', wave, 'restoreReads');
  assert.equal(first.phase, 'Running', first.message);
  assert.deepEqual(
    routedObjects(kube),
    ['vm-zone-b', 'vm-zone-c'],
    'zone-b restored and released, zone-a waits',
  );
  // Another walk takes zone-b (free now) before the wave's next Run.
  const taken = await east.call('run', 'zone-b', 'drainReads');
  assert.notEqual(taken.phase, 'Failed', taken.message);
  assert.ok(
    kube.getStored('VMCluster', 'vm-zone-b').metadata.annotations?.['vmzones.io/lease']?.includes('vm/east'),
  );
  kube.heldBack.delete(`VMCluster ${ns}/vm-zone-a`);
  const again = await west.call('run', wave, 'restoreReads', first);
  assert.notEqual(again.phase, 'Failed', again.message);
  assert.doesNotMatch(again.message ?? '', /LeaseHeld|two Rollouts must not change a zone at once/);
});
