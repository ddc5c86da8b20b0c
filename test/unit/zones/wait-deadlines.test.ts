// Issue 21 item 3: every wait of a step ends. A simulated clock (the plugin's `now`) is moved past the deadline;
// the step then fails naming what gave no proof, and the zone keeps a state the reconciler or a retry can finish.

import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, test } from 'node:test';
import { silentLogger } from '../../../plugin/goplugin/index.ts';
import type { RolloutView, StepResult } from '../../../plugin/rollouts/types.ts';
import { zoneState } from '../../../plugin/zones/state/zone-annotations.ts';
import { createZoneStepPlugin } from '../../../plugin/zones/step-plugin.ts';
import { FakeClock } from '../fake-clock.ts';
import { readyPod } from '../kube/memory-kube.ts';
import { ns, rolloutObject, threeZones, useVmauthFixture } from './memory-cluster.ts';

const clock = new FakeClock();
const vmauth = useVmauthFixture(clock);
const minute = 60_000;

function setup() {
  const kube = threeZones(vmauth.port);
  kube.put(rolloutObject('walk', { currentPodHash: 'rev-r', stableRS: 'rev-s', currentStepIndex: 0 }));
  // The plugin and vmauth's fixture share the file's fake clock; the test moves it past the deadlines.
  const plugin = createZoneStepPlugin({
    clock,
    kube,
    reconciler: false,
    logger: silentLogger,
    inCallWaitMs: 0,
  });
  const rollout = () => kube.getStored('Rollout', 'walk', 'argoproj.io/v1alpha1') as unknown as RolloutView;
  const step = (zone: string, action: string, previous?: StepResult): Promise<StepResult> =>
    plugin.run(rollout(), { pluginName: 'vmzones/step', config: { zone, action }, status: previous?.status });
  const abort = (zone: string, action: string): Promise<StepResult> =>
    plugin.abort(rollout(), { pluginName: 'vmzones/step', config: { zone, action }, status: undefined });
  return { kube, step, abort };
}

async function drainAndApply(step: ReturnType<typeof setup>['step'], zone: string): Promise<void> {
  let drained = await step(zone, 'drainReads');
  for (let i = 0; i < 20 && drained.phase === 'Running'; i++) {
    await new Promise((resolve) => setTimeout(resolve, 250));
    drained = await step(zone, 'drainReads', drained);
  }
  assert.equal(drained.phase, 'Successful', drained.message);
  const applied = await step(zone, 'apply');
  assert.equal(applied.phase, 'Successful', applied.message);
}

test('restoreReads: no vmauth proof within readyTimeout fails the step naming the pod; the zone stays leased for the reconciler', async () => {
  const { kube, step } = setup();
  await drainAndApply(step, 'zone-a');
  // A second vmauth replica comes up whose config reload fails: it never proves the restore.
  const broken = createServer((_request, response) =>
    response.end(
      'vmauth_config_last_reload_successful 0\nvmauth_config_last_reload_success_timestamp_seconds 1000\nprocess_start_time_seconds 999\n',
    ),
  );
  await new Promise<void>((resolve) => broken.listen(0, '127.0.0.1', resolve));
  after(() => new Promise((resolve) => broken.close(resolve)));
  kube.put(readyPod(ns, 'vmauth-1', { app: 'vmauth' }, { http: (broken.address() as AddressInfo).port }));
  let result = await step('zone-a', 'restoreReads');
  assert.equal(result.phase, 'Running', result.message);
  assert.match(result.message ?? '', /waiting until every vmauth replica serves that/);
  clock.advance(10 * minute);
  result = await step('zone-a', 'restoreReads', result);
  assert.equal(result.phase, 'Running', 'within readyTimeout it still waits');
  clock.advance(6 * minute);
  result = await step('zone-a', 'restoreReads', result);
  assert.equal(result.phase, 'Failed', `still ${result.phase} 16 min after the restore: ${result.message}`);
  assert.equal(result.status?.code, 'ReloadUnproven');
  assert.match(result.message ?? '', /last reload failed on vm\/vmauth-1/, 'names the pod');
  const state = zoneState(kube.getStored('VMCluster', 'vm-zone-a'));
  assert.equal(
    state.lease?.revision,
    'rev-r',
    'the lease stays: the reconciler finishes the zone after the abort',
  );
  assert.notEqual(state.maintenance, undefined);
});

