// A wave is admitted whole by the zone disruption budget (issue 24): the budget check of each zone's drain counts
// every zone of its step's wave, so a wave that does not fit drains nothing and waits, and two Rollouts can never
// each hold part of a wave and wait on each other until readyTimeout. The other Rollout's call is made inside the
// first one's call, at a chosen write (a hook on the in-memory API), so the interleaving is exact; fake clock.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { StepResult } from '../../../plugin/rollouts/types.ts';
import { zonesRoutedByVMUser } from '../../../plugin/vm/vmuser.ts';
import { parseSpecDocument } from '../../../plugin/zones/spec.ts';
import { zoneState } from '../../../plugin/zones/state/zone-annotations.ts';
import { readBackends } from '../../../plugin/zones/step/target.ts';
import { FakeClock } from '../fake-clock.ts';
import type { MemoryKube } from '../kube/memory-kube.ts';
import {
  zonesBehindOneVMUser as behindOneVMUser,
  ns,
  renderedRollout,
  specDocument,
  stepPluginOf,
  useVmauthFixture,
} from './memory-cluster.ts';

const clock = new FakeClock();
const vmauth = useVmauthFixture(clock);
const allZones = ['zone-a', 'zone-b', 'zone-c', 'zone-d', 'zone-e', 'zone-f'];

/** `names` (zone-a … zone-f), each an operational VMCluster, all behind VMUser vmauth-read. */
function zonesBehindOneVMUser(names: readonly string[]): MemoryKube {
  return behindOneVMUser(vmauth.port, names);
}

/** A Rollout `name` over `zones` walking `waves` under `budget`, with the steps `vmzones render` writes. */
function putRollout(
  kube: MemoryKube,
  name: string,
  zones: readonly string[],
  fields: { waves: string[][]; disruptionBudget: Record<string, number> },
): void {
  const doc = JSON.parse(specDocument()) as Record<string, unknown>;
  doc.zones = Object.fromEntries(zones.map((z) => [z, { vmcluster: `vm-${z}` }]));
  const spec = JSON.stringify({ ...doc, ...fields });
  kube.put(
    renderedRollout(name, { currentPodHash: `${name}-2`, stableRS: `${name}-1`, currentStepIndex: 0 }, spec),
  );
}

function routed(kube: MemoryKube, zones: readonly string[]): string[] {
  const doc = JSON.parse(specDocument()) as Record<string, unknown>;
  doc.zones = Object.fromEntries(zones.map((z) => [z, { vmcluster: `vm-${z}` }]));
  const backends = readBackends(parseSpecDocument(JSON.stringify(doc)), ns);
  return zonesRoutedByVMUser(kube.getStored('VMUser', 'vmauth-read').spec?.targetRefs, ns, backends);
}

const leaseOf = (kube: MemoryKube, zone: string) =>
  zoneState(kube.getStored('VMCluster', `vm-${zone}`)).lease?.rollout;

/** Runs `then` once, inside the first write of `kind` `name` after which `happened()` holds (before or after
 *  the write lands, as `when` says): another Rollout's call made at that exact point of this one's. */
function atWrite(
  kube: MemoryKube,
  target: { kind: string; name: string; when: 'before' | 'after' },
  happened: () => boolean,
  then: () => Promise<void>,
): void {
  const write = kube.mergePatch.bind(kube);
  let fired = false;
  kube.mergePatch = async (ref, patch, resourceVersion, options) => {
    const fire = async () => {
      if (fired || ref.kind !== target.kind || ref.name !== target.name || !happened()) return;
      fired = true;
      await then();
    };
    if (target.when === 'before') await fire();
    const result = await write(ref, patch, resourceVersion, options);
    if (target.when === 'after') await fire();
    return result;
  };
}

/** Calls Run again with the previous status while it is Running, as the controller does (a few times). */
async function onward(
  plugin: ReturnType<typeof stepPluginOf>,
  zones: readonly string[],
  action: string,
  first: StepResult,
): Promise<StepResult> {
  let result = first;
  for (let i = 0; i < 5 && result.phase === 'Running'; i++)
    result = await plugin.call('run', zones, action, result);
  return result;
}

const fourZones = allZones.slice(0, 4);
const eastWave = ['zone-a', 'zone-b'];
const westWave = ['zone-c', 'zone-d'];

