// A soak finding (issue 25, docs/reliability.md "Randomized soak", seed 4242 walk 11): soak-b's walk of revision R
// finished and became stable (zone-d changed to R's value, its rollback record left `applied`); the next revision R2
// was promoted with `promote --full` before it reached zone-d. The reconciler read zone-d's record of R as
// "abandoned: the Rollout went back to its stable revision R2" and rolled zone-d back to the value before R, older
// than any revision promoted since. A stable revision that moved past the one R changed the zone over is no way
// back; only a return to that revision (a Git revert) undoes R. Deterministic, on the in-memory API and the fake clock.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { silentLogger } from '../../../plugin/goplugin/index.ts';
import { ZoneReconciler } from '../../../plugin/zones/reconciler/reconciler.ts';
import { zoneState } from '../../../plugin/zones/state/zone-annotations.ts';
import { FakeClock } from '../fake-clock.ts';
import type { MemoryKube } from '../kube/memory-kube.ts';
import { rolloutObject, stepPluginOf, threeZones, untilSettled, useVmauthFixture } from './memory-cluster.ts';

const clock = new FakeClock();
const vmauth = useVmauthFixture(clock);

const version = (kube: MemoryKube, zone: string) =>
  kube.getStored('VMCluster', `vm-${zone}`).spec?.clusterVersion;

/** Revision rev-r walks zone-a to the end (drain, apply, restore) and is promoted to stable. */
async function finishedWalk() {
  const kube = threeZones(vmauth.port);
  kube.put(rolloutObject('walk', { currentPodHash: 'rev-r', stableRS: 'rev-s', currentStepIndex: 0 }));
  const { run } = stepPluginOf(kube, clock);
  for (const action of ['drainReads', 'apply', 'restoreReads']) {
    const result = await run('zone-a', action);
    assert.equal(result.phase, 'Successful', `${action}: ${result.message}`);
  }
  kube.setStatus('Rollout', 'walk', { stableRS: 'rev-r', currentStepIndex: 9 });
  const reconciler = new ZoneReconciler({ clock, kube, logger: silentLogger });
  await untilSettled(reconciler);
  assert.equal(version(kube, 'zone-a'), 'v1.152.0-cluster', "rev-r's walk finished with zone-a changed");
  assert.equal(zoneState(kube.getStored('VMCluster', 'vm-zone-a')).rollback?.phase, 'applied');
  return { kube, reconciler };
}

test('promote --full of the next revision before it reaches a zone: the zone keeps the stable walk it had', async () => {
  const { kube, reconciler } = await finishedWalk();
  // The next revision starts and is promoted fully at its first step: zone-a is never walked by it.
  kube.setStatus('Rollout', 'walk', { currentPodHash: 'rev-r2', currentStepIndex: 0 });
  await untilSettled(reconciler);
  kube.setStatus('Rollout', 'walk', { stableRS: 'rev-r2', currentStepIndex: 9 });
  await untilSettled(reconciler, 20);
  assert.equal(
    version(kube, 'zone-a'),
    'v1.152.0-cluster',
    "zone-a must keep rev-r's change: rev-r was promoted, and rev-r2's promotion undoes nothing",
  );
  const state = zoneState(kube.getStored('VMCluster', 'vm-zone-a'));
  assert.equal(state.lease, undefined);
  assert.equal(state.handoff, undefined);
  assert.equal(state.maintenance, undefined);
});

test('a Git revert to the revision the walk changed the zone over still rolls the zone back', async () => {
  const kube = threeZones(vmauth.port);
  kube.put(rolloutObject('walk', { currentPodHash: 'rev-r', stableRS: 'rev-s', currentStepIndex: 0 }));
  const { run } = stepPluginOf(kube, clock);
  for (const action of ['drainReads', 'apply', 'restoreReads'])
    assert.equal((await run('zone-a', action)).phase, 'Successful', action);
  kube.setStatus('Rollout', 'walk', { currentPodHash: 'rev-s', currentStepIndex: 9 });
  await untilSettled(new ZoneReconciler({ clock, kube, logger: silentLogger }), 20);
  assert.equal(version(kube, 'zone-a'), 'v1.151.0-cluster', 'the abandoned revision rev-r is undone');
});
