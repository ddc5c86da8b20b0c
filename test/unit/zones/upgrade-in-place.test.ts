// Upgrade in place (issue 35 item 7): a zone left mid-walk by the previous release (383e85a), its records in that
// release's formats as literal text — a balancer drain record keyed by the zone's name, a lease, rollback record and
// handoff naming no object — is finished correctly by this one: by the walk's next step, by the reconciler, and
// with the old record counted by the budget of a new walk. What cannot be finished is refused with a message that
// says what to do. The new formats are pinned in state-formats.test.ts.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { silentLogger } from '../../../plugin/goplugin/index.ts';
import { hubOnly } from '../../../plugin/kube/cluster-registry.ts';
import { ZoneReconciler } from '../../../plugin/zones/reconciler/reconciler.ts';
import { zoneState } from '../../../plugin/zones/state/zone-annotations.ts';
import { zoneIntent } from '../../../plugin/zones/state/zone-intent.ts';
import { FakeClock } from '../fake-clock.ts';
import type { MemoryKube } from '../kube/memory-kube.ts';
import {
  ns,
  readsJson,
  rolloutObject,
  routedObjects,
  specDocument,
  stepPluginOf,
  threeZones,
  untilSettled,
  useVmauthFixture,
} from './memory-cluster.ts';

const vmApi = 'operator.victoriametrics.com/v1beta1';
const clock = new FakeClock();
const vmauth = useVmauthFixture(clock);

/** zone-a drained by Rollout vm/walk (revision rev-r) as 383e85a wrote it, before the walk's apply. */
const previousRelease = {
  lease: `{"v":1,"rollout":"vm/walk","uid":"uid-walk","revision":"rev-r","zone":"zone-a","since":"2029-12-31T23:50:00Z","reads":${readsJson},"drainGracePeriod":"0s","vmagents":["vmagent"]}`,
  maintenance:
    '{"v":1,"zone":"zone-a","since":"2029-12-31T23:50:00Z","reason":"drainReads by Rollout vm/walk (revision rev-r)"}',
  drained:
    '{"zone-a":{"vmcluster":"vm/vm-zone-a","by":"drainReads by Rollout vm/walk (revision rev-r)","at":"2029-12-31T23:50:02.000Z",' +
    '"removed":[{"op":"targetRef","index":0,"targetRef":{"crd":{"kind":"VMCluster/vmselect","name":"vm-zone-a","namespace":"vm"}}}],' +
    '"servedBefore":{"content":"79ef64f6b8175d64","pods":{"vm/vmauth-0":{"stamp":1893455400,"start":null}}}}}',
  handoff: `{"v":1,"zone":"zone-a","holder":{"rollout":"vm/walk","uid":"uid-walk","revision":"rev-r"},"requestedAt":"2029-12-31T23:55:00Z","by":"Abort of drainReads by Rollout vm/walk (revision rev-r)","rollback":false,"reads":${readsJson},"drainGracePeriod":"0s","vmagents":["vmagent"]}`,
};

/** Three zones with zone-a left drained by the previous release; `handoff`: after an Abort of that release. */
function leftMidWalk(handoff = false): MemoryKube {
  const kube = threeZones(vmauth.port);
  kube.put(rolloutObject('walk', { currentPodHash: 'rev-r', stableRS: 'rev-s', currentStepIndex: 0 }));
  const zone = kube.objects.get(`${vmApi}|VMCluster|${ns}|vm-zone-a`);
  const vmuser = kube.objects.get(`${vmApi}|VMUser|${ns}|vmauth-read`);
  assert.ok(zone !== undefined && vmuser !== undefined);
  zone.metadata.annotations = {
    'vmzones.io/lease': previousRelease.lease,
    'vmzones.io/maintenance': previousRelease.maintenance,
    ...(handoff ? { 'vmzones.io/handoff': previousRelease.handoff } : {}),
  };
  zone.metadata.labels = {
    'vmzones.io/maintenance': 'true',
    ...(handoff ? { 'vmzones.io/pending': 'true' } : {}),
  };
  vmuser.metadata.annotations = {
    'vmzones.io/drained': previousRelease.drained,
    'vmzones.io/reads-changed-at': '2029-12-31T23:50:02.000Z',
  };
  vmuser.spec = {
    targetRefs: ['zone-b', 'zone-c'].map((z) => ({
      crd: { kind: 'VMCluster/vmselect', name: `vm-${z}`, namespace: ns },
    })),
  };
  return kube;
}

