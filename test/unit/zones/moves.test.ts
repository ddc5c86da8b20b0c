// The zone state machine of docs/architecture.md ("Zone states and who moves them"), edge by edge: every guarded
// write of the zone's VMCluster or its read balancer is watched, the zone's state named after it from the
// annotations and the routing (this file's own reading, not the product's), and the path taken compared with the
// table. Each test drives the real step actions and the reconciler on the in-memory API.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { silentLogger } from '../../../plugin/goplugin/index.ts';
import { KubeError, type ObjectRef, type PatchOptions } from '../../../plugin/kube/objects.ts';
import type { RolloutView, StepResult } from '../../../plugin/rollouts/types.ts';
import { zonesRoutedByVMUser } from '../../../plugin/vm/vmuser.ts';
import { transition } from '../../../plugin/zones/moves/transition.ts';
import { ZoneReconciler } from '../../../plugin/zones/reconciler/reconciler.ts';
import { parseSpecDocument } from '../../../plugin/zones/spec.ts';
import { loadedCluster } from '../../../plugin/zones/state/zone-object.ts';
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

type Json = Record<string, unknown>;

function annotation(kube: MemoryKube, zone: string, key: string): Json | undefined {
  const text = kube.getStored('VMCluster', `vm-${zone}`).metadata.annotations?.[`vmzones.io/${key}`];
  return text === undefined ? undefined : (JSON.parse(text) as Json);
}

function routed(kube: MemoryKube): string[] {
  const backends = readBackends(parseSpecDocument(specDocument()), ns);
  return zonesRoutedByVMUser(kube.getStored('VMUser', 'vmauth-read').spec?.targetRefs, ns, backends);
}

/** The state names of the table, read from the annotations and the routing. */
function stateName(kube: MemoryKube, zone: string): string {
  const lease = annotation(kube, zone, 'lease');
  const maintenance = annotation(kube, zone, 'maintenance');
  const rollback = annotation(kube, zone, 'rollback');
  const handoff = annotation(kube, zone, 'handoff');
  if (maintenance?.restoringSince !== undefined) return 'restoring';
  if (handoff !== undefined) {
    if (rollback?.phase === 'requested' && handoff.rollback === true) return 'rollbackRequested';
    if (rollback?.phase === 'reverted') return 'reverted';
    return 'handedOver';
  }
  if (lease !== undefined && maintenance !== undefined) {
    return rollback?.phase === 'applied' && rollback.revision === lease.revision ? 'changed' : 'held';
  }
  if (lease === undefined && maintenance === undefined)
    return routed(kube).includes(zone) ? 'serving' : 'unrouted';
  return 'partial';
}

function setup(zone: string) {
  const kube = threeZones(vmauth.port);
  kube.put(rolloutObject('walk', { currentPodHash: 'rev-r', stableRS: 'rev-s', currentStepIndex: 0 }));
  const path: string[] = [stateName(kube, zone)];
  const write = kube.mergePatch.bind(kube);
  kube.mergePatch = async (ref: ObjectRef, patch: Json, resourceVersion?: string, options?: PatchOptions) => {
    const written = await write(ref, patch, resourceVersion, options);
    if (!options?.dryRun && (ref.name === `vm-${zone}` || ref.kind === 'VMUser')) {
      const name = stateName(kube, zone);
      if (path.at(-1) !== name) path.push(name);
    }
    return written;
  };
  const plugin = createZoneStepPlugin({
    clock,
    kube,
    reconciler: false,
    logger: silentLogger,
    inCallWaitMs: 1_000,
  });
  const rollout = () => kube.getStored('Rollout', 'walk', 'argoproj.io/v1alpha1') as unknown as RolloutView;
  const call = (operation: 'run' | 'abort' | 'terminate', action: string): Promise<StepResult> =>
    plugin[operation](rollout(), { pluginName: 'vmzones/step', config: { zone, action }, status: undefined });
  const run = async (action: string): Promise<StepResult> => {
    let result = await call('run', action);
    for (let i = 0; i < 5 && result.phase === 'Running'; i++) result = await call('run', action);
    return result;
  };
  const reconciler = new ZoneReconciler({ clock, kube, logger: silentLogger });
  return { kube, path, run, call, reconciler };
}

async function succeeds(result: Promise<StepResult>): Promise<void> {
  const done = await result;
  assert.equal(done.phase, 'Successful', done.message);
}

test('step walk: serving → held (drainReads) → changed (apply) → restoring → serving (restoreReads)', async () => {
  const { path, run } = setup('zone-a');
  await succeeds(run('drainReads'));
  await succeeds(run('apply'));
  await succeeds(run('restoreReads'));
  assert.deepEqual(path, ['serving', 'held', 'changed', 'restoring', 'serving']);
});

