// Walking zones in waves under a zone disruption budget (issue 24), on the in-memory API and the fake clock: a step
// over a wave drains every zone of it, each with its own lease; a drain that would break the budget (at most N
// zones out of reads, at least M serving, across Rollouts) waits and names the zones that hold it; a spec whose
// waves leave a zone out is refused before anything is touched; an abort in the second wave rolls back the zones
// of both waves.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { silentLogger } from '../../../plugin/goplugin/index.ts';
import { zonesRoutedByVMUser } from '../../../plugin/vm/vmuser.ts';
import { ZoneReconciler } from '../../../plugin/zones/reconciler/reconciler.ts';
import { parseSpecDocument } from '../../../plugin/zones/spec.ts';
import { zoneState } from '../../../plugin/zones/state/zone-annotations.ts';
import { readBackends } from '../../../plugin/zones/step/target.ts';
import { FakeClock } from '../fake-clock.ts';
import type { MemoryKube } from '../kube/memory-kube.ts';
import {
  ns,
  renderedRollout,
  specDocument,
  stepPluginOf,
  untilSettled,
  useVmauthFixture,
  zonesBehindOneVMUser,
} from './memory-cluster.ts';

const clock = new FakeClock();
const vmauth = useVmauthFixture(clock);
const zones = ['zone-a', 'zone-b', 'zone-c', 'zone-d'];

/** The test zones plus zone-d, all four behind VMUser vmauth-read. */
function fourZones(): MemoryKube {
  return zonesBehindOneVMUser(vmauth.port, zones);
}

/** The test spec document over the four zones, with `fields` (waves, disruptionBudget...). */
function waveSpec(fields: Record<string, unknown>): string {
  const doc = JSON.parse(specDocument()) as Record<string, unknown>;
  doc.zones = Object.fromEntries(zones.map((z) => [z, { vmcluster: `vm-${z}` }]));
  return JSON.stringify({ ...doc, ...fields });
}

/** A Rollout walking `spec` with the steps `vmzones render` writes for it (no gates, no pauses). */
function putRollout(kube: MemoryKube, name: string, spec: string, revision: string): void {
  kube.put(
    renderedRollout(
      name,
      { currentPodHash: revision, stableRS: `${revision}-stable`, currentStepIndex: 0 },
      spec,
    ),
  );
}

function routed(kube: MemoryKube): string[] {
  const backends = readBackends(parseSpecDocument(waveSpec({})), ns);
  return zonesRoutedByVMUser(kube.getStored('VMUser', 'vmauth-read').spec?.targetRefs, ns, backends);
}

const stateOf = (kube: MemoryKube, zone: string) => zoneState(kube.getStored('VMCluster', `vm-${zone}`));
const versionOf = (kube: MemoryKube, zone: string) =>
  kube.getStored('VMCluster', `vm-${zone}`).spec?.clusterVersion;

const wavesSpec = waveSpec({ waves: [['zone-a'], ['zone-b', 'zone-c'], ['zone-d']] });

test('a step over a wave of two drains both zones, each with its own lease', async () => {
  const kube = fourZones();
  putRollout(kube, 'walk', wavesSpec, 'r2');
  const drained = await stepPluginOf(kube, clock).run(['zone-b', 'zone-c'], 'drainReads');
  assert.equal(drained.phase, 'Successful', drained.message);
  assert.deepEqual(routed(kube), ['zone-a', 'zone-d']);
  for (const zone of ['zone-b', 'zone-c']) {
    assert.equal(stateOf(kube, zone).lease?.rollout, `${ns}/walk`, `${zone} leased`);
    assert.equal(stateOf(kube, zone).lease?.revision, 'r2');
    const status = (drained.status?.zones as Record<string, { phase: string; state: string }> | undefined)?.[
      zone
    ];
    assert.equal(status?.phase, 'Successful');
    assert.equal(status?.state, 'drained');
  }
  assert.equal(stateOf(kube, 'zone-a').lease, undefined);
});