test("a zone the previous release drained is finished by the walk's next steps, and its drain record goes", async () => {
  const kube = leftMidWalk();
  const walk = stepPluginOf(kube, clock);
  const drained = await walk.run('zone-a', 'drainReads');
  assert.equal(drained.phase, 'Successful', `a replayed drainReads finds it out: ${drained.message}`);
  assert.equal((await walk.run('zone-a', 'apply')).phase, 'Successful');
  const restored = await walk.run('zone-a', 'restoreReads');
  assert.equal(restored.phase, 'Successful', restored.message);
  assert.deepEqual(routedObjects(kube), ['vm-zone-a', 'vm-zone-b', 'vm-zone-c']);
  assert.equal(
    kube.getStored('VMUser', 'vmauth-read').metadata.annotations?.['vmzones.io/drained'],
    undefined,
  );
  const left = kube.getStored('VMCluster', 'vm-zone-a').metadata.annotations ?? {};
  // Released; the rollback record of the walk's change stays until its Rollout moves on (docs/step-plugin.md).
  assert.deepEqual(Object.keys(left), ['vmzones.io/rollback']);
});

test('a zone the previous release handed over (Abort) is finished by the reconciler of this one', async () => {
  const kube = leftMidWalk(true);
  kube.setStatus('Rollout', 'walk', { abort: true }, ns);
  const reconciler = new ZoneReconciler({ kube, clusters: hubOnly(kube), logger: silentLogger, clock });
  assert.deepEqual(await untilSettled(reconciler), { [`${ns}/vm-zone-a`]: 'done' });
  assert.deepEqual(routedObjects(kube), ['vm-zone-a', 'vm-zone-b', 'vm-zone-c']);
  assert.deepEqual(kube.getStored('VMCluster', 'vm-zone-a').metadata.annotations ?? {}, {}, 'released');
});