test('drainReads waiting for another zone to be healthy fails at readyTimeout naming that zone, having written nothing', async () => {
  const { kube, step } = setup();
  kube.heldBack.add(`VMCluster ${ns}/vm-zone-b`);
  kube.setStatus('VMCluster', 'vm-zone-b', { updateStatus: 'expanding' });
  let result = await step('zone-a', 'drainReads');
  assert.equal(result.phase, 'Running', result.message);
  assert.equal((result.status as Record<string, unknown>).state, 'waitingForOtherZones');
  clock.advance(10 * minute);
  result = await step('zone-a', 'drainReads', result);
  assert.equal(result.phase, 'Running', 'within readyTimeout it still waits');
  clock.advance(6 * minute);
  result = await step('zone-a', 'drainReads', result);
  assert.equal(result.phase, 'Failed', result.message);
  assert.equal(result.status?.code, 'DrainBudget');
  assert.match(result.message ?? '', /zone-b/, 'names the zone');
  assert.equal(zoneState(kube.getStored('VMCluster', 'vm-zone-a')).lease, undefined, 'nothing was written');
});

test('apply waiting for the reconciler fails after twice readyTimeout; the handoff stays for the reconciler', async () => {
  const { kube, step, abort } = setup();
  await drainAndApply(step, 'zone-a');
  assert.equal((await abort('zone-a', 'apply')).phase, 'Successful');
  // The next revision reaches zone-a, but no reconciler runs (a stuck one).
  kube.setStatus('Rollout', 'walk', { currentPodHash: 'rev-r2', currentStepIndex: 0, abort: false });
  let result = await step('zone-a', 'apply');
  assert.equal(result.phase, 'Running', result.message);
  assert.equal((result.status as Record<string, unknown>).state, 'waitingForHandoff');
  clock.advance(29 * minute);
  result = await step('zone-a', 'apply', result);
  assert.equal(result.phase, 'Running', 'within twice readyTimeout it still waits');
  clock.advance(2 * minute);
  result = await step('zone-a', 'apply', result);
  assert.equal(result.phase, 'Failed', result.message);
  assert.equal(result.status?.code, 'HandoffTimeout');
  assert.notEqual(zoneState(kube.getStored('VMCluster', 'vm-zone-a')).handoff, undefined);
});

test("restoreReads waits out the operator's transient `failed` for 60 s: a recovery passes, a failure that persists fails ZoneFailed", async () => {
  const { kube, step } = setup();
  await drainAndApply(step, 'zone-a');
  // The operator's own kind of transient failure (a race with kube-controller-manager), seen on the sandbox.
  const generation = kube.getStored('VMCluster', 'vm-zone-a').metadata.generation;
  const failedStatus = {
    updateStatus: 'failed',
    observedGeneration: generation,
    reason: 'cannot update statefulset: currentReplicas cannot be greater than status.replicas',
  };
  kube.heldBack.add(`VMCluster ${ns}/vm-zone-a`);
  kube.setStatus('VMCluster', 'vm-zone-a', failedStatus);
  let result = await step('zone-a', 'restoreReads');
  assert.equal(result.phase, 'Running', result.message);
  assert.match(result.message ?? '', /the operator retries a failed reconcile; vmzones waits up to 60s/);
  clock.advance(30_000);
  result = await step('zone-a', 'restoreReads', result);
  assert.equal(result.phase, 'Running', `30 s into the failure it still waits: ${result.message}`);
  clock.advance(30_000);
  result = await step('zone-a', 'restoreReads', result);
  assert.equal(result.phase, 'Failed', `60 s of failed is final: ${result.message}`);
  assert.equal(result.status?.code, 'ZoneFailed');
  assert.match(
    result.message ?? '',
    /currentReplicas cannot be greater.*reported failed for 60s.*reads stay drained/,
  );

  // A failure the operator recovers from within the grace: the next restoreReads brings the zone back.
  result = await step('zone-a', 'restoreReads');
  assert.equal(result.phase, 'Running', result.message);
  clock.advance(20_000);
  kube.setStatus('VMCluster', 'vm-zone-a', { updateStatus: 'operational', observedGeneration: generation });
  for (let i = 0; i < 20 && result.phase === 'Running'; i++) {
    result = await step('zone-a', 'restoreReads', result);
    clock.advance(1_000);
  }
  assert.equal(result.phase, 'Successful', result.message);
});
