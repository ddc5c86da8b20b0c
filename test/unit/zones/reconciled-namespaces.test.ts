// No ending depends on a reconciler that never looks (plugin/kube/allowed-namespaces.ts reconcilerNamespaces): the
// reconciler lists every namespace a step may act in (`--watch-namespaces` plus `--allowed-namespaces`), a step
// whose zone lies outside them fails before it acts, and `--allowed-namespaces=*` with `--watch-namespaces` is
// refused at init. Both flags are named in every message.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { silentLogger } from '../../../plugin/goplugin/index.ts';
import type { RolloutView } from '../../../plugin/rollouts/types.ts';
import { zonesRoutedByVMUser } from '../../../plugin/vm/vmuser.ts';
import { parseSpecDocument } from '../../../plugin/zones/spec.ts';
import { zoneState } from '../../../plugin/zones/state/zone-annotations.ts';
import { readBackends } from '../../../plugin/zones/step/target.ts';
import { createZoneStepPlugin } from '../../../plugin/zones/step-plugin.ts';
import { FakeClock } from '../fake-clock.ts';
import type { MemoryKube } from '../kube/memory-kube.ts';
import {
  ns,
  rolloutObject,
  specDocument,
  threeZones,
  untilSettled,
  useVmauthFixture,
} from './memory-cluster.ts';

const clock = new FakeClock();
const vmauth = useVmauthFixture(clock);
const revision = 'rev-r';

/** A Rollout in `namespace` whose spec document names the zones of namespace `zonesIn` (default: its own). */
function rolloutIn(kube: MemoryKube, namespace: string, zonesIn?: string): RolloutView {
  const spec = JSON.parse(specDocument()) as Record<string, unknown>;
  const rollout = rolloutObject(
    'walk',
    { currentPodHash: revision, stableRS: 'rev-s', currentStepIndex: 0 },
    JSON.stringify(zonesIn === undefined ? spec : { ...spec, namespace: zonesIn }),
  );
  rollout.metadata.namespace = namespace;
  kube.put(rollout);
  return structuredClone(rollout) as unknown as RolloutView;
}

function plugin(kube: MemoryKube, allowed: { all: true } | { all: false; extra: string[] }, watch: string[]) {
  return createZoneStepPlugin({
    clock,
    kube,
    namespaces: allowed,
    watchNamespaces: watch,
    logger: silentLogger,
    inCallWaitMs: 1_000,
    // The test drives the reconciler's passes itself.
    reconcileIntervalMs: 3_600_000,
  });
}

function routed(kube: MemoryKube): string[] {
  const backends = readBackends(parseSpecDocument(specDocument()), ns);
  return zonesRoutedByVMUser(kube.getStored('VMUser', 'vmauth-read').spec?.targetRefs, ns, backends);
}

test('a step in a namespace allowed but not in --watch-namespaces: its Abort is finished, because the reconciler watches every namespace steps may act in', async () => {
  const kube = threeZones(vmauth.port);
  const rollout = rolloutIn(kube, 'apps', ns);
  const step = plugin(kube, { all: false, extra: [ns] }, ['apps']);
  await step.init();
  const reconciler = step.reconciler();
  assert.ok(reconciler);
  await step.stop();
  const run = (action: string, operation: 'run' | 'abort' = 'run') =>
    step[operation](rollout, {
      pluginName: 'vmzones/step',
      config: { zone: 'zone-a', action },
      status: undefined,
    });
  let drained = await run('drainReads');
  for (let i = 0; i < 5 && drained.phase === 'Running'; i++) drained = await run('drainReads');
  assert.equal(drained.phase, 'Successful', drained.message);
  assert.equal((await run('apply')).phase, 'Successful');
  const aborted = await run('apply', 'abort');
  assert.equal(aborted.phase, 'Successful', aborted.message);
  assert.equal(zoneState(kube.getStored('VMCluster', 'vm-zone-a')).rollback?.phase, 'requested');

  await untilSettled(reconciler, 20);
  const state = zoneState(kube.getStored('VMCluster', 'vm-zone-a'));
  assert.equal(state.rollback, undefined, 'rolled back and its record cleared');
  assert.equal(state.lease, undefined, 'released');
  assert.equal(kube.getStored('VMCluster', 'vm-zone-a').spec?.clusterVersion, 'v1.151.0-cluster');
  assert.deepEqual(routed(kube), ['zone-a', 'zone-b', 'zone-c']);
});

test('a Rollout outside the reconciled namespaces acting in its own namespace fails at once, naming both flags, and writes nothing', async () => {
  const kube = threeZones(vmauth.port);
  const rollout = rolloutIn(kube, 'team-x');
  const step = plugin(kube, { all: false, extra: [ns] }, ['apps']);
  const result = await step.run(rollout, {
    pluginName: 'vmzones/step',
    config: { zone: 'zone-a', action: 'drainReads' },
    status: undefined,
  });
  assert.equal(result.phase, 'Failed');
  assert.equal(result.status?.code, 'NamespaceNotAllowed');
  assert.match(result.message ?? '', /namespace team-x/);
  assert.match(result.message ?? '', /--watch-namespaces/);
  assert.match(result.message ?? '', /--allowed-namespaces/);
  assert.deepEqual(kube.patches, []);
});

test('--allowed-namespaces=* with --watch-namespaces is refused at init, naming both flags', async () => {
  const kube = threeZones(vmauth.port);
  const step = plugin(kube, { all: true }, ['apps']);
  await assert.rejects(step.init(), {
    code: 'FlagInvalid',
    message: /--allowed-namespaces=\* .*--watch-namespaces=apps/,
  });
  await step.stop();
});
