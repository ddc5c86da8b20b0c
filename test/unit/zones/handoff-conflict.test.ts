// handOver's 409 (issue 35: a 409 handled in one place). Abort hands a zone to the reconciler with one guarded write
// of the handoff; the reconciler writes its progress note into that same annotation as it goes. A 409 on the
// hand-over write is decided by moves/conflict.ts like every zone write's: a progress note written meanwhile is kept
// (the handoff is written again on the fresh read), a change of hands makes the hand-over lost (nothing written, the
// caller decides again). The concurrent writer is let in between the read and the write by the in-memory API's
// beforePatch hook; fake clock.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { silentLogger } from '../../../plugin/goplugin/index.ts';
import { vmclusterRef } from '../../../plugin/vm/vmcluster.ts';
import { handOver } from '../../../plugin/zones/moves/hand-over.ts';
import { ZoneReconciler } from '../../../plugin/zones/reconciler/reconciler.ts';
import {
  annotationValue,
  handoffAnnotation,
  leaseAnnotation,
  maintenanceAnnotation,
  zoneState,
} from '../../../plugin/zones/state/zone-annotations.ts';
import { loadedCluster } from '../../../plugin/zones/state/zone-object.ts';
import { FakeClock } from '../fake-clock.ts';
import type { MemoryKube } from '../kube/memory-kube.ts';
import {
  ns,
  readsJson,
  rolloutObject,
  routedObjects,
  stepPluginOf,
  threeZones,
  untilSettled,
  useVmauthFixture,
} from './memory-cluster.ts';

const clock = new FakeClock();
const vmauth = useVmauthFixture(clock);
const ref = vmclusterRef(ns, 'vm-zone-a');
const holder = { rollout: 'vm/walk', uid: 'uid-walk', revision: 'rev-r' };

/** zone-a drained and changed by Rollout walk, then handed to the reconciler by a Terminate (no rollback). */
async function handedOverZone(): Promise<{ kube: MemoryKube; plugin: ReturnType<typeof stepPluginOf> }> {
  const kube = threeZones(vmauth.port);
  kube.put(rolloutObject('walk', { currentPodHash: 'rev-r', stableRS: 'rev-s', currentStepIndex: 1 }));
  const plugin = stepPluginOf(kube, clock);
  assert.equal((await plugin.run('zone-a', 'drainReads')).phase, 'Successful');
  assert.equal((await plugin.run('zone-a', 'apply')).phase, 'Successful');
  assert.equal((await plugin.call('terminate', 'zone-a', 'drainReads')).phase, 'Successful');
  assert.equal(zoneState(kube.getStored('VMCluster', 'vm-zone-a')).handoff?.rollback, false);
  return { kube, plugin };
}

/** Lets `write` in once, just before the next patch of zone-a's VMCluster (after the caller read it). */
function beforeNextZonePatch(kube: MemoryKube, write: () => Promise<void>): void {
  kube.beforePatch = async (what) => {
    if (what !== 'VMCluster vm/vm-zone-a') return;
    kube.beforePatch = undefined;
    await write();
  };
}

test("a 409 on Abort's hand-over from the reconciler's progress note: the handoff is written again on the fresh read and keeps the note", async () => {
  const { kube, plugin } = await handedOverZone();
  const note = {
    message: 'waiting until it is operational',
    queueState: { rounds: 2 },
    updatedAt: '2030-01-01T00:01:00Z',
  };
  beforeNextZonePatch(kube, async () => {
    // The reconciler's noteProgress: a write of the handoff annotation on its own fresh read.
    const current = zoneState(kube.getStored('VMCluster', 'vm-zone-a')).handoff;
    await kube.mergePatch(ref, {
      metadata: { annotations: { [handoffAnnotation]: annotationValue({ ...current, ...note }) } },
    });
  });
  const patchesBefore = kube.patches.length;
  const sleptBefore = clock.slept.length;
  const aborted = await plugin.call('abort', 'zone-a', 'apply');
  assert.equal(aborted.phase, 'Successful', aborted.message);
  const state = zoneState(kube.getStored('VMCluster', 'vm-zone-a'));
  assert.equal(state.handoff?.rollback, true, 'the rollback request is written');
  assert.equal(state.rollback?.phase, 'requested');
  assert.equal(state.handoff?.message, note.message, "the reconciler's progress note is kept");
  assert.deepEqual(state.handoff?.queueState, note.queueState, "the queue check's rounds are kept");
  assert.equal(state.handoff?.updatedAt, note.updatedAt);
  assert.equal(state.handoff?.holder.uid, 'uid-walk');
  // The note, then the hand-over written once on the fresh read (no second Abort from scratch: no sleep).
  assert.equal(kube.patches.length - patchesBefore, 2, 'the note and one hand-over write');
  assert.deepEqual(clock.slept.slice(sleptBefore), [], 'not retried by the transient backoff');
});