test('Abort of apply: changed → rollbackRequested (step) → reverted → restoring → serving (reconciler)', async () => {
  const { path, run, call, reconciler } = setup('zone-a');
  await succeeds(run('drainReads'));
  await succeeds(run('apply'));
  await succeeds(call('abort', 'apply'));
  await untilSettled(reconciler);
  assert.deepEqual(path, [
    'serving',
    'held',
    'changed',
    'rollbackRequested',
    'reverted',
    'restoring',
    'serving',
  ]);
});

test('Terminate of drainReads: held → handedOver (step) → restoring → serving (reconciler)', async () => {
  const { path, run, call, reconciler } = setup('zone-a');
  await succeeds(run('drainReads'));
  await succeeds(call('terminate', 'drainReads'));
  await untilSettled(reconciler);
  assert.deepEqual(path, ['serving', 'held', 'handedOver', 'restoring', 'serving']);
});

test('a new revision: changed → handedOver (reconciler, walk superseded) → held (drainReads of the new revision takes it back)', async () => {
  const { kube, path, run, reconciler } = setup('zone-c');
  await succeeds(run('drainReads'));
  await succeeds(run('apply'));
  kube.setStatus('Rollout', 'walk', { currentPodHash: 'rev-r2', currentStepIndex: 0 });
  kube.heldBack.add(`VMCluster ${ns}/vm-zone-c`);
  kube.setStatus('VMCluster', 'vm-zone-c', { updateStatus: 'expanding' });
  await reconciler.tick();
  await succeeds(run('drainReads'));
  assert.deepEqual(path, ['serving', 'held', 'changed', 'handedOver', 'held']);
});

test('a Git revert of a finished zone: serving → rollbackRequested (reconciler) → reverted → restoring → serving', async () => {
  const { kube, path, run, reconciler } = setup('zone-a');
  await succeeds(run('drainReads'));
  await succeeds(run('apply'));
  await succeeds(run('restoreReads'));
  kube.setStatus('Rollout', 'walk', { currentPodHash: 'rev-s', currentStepIndex: 9 });
  await untilSettled(reconciler, 20);
  assert.deepEqual(path, [
    'serving',
    'held',
    'changed',
    'restoring',
    'serving',
    'rollbackRequested',
    'reverted',
    'restoring',
    'serving',
  ]);
  assert.equal(kube.getStored('VMCluster', 'vm-zone-a').spec?.clusterVersion, 'v1.151.0-cluster');
});

test('a drain the balancer refuses: serving → held → serving (drainReads gives the zone back)', async () => {
  const { kube, path, call } = setup('zone-a');
  kube.failNextPatch.set(
    'VMUser',
    new KubeError('forbidden', 'patching VMUser vm/vmauth-read: HTTP 403', 403),
  );
  const result = await call('run', 'drainReads');
  assert.equal(result.phase, 'Failed', result.message);
  assert.deepEqual(path, ['serving', 'held', 'serving']);
});

test('a restore given up: restoring → changed (drainReads again drains, clearing the restore mark)', async () => {
  const { kube, path, run, call } = setup('zone-a');
  await succeeds(run('drainReads'));
  await succeeds(run('apply'));
  // The operator does not take the restore up: vmauth never proves it, the step stays Running.
  kube.heldBack.add(`VMUser ${ns}/vmauth-read`);
  const waiting = await call('run', 'restoreReads');
  assert.equal(waiting.phase, 'Running', waiting.message);
  kube.heldBack.delete(`VMUser ${ns}/vmauth-read`);
  await succeeds(run('drainReads'));
  assert.deepEqual(path, ['serving', 'held', 'changed', 'restoring', 'changed']);
});

test('a guarded move survives an operator status write but loses to a change of hands or of the spec', async () => {
  const kube = threeZones(vmauth.port);
  const ref = {
    apiVersion: 'operator.victoriametrics.com/v1beta1',
    kind: 'VMCluster',
    namespace: ns,
    name: 'vm-zone-a',
  };
  const mark = { annotations: { 'vmzones.io/test': 'x' } };
  let decided = loadedCluster(await kube.get(ref));
  kube.setStatus('VMCluster', 'vm-zone-a', { updateStatus: 'operational' });
  assert.equal(
    (await transition(kube, ref, decided, mark)).kind,
    'written',
    'a status write is not a change of hands',
  );
  decided = loadedCluster(await kube.get(ref));
  await kube.mergePatch(ref, {
    metadata: {
      annotations: {
        'vmzones.io/lease': JSON.stringify({
          v: 1,
          rollout: 'vm/other',
          uid: 'u',
          revision: 'x',
          since: '2026-01-01T00:00:00Z',
        }),
      },
    },
  });
  assert.equal((await transition(kube, ref, decided, mark)).kind, 'lost', 'another lease meanwhile');
  decided = loadedCluster(await kube.get(ref));
  await kube.mergePatch(ref, { spec: { clusterVersion: 'v9' } });
  assert.equal((await transition(kube, ref, decided, mark)).kind, 'lost', 'a spec change meanwhile');
});