test("the previous release's drain record counts for a new walk's budget, and is written back in the new form", async () => {
  const kube = leftMidWalk();
  kube.put(rolloutObject('other', { currentPodHash: 'o2', stableRS: 'o1', currentStepIndex: 0 }));
  const other = stepPluginOf(kube, clock, { rollout: 'other' });
  const waits = await other.run('zone-b', 'drainReads');
  assert.equal(waits.phase, 'Running', waits.message);
  assert.match(waits.message ?? '', /zone zone-a \(drainReads by Rollout vm\/walk/);
  // Any write of the balancer rewrites the record keyed by the object: the walk's replayed drain wrote nothing,
  // so put zone-b's record in by restoring zone-a through the walk and draining zone-b after.
  const walk = stepPluginOf(kube, clock);
  assert.equal((await walk.run('zone-a', 'restoreReads')).phase, 'Successful');
  assert.equal((await other.run('zone-b', 'drainReads')).phase, 'Successful');
  const record = kube.getStored('VMUser', 'vmauth-read').metadata.annotations?.['vmzones.io/drained'] ?? '';
  assert.deepEqual(Object.keys(JSON.parse(record) as object), ['/VMCluster/vm/vm-zone-b']);
});

test('a record of the previous release for an object another spec calls by the same zone name is not restored by that spec', async () => {
  const kube = leftMidWalk();
  // "cold" calls vm-zone-c zone-a: its restoreReads of zone-a must not put the walk's vm-zone-a back.
  const doc = JSON.parse(specDocument()) as { zones: Record<string, { vmcluster: string }> };
  doc.zones = { 'zone-a': { vmcluster: 'vm-zone-c' }, 'zone-b': { vmcluster: 'vm-zone-b' } };
  kube.put(
    rolloutObject('cold', { currentPodHash: 'c2', stableRS: 'c1', currentStepIndex: 0 }, JSON.stringify(doc)),
  );
  const cold = stepPluginOf(kube, clock, { rollout: 'cold' });
  const result = await cold.run('zone-a', 'restoreReads');
  assert.equal(result.phase, 'Successful', result.message);
  assert.match(result.message ?? '', /VMCluster vm\/vm-zone-c serves reads/);
  assert.deepEqual(routedObjects(kube), ['vm-zone-b', 'vm-zone-c'], 'vm-zone-a stays out: its walk holds it');
});

test("the previous release's lease and handoff carry no intent: it is derived from them, once (state/zone-intent.ts)", () => {
  const object = (annotations: Record<string, string>) => ({
    apiVersion: vmApi,
    kind: 'VMCluster',
    metadata: { name: 'vm-zone-a', namespace: ns, uid: 'uid-vm-zone-a', annotations },
  });
  const held = zoneIntent(
    zoneState(
      object({
        'vmzones.io/lease': previousRelease.lease,
        'vmzones.io/maintenance': previousRelease.maintenance,
      }),
    ),
  );
  assert.deepEqual(held, {
    holder: { rollout: 'vm/walk', uid: 'uid-walk', revision: 'rev-r' },
    since: '2029-12-31T23:50:00Z',
    wants: 'drained',
    nextMove: 'step',
    stored: false,
  });
  const handed = zoneIntent(
    zoneState(
      object({
        'vmzones.io/lease': previousRelease.lease,
        'vmzones.io/maintenance': previousRelease.maintenance,
        'vmzones.io/handoff': previousRelease.handoff,
      }),
    ),
  );
  assert.deepEqual(
    { wants: handed?.wants, nextMove: handed?.nextMove, stored: handed?.stored },
    { wants: 'restored', nextMove: 'reconciler', stored: false },
  );
  const rollback = zoneIntent(
    zoneState(
      object({
        'vmzones.io/lease': previousRelease.lease,
        'vmzones.io/handoff': previousRelease.handoff.replace('"rollback":false', '"rollback":true'),
      }),
    ),
  );
  assert.equal(rollback?.wants, 'rolledBack');
});

test("a zone the previous release handed over is taken back by its walk's next drainReads, and the lease then stores the intent", async () => {
  const kube = leftMidWalk(true);
  const walk = stepPluginOf(kube, clock);
  const drained = await walk.run('zone-a', 'drainReads');
  assert.equal(drained.phase, 'Successful', drained.message);
  assert.match(drained.message ?? '', /took the zone back from the vmzones reconciler/);
  const state = zoneState(kube.getStored('VMCluster', 'vm-zone-a'));
  assert.equal(state.handoff, undefined);
  assert.equal(state.lease?.wants, 'drained');
  assert.equal(state.lease?.nextMove, 'step');
  assert.equal(zoneIntent(state)?.stored, true);
  const reconciler = new ZoneReconciler({ kube, clusters: hubOnly(kube), logger: silentLogger, clock });
  assert.deepEqual(await reconciler.tick(), {}, 'the reconciler leaves a zone whose step moves next');
  assert.deepEqual(routedObjects(kube), ['vm-zone-b', 'vm-zone-c']);
});

test('a zone the previous release handed over for a rollback is rolled back by the reconciler of this one, the intent stored on the way', async () => {
  const kube = leftMidWalk(true);
  const zone = kube.objects.get(`${vmApi}|VMCluster|${ns}|vm-zone-a`);
  assert.ok(zone?.metadata.annotations !== undefined);
  // The previous release's apply and Abort: the change in place, its rollback requested, the handoff asking for it.
  zone.spec = { ...zone.spec, clusterVersion: 'v1.152.0-cluster' };
  zone.metadata.generation = 2;
  zone.metadata.annotations['vmzones.io/rollback'] =
    '{"v":1,"rollout":"vm/walk","uid":"uid-walk","revision":"rev-r","zone":"zone-a","phase":"requested","appliedAt":"2029-12-31T23:51:00Z","generation":2,' +
    `"changes":[{"path":["clusterVersion"],"before":"v1.151.0-cluster","after":"v1.152.0-cluster"}],"stableRevision":"rev-s","reads":${readsJson},"drainGracePeriod":"0s","vmagents":["vmagent"],"requestedAt":"2029-12-31T23:55:00Z"}`;
  zone.metadata.annotations['vmzones.io/handoff'] = previousRelease.handoff
    .replace('"rollback":false', '"rollback":true')
    .replace('Abort of drainReads', 'Abort of apply');
  kube.setStatus('Rollout', 'walk', { abort: true }, ns);
  const reconciler = new ZoneReconciler({ kube, clusters: hubOnly(kube), logger: silentLogger, clock });
  const intents: (string | undefined)[] = [];
  kube.beforePatch = async (what) => {
    if (what === 'VMCluster vm/vm-zone-a') {
      const lease = zoneState(kube.getStored('VMCluster', 'vm-zone-a')).lease;
      intents.push(lease?.wants);
    }
  };
  assert.deepEqual(await untilSettled(reconciler), { [`${ns}/vm-zone-a`]: 'done' });
  kube.beforePatch = undefined;
  const after = kube.getStored('VMCluster', 'vm-zone-a');
  assert.equal(after.spec?.clusterVersion, 'v1.151.0-cluster', 'rolled back');
  assert.deepEqual(routedObjects(kube), ['vm-zone-a', 'vm-zone-b', 'vm-zone-c']);
  assert.deepEqual(after.metadata.annotations ?? {}, {}, 'released');
  assert.ok(
    intents.includes('restored'),
    `the restore stored the intent in the old lease: ${intents.join(', ')}`,
  );
});