test('two Rollouts with waves of two under maxZonesOut 2: one wave drains whole, the other drains nothing and waits', async () => {
  const kube = zonesBehindOneVMUser(fourZones);
  const budget = { maxZonesOut: 2, minZonesServing: 1 };
  putRollout(kube, 'east', fourZones, { waves: [eastWave, westWave], disruptionBudget: budget });
  putRollout(kube, 'west', fourZones, { waves: [westWave, eastWave], disruptionBudget: budget });
  const east = stepPluginOf(kube, clock, { rollout: 'east' });
  const west = stepPluginOf(kube, clock, { rollout: 'west' });

  // West's wave step runs just after east's drain took zone-a out, before east's step reaches zone-b.
  let westFirst: StepResult | undefined;
  atWrite(
    kube,
    { kind: 'VMUser', name: 'vmauth-read', when: 'after' },
    () => !routed(kube, fourZones).includes('zone-a'),
    async () => {
      westFirst = await west.call('run', westWave, 'drainReads');
    },
  );
  const eastFirst = await east.call('run', eastWave, 'drainReads');
  assert.ok(westFirst !== undefined, 'west ran inside east’s drain');

  assert.deepEqual(
    routed(kube, fourZones),
    ['zone-c', 'zone-d'],
    `east's wave out whole, west's wave still serving; east said ${eastFirst.phase}: ${eastFirst.message}; west said ${westFirst.phase}: ${westFirst.message}`,
  );
  assert.equal(westFirst.phase, 'Running', westFirst.message);
  assert.match(
    westFirst.message ?? '',
    /zone zone-a \(drainReads by Rollout vm\/east \(revision east-2\)\) is already out of reads through VMUser vm\/vmauth-read; the disruption budget allows 2 zones out at once and the wave zone-c, zone-d needs 2/,
  );
  for (const zone of westWave)
    assert.equal(leaseOf(kube, zone), undefined, `${zone}: nothing held while west waits`);

  const eastDrained = await onward(east, eastWave, 'drainReads', eastFirst);
  assert.equal(eastDrained.phase, 'Successful', eastDrained.message);
  const westWaiting = await west.call('run', westWave, 'drainReads', westFirst);
  assert.equal(westWaiting.phase, 'Running', westWaiting.message);
  assert.match(westWaiting.message ?? '', /zone-a \(.*\), zone-b \(.*\) are already out of reads/);
  assert.deepEqual(routed(kube, fourZones), ['zone-c', 'zone-d']);

  // Once east's wave is back, west's wave drains whole.
  assert.equal((await east.run(eastWave, 'restoreReads')).phase, 'Successful');
  const westDrained = await onward(west, westWave, 'drainReads', westWaiting);
  assert.equal(westDrained.phase, 'Successful', westDrained.message);
  assert.deepEqual(routed(kube, fourZones), ['zone-a', 'zone-b']);
});

test('a wave admitted on a reading another Rollout changed before the drain was written checks again on the new one', async () => {
  const kube = zonesBehindOneVMUser(fourZones);
  const budget = { maxZonesOut: 2, minZonesServing: 1 };
  putRollout(kube, 'east', fourZones, { waves: [eastWave, westWave], disruptionBudget: budget });
  putRollout(kube, 'west', fourZones, { waves: [westWave, eastWave], disruptionBudget: budget });
  const east = stepPluginOf(kube, clock, { rollout: 'east' });
  const west = stepPluginOf(kube, clock, { rollout: 'west' });

  // East's budget check passed (nothing out); west's whole wave drains before east's drain of zone-a is written.
  let westFirst: StepResult | undefined;
  atWrite(
    kube,
    { kind: 'VMCluster', name: 'vm-zone-a', when: 'after' },
    () => leaseOf(kube, 'zone-a') === `${ns}/east`,
    async () => {
      westFirst = await onward(west, westWave, 'drainReads', await west.call('run', westWave, 'drainReads'));
    },
  );
  const eastFirst = await east.call('run', eastWave, 'drainReads');
  assert.equal(westFirst?.phase, 'Successful', westFirst?.message);
  assert.deepEqual(
    routed(kube, fourZones),
    ['zone-a', 'zone-b'],
    `never more than 2 zones out; east said ${eastFirst.phase}: ${eastFirst.message}`,
  );
  assert.equal(eastFirst.phase, 'Running', eastFirst.message);
  assert.match(eastFirst.message ?? '', /zone-c \(.*\), zone-d \(.*\) are already out of reads/);

  assert.equal((await west.run(westWave, 'restoreReads')).phase, 'Successful');
  const eastDrained = await onward(east, eastWave, 'drainReads', eastFirst);
  assert.equal(eastDrained.phase, 'Successful', eastDrained.message);
  assert.deepEqual(routed(kube, fourZones), ['zone-c', 'zone-d']);
});

test('minZonesServing is counted over the whole wave: a wave that would leave too few serving drains none of its zones', async () => {
  const kube = zonesBehindOneVMUser(allZones);
  const budget = { maxZonesOut: 4, minZonesServing: 3 };
  const waves = [['zone-a', 'zone-b'], ['zone-c'], ['zone-d'], ['zone-e'], ['zone-f']];
  putRollout(kube, 'walk', allZones, { waves, disruptionBudget: budget });
  putRollout(kube, 'other', allZones, { waves: [...waves].reverse(), disruptionBudget: budget });
  const walk = stepPluginOf(kube, clock);
  const other = stepPluginOf(kube, clock, { rollout: 'other' });
  assert.equal((await other.run('zone-e', 'drainReads')).phase, 'Successful');
  assert.equal((await other.run('zone-f', 'drainReads')).phase, 'Successful');

  // zone-e and zone-f out (2 + a wave of 2 fits maxZonesOut 4), but draining zone-a and zone-b would leave only
  // zone-c and zone-d serving (2 < 3): neither leaves.
  const refused = await walk.run(['zone-a', 'zone-b'], 'drainReads');
  assert.equal(refused.phase, 'Running', refused.message);
  assert.deepEqual(
    routed(kube, allZones),
    ['zone-a', 'zone-b', 'zone-c', 'zone-d'],
    `no zone of the wave drained: ${refused.message}`,
  );
  assert.match(
    refused.message ?? '',
    /draining the wave zone-a, zone-b would leave 2 zones serving reads through VMUser vm\/vmauth-read; the disruption budget keeps at least 3 zones serving, so it waits for zone zone-e \(.*\), zone-f \(.*\)/,
  );
  for (const zone of ['zone-a', 'zone-b']) assert.equal(leaseOf(kube, zone), undefined);

  assert.equal((await other.run('zone-f', 'restoreReads')).phase, 'Successful');
  const admitted = await walk.run(['zone-a', 'zone-b'], 'drainReads');
  assert.equal(admitted.phase, 'Successful', admitted.message);
  assert.deepEqual(routed(kube, allZones), ['zone-c', 'zone-d', 'zone-f']);
});
