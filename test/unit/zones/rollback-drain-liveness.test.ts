// The rollback-drain liveness gap (issue 35, docs/reliability.md "A rollback beside another walk's wave"): walk east
// changed zone-a and zone-b and put them back into reads, then was aborted, so the reconciler must take both out
// again to undo the change; walk west's wave [zone-b, zone-c] was admitted whole under maxZonesOut 2 and took zone-c
// out, then waits for zone-b, which the reconciler holds for east. The reconciler's rollback drain was checked under
// the default budget (one zone out per balancer), so zone-c (west's) kept it out until west's wait for zone-b failed
// at 2 × readyTimeout: a cycle, broken only by a failure. In-memory API, fake clock.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { silentLogger } from '../../../plugin/goplugin/index.ts';
import type { StepResult } from '../../../plugin/rollouts/types.ts';
import { ZoneReconciler } from '../../../plugin/zones/reconciler/reconciler.ts';
import { zoneState } from '../../../plugin/zones/state/zone-annotations.ts';
import { FakeClock } from '../fake-clock.ts';
import type { MemoryKube } from '../kube/memory-kube.ts';
import {
  renderedRollout,
  routedObjects,
  specDocument,
  stepPluginOf,
  threeZones,
  useVmauthFixture,
  zoneNames,
} from './memory-cluster.ts';

const clock = new FakeClock();
const vmauth = useVmauthFixture(clock);

/** Rollout `name` over the three zones walking `waves` under maxZonesOut 2, with the steps `vmzones render` writes. */
function putRollout(kube: MemoryKube, name: string, waves: string[][]): void {
  const doc = JSON.parse(specDocument()) as Record<string, unknown>;
  const spec = JSON.stringify({ ...doc, waves, disruptionBudget: { maxZonesOut: 2, minZonesServing: 1 } });
  kube.put(
    renderedRollout(name, { currentPodHash: `${name}-2`, stableRS: `${name}-1`, currentStepIndex: 0 }, spec),
  );
}

const eastWave = ['zone-a', 'zone-b'];
const westWave = ['zone-b', 'zone-c'];

test("a rollback beside another walk's admitted wave: the reconciler rolls the aborted walk's zones back within the waiting walk's deadline, and both walks finish", async () => {
  const kube = threeZones(vmauth.port);
  putRollout(kube, 'east', [eastWave, ['zone-c']]);
  putRollout(kube, 'west', [westWave, ['zone-a']]);
  const east = stepPluginOf(kube, clock, { rollout: 'east' });
  const west = stepPluginOf(kube, clock, { rollout: 'west' });
  const reconciler = new ZoneReconciler({ clock, kube, logger: silentLogger });

  for (const action of ['drainReads', 'apply', 'restoreReads']) {
    const result = await east.run(eastWave, action);
    assert.equal(result.phase, 'Successful', `east ${action}: ${result.message}`);
  }
  // East is aborted at its next wave: the change of its first wave is handed to the reconciler to undo.
  kube.setStatus('Rollout', 'east', { abort: true });
  const aborted = await east.call('abort', eastWave, 'apply');
  assert.equal(aborted.phase, 'Successful', aborted.message);

  // West's wave is admitted whole (nothing out, 2 allowed): zone-c goes out, zone-b waits for the reconciler.
  let westDrain: StepResult = await west.call('run', westWave, 'drainReads');
  assert.equal(westDrain.phase, 'Running', westDrain.message);
  assert.deepEqual(routedObjects(kube), ['vm-zone-a', 'vm-zone-b'], 'zone-c is out for west');

  // Passes of the reconciler and Runs of west, a minute apart, within west's 2 × readyTimeout (readyTimeout 5m).
  const rolledBack = () =>
    eastWave.every((zone) => zoneState(kube.getStored('VMCluster', `vm-${zone}`)).rollback === undefined);
  let progress: Record<string, string> = {};
  for (let minute = 0; minute < 9 && westDrain.phase === 'Running'; minute++) {
    progress = await reconciler.tick();
    assert.ok(routedObjects(kube).length >= 1, 'never the last zone out');
    clock.advance(60_000);
    westDrain = await west.call('run', westWave, 'drainReads', westDrain);
    const out = zoneNames.filter((z) => !routedObjects(kube).includes(`vm-${z}`));
    assert.ok(out.length <= 2, `never more than maxZonesOut 2 out: ${out.join(', ')}`);
  }
  assert.ok(
    rolledBack(),
    `east's zones rolled back within west's wait; reconciler: ${JSON.stringify(progress)}; west: ${westDrain.message}`,
  );
  assert.equal(westDrain.phase, 'Successful', `west's wave drained: ${westDrain.message}`);
  assert.deepEqual(routedObjects(kube), ['vm-zone-a']);
});