test('the budget refuses a third zone out of reads, naming the zones that hold it, and lets it go once they are back', async () => {
  const kube = fourZones();
  putRollout(kube, 'walk', wavesSpec, 'r2');
  putRollout(kube, 'other', waveSpec({ disruptionBudget: { maxZonesOut: 2 } }), 'o2');
  const walk = stepPluginOf(kube, clock);
  assert.equal((await walk.run(['zone-b', 'zone-c'], 'drainReads')).phase, 'Successful');

  const other = stepPluginOf(kube, clock, { rollout: 'other' });
  const refused = await other.run('zone-a', 'drainReads');
  assert.equal(refused.phase, 'Running', refused.message);
  assert.match(
    refused.message ?? '',
    /zone zone-b \(drainReads by Rollout vm\/walk \(revision r2\)\), zone-c \(drainReads by Rollout vm\/walk \(revision r2\)\) are already out of reads through VMUser vm\/vmauth-read; the disruption budget allows 2 zones out at once/,
  );
  assert.deepEqual(routed(kube), ['zone-a', 'zone-d']);
  assert.equal(stateOf(kube, 'zone-a').lease, undefined, 'nothing held while it waits');

  assert.equal((await walk.run(['zone-b', 'zone-c'], 'restoreReads')).phase, 'Successful');
  const later = await other.run('zone-a', 'drainReads');
  assert.equal(later.phase, 'Successful', later.message);
  assert.deepEqual(routed(kube), ['zone-b', 'zone-c', 'zone-d']);
});

test('two Rollouts together cannot take more zones out than the budget allows', async () => {
  const kube = fourZones();
  const budget = waveSpec({ disruptionBudget: { maxZonesOut: 2 } });
  for (const [name, revision] of [
    ['one', 'p1'],
    ['two', 'p2'],
    ['three', 'p3'],
  ] as const)
    putRollout(kube, name, budget, revision);
  assert.equal(
    (await stepPluginOf(kube, clock, { rollout: 'one' }).run('zone-b', 'drainReads')).phase,
    'Successful',
  );
  assert.equal(
    (await stepPluginOf(kube, clock, { rollout: 'two' }).run('zone-c', 'drainReads')).phase,
    'Successful',
  );
  const third = await stepPluginOf(kube, clock, { rollout: 'three' }).run('zone-a', 'drainReads');
  assert.equal(third.phase, 'Running', third.message);
  assert.match(
    third.message ?? '',
    /zone-b \(drainReads by Rollout vm\/one \(revision p1\)\), zone-c \(drainReads by Rollout vm\/two \(revision p2\)\) are already out of reads/,
  );
  assert.deepEqual(routed(kube), ['zone-a', 'zone-d']);
});

