// Issue 21 item 2: a step's takeover and the reconciler's restore never interleave. The takeover is made to land
// exactly between the reconciler's read of the zone and its restore: inside the vmagent queue check, which the
// reconciler runs after deciding that the zone is complete and before it puts reads back.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { silentLogger } from '../../../plugin/goplugin/index.ts';
import type { StepResult } from '../../../plugin/rollouts/types.ts';
import { restoreZone } from '../../../plugin/vm/read-routing.ts';
import { zonesRoutedByVMUser } from '../../../plugin/vm/vmuser.ts';
import { ZoneReconciler } from '../../../plugin/zones/reconciler/reconciler.ts';
import { parseSpecDocument } from '../../../plugin/zones/spec.ts';
import { zoneState } from '../../../plugin/zones/state/zone-annotations.ts';
import { readBackends, readBalancerConfigs } from '../../../plugin/zones/step/target.ts';
import { FakeClock } from '../fake-clock.ts';
import type { MemoryKube } from '../kube/memory-kube.ts';
import {
  ns,
  rolloutObject,
  specDocument,
  stepPluginOf,
  threeZones,
  untilSettled,
  useVmauthFixture,
} from './memory-cluster.ts';

const clock = new FakeClock();
const vmauth = useVmauthFixture(clock);

function routed(kube: MemoryKube): string[] {
  const backends = readBackends(parseSpecDocument(specDocument()), ns);
  return zonesRoutedByVMUser(kube.getStored('VMUser', 'vmauth-read').spec?.targetRefs, ns, backends);
}

function setup() {
  const kube = threeZones(vmauth.port);
  kube.put(rolloutObject('walk', { currentPodHash: 'rev-r', stableRS: 'rev-s', currentStepIndex: 0 }));
  const { call, run } = stepPluginOf(kube, clock);
  const step = (zone: string, action: string): Promise<StepResult> => call('run', zone, action);
  return { kube, step, run };
}

async function drainAndApply(run: ReturnType<typeof setup>['run'], zone: string): Promise<void> {
  const drained = await run(zone, 'drainReads');
  assert.equal(drained.phase, 'Successful', drained.message);
  assert.equal((await run(zone, 'apply')).phase, 'Successful');
}

test("a new revision's drainReads takes the zone back while the reconciler checks its queues: the reconciler's restore loses, the zone stays out of reads and the walk goes on", async () => {
  const { kube, step, run } = setup();
  await drainAndApply(run, 'zone-c');
  // A new revision mid-walk: the reconciler finishes the zone the old walk left in hand.
  kube.setStatus('Rollout', 'walk', { currentPodHash: 'rev-r3', currentStepIndex: 0 });
  let takeover: StepResult | undefined;
  const reconciler = new ZoneReconciler({
    clock,
    kube,
    logger: silentLogger,
    queueCheck: async () => {
      // The new walk's drainReads runs while the reconciler is reading the vmagent queues.
      takeover ??= await step('zone-c', 'drainReads');
      return { verdict: 'pass', message: 'drained' };
    },
  });
  await reconciler.tick();
  assert.ok(takeover !== undefined, 'the queue check ran: the reconciler reached the restore');
  assert.match(takeover.message ?? '', /took the zone back from the vmzones reconciler/);
  assert.deepEqual(
    routed(kube),
    ['zone-a', 'zone-b'],
    'the reconciler did not put the taken zone back into reads',
  );
  const state = zoneState(kube.getStored('VMCluster', 'vm-zone-c'));
  assert.equal(state.handoff, undefined);
  assert.equal(state.lease?.revision, 'rev-r3');
  await untilSettled(reconciler);
  assert.deepEqual(routed(kube), ['zone-a', 'zone-b'], 'nor on a later pass');
  let drained = takeover;
  for (let i = 0; i < 5 && drained.phase === 'Running'; i++) drained = await step('zone-c', 'drainReads');
  assert.equal(drained.phase, 'Successful', drained.message);
  const applied = await step('zone-c', 'apply');
  assert.equal(applied.phase, 'Successful', applied.message);
});

test('the reconciler started putting reads back first: the new walk waits for it instead of taking the zone', async () => {
  const { kube, step, run } = setup();
  await drainAndApply(run, 'zone-c');
  kube.setStatus('Rollout', 'walk', { currentPodHash: 'rev-r3', currentStepIndex: 0 });
  // vmauth never proves the restore in this pass: the reconciler stops after its guarded restore write.
  const reconciler = new ZoneReconciler({ clock, kube, logger: silentLogger });
  kube.heldBack.add(`VMUser ${ns}/vmauth-read`);
  await reconciler.tick();
  const state = zoneState(kube.getStored('VMCluster', 'vm-zone-c'));
  assert.notEqual(state.maintenance?.restoringSince, undefined, 'the restore began with its guarded write');
  const waiting = await step('zone-c', 'drainReads');
  assert.equal(waiting.phase, 'Running', waiting.message);
  assert.match(waiting.message ?? '', /it is putting reads back/);
  kube.heldBack.delete(`VMUser ${ns}/vmauth-read`);
  kube.setStatus('VMUser', 'vmauth-read', { updateStatus: 'operational', observedGeneration: 99 });
  await untilSettled(reconciler);
  assert.deepEqual(routed(kube), ['zone-a', 'zone-b', 'zone-c'], 'the reconciler finished the restore');
  let drained = await step('zone-c', 'drainReads');
  for (let i = 0; i < 5 && drained.phase === 'Running'; i++) drained = await step('zone-c', 'drainReads');
  assert.equal(drained.phase, 'Successful', drained.message);
});

test('drainReads never reports drained on a proof of another routing: the zone put back while vmauth was checked keeps the step Running', async () => {
  const { kube, step, run } = setup();
  await drainAndApply(run, 'zone-c');
  kube.setStatus('Rollout', 'walk', { currentPodHash: 'rev-r3', currentStepIndex: 0 });
  kube.heldBack.add(`VMCluster ${ns}/vm-zone-c`);
  kube.setStatus('VMCluster', 'vm-zone-c', { updateStatus: 'expanding' });
  await new ZoneReconciler({ clock, kube, logger: silentLogger }).tick();
  assert.notEqual(zoneState(kube.getStored('VMCluster', 'vm-zone-c')).handoff, undefined, 'handed over');
  // While the new walk's drainReads lists the vmauth pods for its proof, the zone goes back into the balancer
  // (an unguarded restore, as the reconciler made before, or a GitOps sync of the VMUser).
  const [config] = readBalancerConfigs(parseSpecDocument(specDocument()), ns);
  assert.ok(config !== undefined);
  const list = kube.list.bind(kube);
  let armed = true;
  kube.list = async (apiVersion, kind, namespace, labelSelector) => {
    if (armed && kind === 'Pod') {
      armed = false;
      await restoreZone(kube, config, 'zone-c', clock);
    }
    return list(apiVersion, kind, namespace, labelSelector);
  };
  const taken = await step('zone-c', 'drainReads');
  assert.equal(armed, false, 'the proof was read');
  assert.deepEqual(routed(kube), ['zone-a', 'zone-b', 'zone-c'], 'the zone serves reads again');
  assert.notEqual(taken.phase, 'Successful', `reported drained while serving reads: ${taken.message}`);
  // The next Run sees the zone routed and drains it again, with proof of that drain.
  let drained = await step('zone-c', 'drainReads');
  for (let i = 0; i < 5 && drained.phase === 'Running'; i++) drained = await step('zone-c', 'drainReads');
  assert.equal(drained.phase, 'Successful', drained.message);
  assert.deepEqual(routed(kube), ['zone-a', 'zone-b']);
});