test('a 409 on a hand-over because the zone changed hands (the reconciler released it meanwhile): lost, nothing written, the caller decides again', async () => {
  const { kube } = await handedOverZone();
  const decidedOn = loadedCluster(await kube.get(ref));
  beforeNextZonePatch(kube, async () => {
    await kube.mergePatch(ref, {
      metadata: {
        annotations: { [handoffAnnotation]: null, [leaseAnnotation]: null, [maintenanceAnnotation]: null },
      },
    });
  });
  const patchesBefore = kube.patches.length;
  const handed = await handOver(
    kube,
    decidedOn,
    {
      zone: 'zone-a',
      cluster: ref,
      holder,
      by: 'Abort of apply by Rollout vm/walk (revision rev-r)',
      reads: JSON.parse(readsJson),
      drainGracePeriod: '0s',
      vmagents: ['vmagent'],
      rollback: decidedOn.state.rollback,
    },
    clock.now(),
  );
  assert.equal(handed.kind, 'lost');
  assert.equal(kube.patches.length - patchesBefore, 1, 'only the release: the hand-over wrote nothing');
  const state = zoneState(kube.getStored('VMCluster', 'vm-zone-a'));
  assert.equal(state.handoff, undefined);
  assert.equal(state.lease, undefined);
  assert.equal(handed.cluster.state.handoff, undefined, 'the caller gets the zone as it is now');
});

test("the reconciler's hand-over of an ended walk loses to the walk's own Abort landing between its read and its write: the reconciler decides again in the same pass and finishes the Abort's rollback", async () => {
  const kube = threeZones(vmauth.port);
  kube.put(rolloutObject('walk', { currentPodHash: 'rev-r', stableRS: 'rev-s', currentStepIndex: 1 }));
  const plugin = stepPluginOf(kube, clock);
  assert.equal((await plugin.run('zone-a', 'drainReads')).phase, 'Successful');
  assert.equal((await plugin.run('zone-a', 'apply')).phase, 'Successful');
  kube.setStatus('Rollout', 'walk', { abort: true });
  let abort: Awaited<ReturnType<typeof plugin.call>> | undefined;
  beforeNextZonePatch(kube, async () => {
    abort = await plugin.call('abort', 'zone-a', 'apply');
  });
  const reconciler = new ZoneReconciler({ clock, kube, logger: silentLogger });
  const progress = await reconciler.tick();
  assert.equal(abort?.phase, 'Successful', abort?.message);
  assert.ok(
    progress['vm/vm-zone-a'] !== undefined,
    `the zone is worked on in the same pass: ${JSON.stringify(progress)}`,
  );
  const reasons = kube.created.map((e) => (e as { reason?: string }).reason);
  assert.ok(reasons.includes('ZoneRollbackRequested'));
  assert.ok(!reasons.includes('ZoneWalkEnded'), 'the lost hand-over said nothing');
  await untilSettled(reconciler);
  const after = kube.getStored('VMCluster', 'vm-zone-a');
  assert.equal(after.spec?.clusterVersion, 'v1.151.0-cluster', 'rolled back');
  assert.deepEqual(routedObjects(kube), ['vm-zone-a', 'vm-zone-b', 'vm-zone-c']);
});