test('the budget keeps at least minZonesServing zones serving, naming the zone out', async () => {
  const kube = fourZones();
  const budget = waveSpec({ disruptionBudget: { maxZonesOut: 2, minZonesServing: 3 } });
  putRollout(kube, 'one', budget, 'p1');
  putRollout(kube, 'two', budget, 'p2');
  assert.equal(
    (await stepPluginOf(kube, clock, { rollout: 'one' }).run('zone-b', 'drainReads')).phase,
    'Successful',
  );
  const second = await stepPluginOf(kube, clock, { rollout: 'two' }).run('zone-c', 'drainReads');
  assert.equal(second.phase, 'Running', second.message);
  assert.match(
    second.message ?? '',
    /draining zone zone-c would leave 2 zones serving reads through VMUser vm\/vmauth-read; the disruption budget keeps at least 3 zones serving, so it waits for zone zone-b \(drainReads by Rollout vm\/one/,
  );
  assert.deepEqual(routed(kube), ['zone-a', 'zone-c', 'zone-d']);
});

test('the step refuses a spec whose waves leave a zone out, and a wave wider than the budget, touching nothing', async () => {
  const kube = fourZones();
  putRollout(kube, 'walk', wavesSpec, 'r2');
  const leftOut = JSON.parse(wavesSpec) as Record<string, unknown>;
  leftOut.waves = [['zone-a'], ['zone-b', 'zone-c']];
  const rollout = kube.getStored('Rollout', 'walk', 'argoproj.io/v1alpha1') as unknown as {
    spec: { template: { metadata: { annotations: Record<string, string> } } };
  };
  rollout.spec.template.metadata.annotations['vmzones.io/spec'] = JSON.stringify(leftOut);
  kube.put(rollout as unknown as Parameters<MemoryKube['put']>[0]);
  const refused = await stepPluginOf(kube, clock).run('zone-a', 'drainReads');
  assert.equal(refused.phase, 'Failed');
  assert.match(refused.message ?? '', /waves: the walk in waves leaves out zone-d/);

  putRollout(kube, 'narrow', waveSpec({}), 'n2');
  const wide = await stepPluginOf(kube, clock, { rollout: 'narrow' }).run(['zone-b', 'zone-c'], 'drainReads');
  assert.equal(wide.phase, 'Failed');
  assert.match(
    wide.message ?? '',
    /a wave of 2 zones \(zone-b, zone-c\) exceeds the spec's disruptionBudget\.maxZonesOut 1/,
  );
  assert.deepEqual(routed(kube), zones);
  for (const zone of zones) assert.equal(stateOf(kube, zone).lease, undefined);
});

test('an abort in the second wave rolls back the zones of both waves and every zone serves reads again', async () => {
  const kube = fourZones();
  putRollout(kube, 'walk', wavesSpec, 'r2');
  const walk = stepPluginOf(kube, clock);
  const at = (index: number) => kube.setStatus('Rollout', 'walk', { currentStepIndex: index });
  // Wave 1 (steps 0-2), then wave 2 drained and changed (steps 3-4).
  const executed: [string | string[], string][] = [];
  for (const [index, wave, action] of [
    [0, 'zone-a', 'drainReads'],
    [1, 'zone-a', 'apply'],
    [2, 'zone-a', 'restoreReads'],
    [3, ['zone-b', 'zone-c'], 'drainReads'],
    [4, ['zone-b', 'zone-c'], 'apply'],
  ] as const) {
    at(index);
    const result = await walk.run(wave, action);
    assert.equal(result.phase, 'Successful', result.message);
    executed.push([wave as string | string[], action]);
  }
  for (const zone of ['zone-a', 'zone-b', 'zone-c']) assert.equal(versionOf(kube, zone), 'v1.152.0-cluster');
  assert.deepEqual(routed(kube), ['zone-a', 'zone-d']);

  // The controller aborts: Abort of every executed step, newest first; then the reconciler finishes.
  kube.setStatus('Rollout', 'walk', { abort: true });
  for (const [wave, action] of executed.reverse()) {
    const aborted = await walk.call('abort', wave, action);
    assert.equal(aborted.phase, 'Successful', aborted.message);
  }
  const progress = await untilSettled(new ZoneReconciler({ clock, kube, logger: silentLogger }), 30);
  assert.ok(
    Object.values(progress).every((p) => p === 'done'),
    JSON.stringify(progress),
  );
  for (const zone of zones) {
    assert.equal(versionOf(kube, zone), 'v1.151.0-cluster', `${zone} rolled back (or never changed)`);
    const state = stateOf(kube, zone);
    assert.equal(state.lease, undefined, `${zone} released`);
    assert.equal(state.maintenance, undefined, `${zone} out of maintenance`);
    assert.equal(state.handoff, undefined, `${zone} finished`);
  }
  assert.deepEqual(routed(kube), zones);
});

test('the reconciler leaves a wave in progress to its steps, and finishes it once the walk moved past it', async () => {
  const kube = fourZones();
  putRollout(kube, 'walk', wavesSpec, 'r2');
  kube.setStatus('Rollout', 'walk', { currentStepIndex: 3 });
  assert.equal((await stepPluginOf(kube, clock).run(['zone-b', 'zone-c'], 'drainReads')).phase, 'Successful');
  const reconciler = new ZoneReconciler({ clock, kube, logger: silentLogger });
  // Steps 3-5 are the wave's; at step 5 (its restoreReads) the zones are still the walk's.
  kube.setStatus('Rollout', 'walk', { currentStepIndex: 5 });
  assert.deepEqual(await reconciler.tick(), {});
  assert.deepEqual(routed(kube), ['zone-a', 'zone-d']);
  // Past the wave (promoted on) without its restoreReads: the reconciler brings both zones back.
  kube.setStatus('Rollout', 'walk', { currentStepIndex: 6 });
  await untilSettled(reconciler);
  assert.deepEqual(routed(kube), zones);
  for (const zone of ['zone-b', 'zone-c'])
    assert.equal(stateOf(kube, zone).lease, undefined, `${zone} released`);
});
