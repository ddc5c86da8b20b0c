// The zone actions and the reconciler on the writable in-memory Kubernetes: the decisions that the sandbox e2e
// exercises only through the controller, here one by one (a walk, every ending, refusals, transient faults).

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { silentLogger } from '../../../plugin/goplugin/index.ts';
import { parseWatchNamespaces } from '../../../plugin/kube/allowed-namespaces.ts';
import { KubeError, type KubeObjects } from '../../../plugin/kube/objects.ts';
import type { RolloutView, StepResult } from '../../../plugin/rollouts/types.ts';
import { drainZone } from '../../../plugin/vm/read-routing.ts';
import { vmclusterRef } from '../../../plugin/vm/vmcluster.ts';
import { zonesRoutedByVMUser } from '../../../plugin/vm/vmuser.ts';
import { leasePatch } from '../../../plugin/zones/moves/lease.ts';
import { ZoneReconciler } from '../../../plugin/zones/reconciler/reconciler.ts';
import { parseSpecDocument } from '../../../plugin/zones/spec.ts';
import {
  readsRecord,
  rolloutIdentity,
  zoneIdentity,
  zoneState,
} from '../../../plugin/zones/state/zone-annotations.ts';
import { loadedCluster, patchCluster } from '../../../plugin/zones/state/zone-object.ts';
import { readBackends, readBalancerConfigs } from '../../../plugin/zones/step/target.ts';
import { createZoneStepPlugin } from '../../../plugin/zones/step-plugin.ts';
import { FakeClock } from '../fake-clock.ts';
import type { MemoryKube } from '../kube/memory-kube.ts';
import {
  ns,
  type RolloutStatus,
  rolloutObject,
  specDocument,
  threeZones,
  untilSettled,
  useVmauthFixture,
} from './memory-cluster.ts';

const clock = new FakeClock();
const vmauth = useVmauthFixture(clock);

const revisionR = 'rev-r';
const stable = 'rev-s';

function view(kube: MemoryKube, name = 'walk'): RolloutView {
  const rollout = kube.getStored('Rollout', name, 'argoproj.io/v1alpha1') as unknown as RolloutView;
  return rollout;
}

function setup(
  status: RolloutStatus = { currentPodHash: revisionR, stableRS: stable, currentStepIndex: 0 },
  spec = specDocument(),
) {
  const kube = threeZones(vmauth.port);
  kube.put(rolloutObject('walk', status, spec));
  const plugin = createZoneStepPlugin({
    clock,
    kube,
    reconciler: false,
    logger: silentLogger,
    inCallWaitMs: 1_000,
  });
  const reconciler = new ZoneReconciler({ clock, kube, logger: silentLogger });
  const step = (
    zone: string,
    action: string,
    operation: 'run' | 'abort' | 'terminate' = 'run',
  ): Promise<StepResult> =>
    plugin[operation](view(kube), {
      pluginName: 'vmzones/step',
      config: { zone, action },
      status: undefined,
    });
  return { kube, plugin, reconciler, step };
}

function routed(kube: MemoryKube): string[] {
  const backends = readBackends(parseSpecDocument(specDocument()), ns);
  return zonesRoutedByVMUser(kube.getStored('VMUser', 'vmauth-read').spec?.targetRefs, ns, backends);
}

function stateOf(kube: MemoryKube, zone: string) {
  return zoneState(kube.getStored('VMCluster', `vm-${zone}`));
}

/** drainReads (to Successful) and apply of `zone` by the Rollout's current revision. */
async function drainAndApply(step: ReturnType<typeof setup>['step'], zone: string): Promise<void> {
  let drained = await step(zone, 'drainReads');
  for (let i = 0; i < 5 && drained.phase === 'Running'; i++) drained = await step(zone, 'drainReads');
  assert.equal(drained.phase, 'Successful', drained.message);
  const applied = await step(zone, 'apply');
  assert.equal(applied.phase, 'Successful', applied.message);
}

test('a whole zone: drainReads takes it out of reads and leases it, apply changes it, restoreReads brings it back and releases it', async () => {
  const { kube, step } = setup();
  await drainAndApply(step, 'zone-a');
  assert.deepEqual(routed(kube), ['zone-b', 'zone-c']);
  assert.equal(kube.getStored('VMCluster', 'vm-zone-a').spec?.clusterVersion, 'v1.152.0-cluster');
  assert.equal(stateOf(kube, 'zone-a').lease?.revision, revisionR);
  const restored = await step('zone-a', 'restoreReads');
  assert.equal(restored.phase, 'Successful', restored.message);
  assert.deepEqual(routed(kube), ['zone-a', 'zone-b', 'zone-c']);
  assert.equal(stateOf(kube, 'zone-a').lease, undefined);
  assert.equal(stateOf(kube, 'zone-a').maintenance, undefined);
  assert.equal(stateOf(kube, 'zone-a').rollback?.phase, 'applied');
});

test("promote --full during the zone's analysis: the reconciler brings the zone back with the change and releases it", async () => {
  const { kube, step, reconciler } = setup();
  await drainAndApply(step, 'zone-b');
  // The controller promotes fully: no step of zone-b runs again and no Terminate reaches a plugin step.
  kube.setStatus('Rollout', 'walk', { stableRS: revisionR, currentStepIndex: 9 });
  await untilSettled(reconciler);
  assert.deepEqual(routed(kube), ['zone-a', 'zone-b', 'zone-c']);
  const state = stateOf(kube, 'zone-b');
  assert.equal(state.lease, undefined, 'lease released');
  assert.equal(state.maintenance, undefined, 'out of maintenance');
  assert.equal(state.handoff, undefined);
  assert.equal(
    kube.getStored('VMCluster', 'vm-zone-b').spec?.clusterVersion,
    'v1.152.0-cluster',
    'keeps the change',
  );
  assert.equal(
    kube.getStored('VMCluster', 'vm-zone-c').spec?.clusterVersion,
    'v1.151.0-cluster',
    'zones not reached keep their spec',
  );
});

test('a walk in progress is left to its steps', async () => {
  const { kube, step, reconciler } = setup();
  await drainAndApply(step, 'zone-a');
  kube.setStatus('Rollout', 'walk', { currentStepIndex: 1 });
  assert.deepEqual(await reconciler.tick(), {});
  assert.deepEqual(routed(kube), ['zone-b', 'zone-c']);
  assert.equal(stateOf(kube, 'zone-a').handoff, undefined);
});

/** A watched view that is behind: it still holds the VMClusters as they were, and has not seen the Rollout. */
function staleView(kube: MemoryKube) {
  const clusters = ['zone-a', 'zone-b', 'zone-c'].map((z) =>
    structuredClone(kube.getStored('VMCluster', `vm-${z}`)),
  );
  const reads: string[] = [];
  const watched: KubeObjects = {
    get: async (ref) => {
      reads.push(`get ${ref.kind}`);
      throw new KubeError('notFound', `${ref.kind} ${ref.name} not found (stale view)`, 404);
    },
    list: async (_apiVersion, kind) => {
      reads.push(`list ${kind}`);
      return structuredClone(clusters);
    },
    mergePatch: (...args) => kube.mergePatch(...args),
    create: (object) => kube.create(object),
  };
  return { watched, reads };
}

test('a watched view that is behind never hands a zone over: the API server is read again first', async () => {
  const { kube, step } = setup();
  await drainAndApply(step, 'zone-a');
  kube.setStatus('Rollout', 'walk', { currentStepIndex: 1 });
  // The view has the lease but not the Rollout: taken alone it would say "deleted mid-walk".
  const { watched, reads } = staleView(kube);
  const reconciler = new ZoneReconciler({ clock, kube, watched, logger: silentLogger });
  assert.deepEqual(await reconciler.tick(), {});
  // Every zone kind is listed through the view; the Rollout is read there too, then live before acting.
  assert.deepEqual(reads, ['list VMCluster', 'list VMSingle', 'list VLCluster', 'get Rollout']);
  assert.equal(stateOf(kube, 'zone-a').handoff, undefined, 'the live Rollout still walks the zone');
  assert.deepEqual(routed(kube), ['zone-b', 'zone-c']);

  // Once the API server says the same (the Rollout is gone), the zone is finished as before.
  for (const [key, object] of kube.objects) if (object.kind === 'Rollout') kube.objects.delete(key);
  const progress = await untilSettled(reconciler);
  assert.deepEqual(progress, { 'vm/vm-zone-a': 'done' });
  assert.equal(stateOf(kube, 'zone-a').lease, undefined);
  assert.deepEqual(routed(kube), ['zone-a', 'zone-b', 'zone-c']);
});

test('a Git revert to the stable template rolls back every zone the abandoned revision changed, finished or not', async () => {
  const { kube, step, reconciler } = setup();
  await drainAndApply(step, 'zone-a');
  assert.equal((await step('zone-a', 'restoreReads')).phase, 'Successful');
  await drainAndApply(step, 'zone-b');
  // The template goes back to the stable one: the controller skips every step.
  kube.setStatus('Rollout', 'walk', { currentPodHash: stable, currentStepIndex: 9 });
  await untilSettled(reconciler, 20);
  for (const zone of ['zone-a', 'zone-b', 'zone-c']) {
    assert.equal(kube.getStored('VMCluster', `vm-${zone}`).spec?.clusterVersion, 'v1.151.0-cluster', zone);
    const state = stateOf(kube, zone);
    assert.equal(state.lease, undefined, `${zone} released`);
    assert.equal(state.maintenance, undefined, `${zone} out of maintenance`);
    assert.equal(state.rollback, undefined, `${zone} rollback record cleared`);
  }
  assert.deepEqual(routed(kube), ['zone-a', 'zone-b', 'zone-c']);
});

test('a new revision mid-walk: the zone in hand comes back until its turn, and the new walk can take it back', async () => {
  const { kube, step, reconciler } = setup();
  await drainAndApply(step, 'zone-b');
  kube.setStatus('Rollout', 'walk', { currentPodHash: 'rev-r2', currentStepIndex: 0 });
  await untilSettled(reconciler);
  assert.deepEqual(routed(kube), ['zone-a', 'zone-b', 'zone-c']);
  assert.equal(stateOf(kube, 'zone-b').lease, undefined);
  // And when the handoff is still there, the new revision's drainReads takes the zone over instead of waiting.
  await drainAndApply(step, 'zone-c');
  kube.setStatus('Rollout', 'walk', { currentPodHash: 'rev-r3', currentStepIndex: 0 });
  kube.heldBack.add(`VMCluster ${ns}/vm-zone-c`);
  kube.setStatus('VMCluster', 'vm-zone-c', { updateStatus: 'expanding' });
  await reconciler.tick();
  assert.notEqual(stateOf(kube, 'zone-c').handoff, undefined, 'handed over');
  const taken = await step('zone-c', 'drainReads');
  assert.notEqual(taken.phase, 'Failed', taken.message);
  assert.match(taken.message ?? '', /took the zone back from the vmzones reconciler/);
  assert.equal(stateOf(kube, 'zone-c').handoff, undefined);
  assert.equal(stateOf(kube, 'zone-c').lease?.revision, 'rev-r3');
});

test('a deleted Rollout: the zones it held are finished and released, with the change they have', async () => {
  const { kube, step, reconciler } = setup();
  await drainAndApply(step, 'zone-a');
  kube.objects.delete(`argoproj.io/v1alpha1|Rollout|${ns}|walk`);
  await untilSettled(reconciler);
  assert.deepEqual(routed(kube), ['zone-a', 'zone-b', 'zone-c']);
  assert.equal(stateOf(kube, 'zone-a').lease, undefined);
  assert.equal(kube.getStored('VMCluster', 'vm-zone-a').spec?.clusterVersion, 'v1.152.0-cluster');
});

test('an Abort lost to a crash: the reconciler rolls the zone back from its lease and rollback record alone', async () => {
  const { kube, step, reconciler } = setup();
  await drainAndApply(step, 'zone-a');
  kube.setStatus('Rollout', 'walk', { abort: true });
  await untilSettled(reconciler);
  assert.equal(kube.getStored('VMCluster', 'vm-zone-a').spec?.clusterVersion, 'v1.151.0-cluster');
  assert.deepEqual(routed(kube), ['zone-a', 'zone-b', 'zone-c']);
  assert.equal(stateOf(kube, 'zone-a').lease, undefined);
});

test('zones progress independently: a zone waiting for its operator does not hold up another', async () => {
  const { kube, step, reconciler } = setup();
  await drainAndApply(step, 'zone-a');
  // zone-a's rollback never becomes operational (the operator stays at expanding).
  kube.heldBack.add(`VMCluster ${ns}/vm-zone-a`);
  kube.setStatus('Rollout', 'walk', { abort: true });
  // zone-b was drained by a second Rollout that was then deleted. Today's drainReads would wait for zone-a to come
  // back (one zone out of reads per balancer, across Rollouts: two-rollouts-budget.test.ts); a vmzones from before
  // that rule did not, and the reconciler must finish what such a build left. So the state its drainReads wrote is
  // written here: the balancer's drain record and the lease with how to reach the reads.
  kube.put(rolloutObject('gone', { currentPodHash: 'rev-g', stableRS: 'rev-s', currentStepIndex: 3 }));
  const goneView = view(kube, 'gone');
  const [balancer] = readBalancerConfigs(parseSpecDocument(specDocument()), ns);
  assert.ok(balancer !== undefined);
  assert.equal(
    await drainZone(kube, balancer, 'zone-b', 'drainReads by Rollout vm/gone (revision rev-g)', clock),
    true,
  );
  const zoneB = vmclusterRef(ns, 'vm-zone-b');
  await patchCluster(
    kube,
    zoneB,
    leasePatch({
      holder: rolloutIdentity(goneView),
      zone: 'zone-b',
      object: zoneIdentity(await kube.get(zoneB)),
      now: clock.now(),
      intent: { wants: 'drained', nextMove: 'step' },
      carry: { reads: readsRecord([balancer]), drainGracePeriod: '0s', vmagents: ['vmagent'] },
      maintenanceReason: 'drainReads by Rollout vm/gone (revision rev-g)',
    }).patch,
    loadedCluster(await kube.get(zoneB)).resourceVersion,
  );
  assert.deepEqual(routed(kube), ['zone-c']);
  kube.setStatus('VMCluster', 'vm-zone-a', { updateStatus: 'expanding' });
  kube.objects.delete(`argoproj.io/v1alpha1|Rollout|${ns}|gone`);
  const progress = await untilSettled(reconciler, 6);
  assert.equal(progress[`${ns}/vm-zone-a`], 'working', 'zone-a waits for its operator');
  assert.deepEqual(routed(kube), ['zone-b', 'zone-c']);
  assert.equal(stateOf(kube, 'zone-b').lease, undefined);
  assert.notEqual(
    stateOf(kube, 'zone-a').maintenance,
    undefined,
    'zone-a stays in maintenance, out of reads',
  );
});

test('drainReads waits while another zone that serves reads is not operational, and writes nothing', async () => {
  const { kube, step } = setup();
  kube.setStatus('VMCluster', 'vm-zone-c', { updateStatus: 'expanding' });
  const before = kube.patches.length;
  const result = await step('zone-a', 'drainReads');
  assert.equal(result.phase, 'Running');
  assert.match(result.message ?? '', /zone zone-c serves reads .* but is not healthy/);
  assert.equal(kube.patches.length, before, 'nothing written');
  assert.deepEqual(routed(kube), ['zone-a', 'zone-b', 'zone-c']);
});

test('a field the VMCluster schema would prune (a typo) fails apply with nothing changed', async () => {
  const { kube, step } = setup(undefined, specDocument({ clusterVerison: 'v1.152.0-cluster' }));
  kube.knownVMClusterFields = new Set(['clusterVersion', 'vmstorage', 'vmselect', 'vminsert']);
  let drained = await step('zone-a', 'drainReads');
  while (drained.phase === 'Running') drained = await step('zone-a', 'drainReads');
  const result = await step('zone-a', 'apply');
  assert.equal(result.phase, 'Failed');
  assert.equal(result.status?.code, 'OverridesPruned');
  assert.match(result.message ?? '', /spec\.clusterVerison/, 'names the field');
  assert.equal(stateOf(kube, 'zone-a').rollback, undefined, 'no rollback record written');
  assert.equal(
    kube.patches.filter((p) => !p.dryRun && p.ref.startsWith('VMCluster') && 'spec' in p.body).length,
    0,
  );
});

test('forbidden ends the step Failed with the verb, resource and namespace; a 503 is retried inside the call', async () => {
  const { kube, step } = setup();
  kube.failNextPatch.set(
    'VMCluster',
    new KubeError('forbidden', 'patching VMCluster vm/vm-zone-a: HTTP 403: forbidden', 403),
  );
  const refused = await step('zone-a', 'drainReads');
  assert.equal(refused.phase, 'Failed');
  assert.equal(refused.status?.code, 'Forbidden');
  assert.match(refused.message ?? '', /patching VMCluster vm\/vm-zone-a: HTTP 403/);
  kube.failNextPatch.set(
    'VMCluster',
    new KubeError('unavailable', 'patching VMCluster vm/vm-zone-a: HTTP 503', 503),
  );
  const retried = await step('zone-a', 'drainReads');
  assert.notEqual(retried.phase, 'Failed', retried.message);
  assert.equal(
    stateOf(kube, 'zone-a').lease?.revision,
    revisionR,
    'retried inside the call: the zone is leased',
  );
});

test('Abort retries transient API faults inside the call, and a malformed annotation is a failure, not "nothing to abort"', async () => {
  const { kube, step } = setup();
  await drainAndApply(step, 'zone-a');
  kube.failNextPatch.set(
    'VMCluster',
    new KubeError('unavailable', 'patching VMCluster vm/vm-zone-a: HTTP 503', 503),
  );
  const aborted = await step('zone-a', 'apply', 'abort');
  assert.equal(aborted.phase, 'Successful', aborted.message);
  assert.match(aborted.message ?? '', /rollback requested/);
  assert.equal(stateOf(kube, 'zone-a').rollback?.phase, 'requested');

  const cluster = kube.getStored('VMCluster', 'vm-zone-b');
  kube.put({
    ...cluster,
    apiVersion: cluster.apiVersion ?? '',
    kind: 'VMCluster',
    metadata: { ...cluster.metadata, annotations: { 'vmzones.io/lease': '{"rollout":' } },
  });
  const broken = await step('zone-b', 'drainReads', 'abort');
  assert.equal(broken.phase, 'Failed');
  assert.equal(broken.status?.code, 'StateInvalid');
});

test('bad step input fails clearly: a zone that is no DNS label, a YAML alias bomb', async () => {
  const { step } = setup();
  const proto = await step('__proto__', 'drainReads');
  assert.equal(proto.phase, 'Failed');
  assert.equal(proto.status?.code, 'SpecInvalid');
  assert.match(proto.message ?? '', /step config\.zone/, 'names the field');
  const bomb = ['a: &a ["x","x","x","x","x","x","x","x","x"]'];
  for (let i = 1; i < 12; i++)
    bomb.push(
      `${String.fromCharCode(97 + i)}: &${String.fromCharCode(97 + i)} [*${String.fromCharCode(96 + i)},*${String.fromCharCode(96 + i)},*${String.fromCharCode(96 + i)},*${String.fromCharCode(96 + i)}]`,
    );
  const { step: bombStep } = setup(undefined, bomb.join('\n'));
  const result = await bombStep('zone-a', 'drainReads');
  assert.equal(result.phase, 'Failed');
  assert.equal(result.status?.code, 'SpecInvalid');
});

test('state written by a newer vmzones is refused with a message saying so', async () => {
  const { kube, step } = setup();
  const cluster = kube.getStored('VMCluster', 'vm-zone-a');
  kube.put({
    ...cluster,
    apiVersion: cluster.apiVersion ?? '',
    kind: 'VMCluster',
    metadata: {
      ...cluster.metadata,
      annotations: {
        'vmzones.io/lease': JSON.stringify({ v: 9, rollout: 'vm/x', uid: 'u', revision: 'r', since: 'now' }),
      },
    },
  });
  const result = await step('zone-a', 'drainReads');
  assert.equal(result.phase, 'Failed');
  assert.equal(result.status?.code, 'StateInvalid');
  assert.match(result.message ?? '', /written by a newer vmzones \(state format v9/);
});

test('a spec document may not reach another namespace unless the plugin registration allows it', async () => {
  const elsewhere = JSON.stringify({ ...JSON.parse(specDocument()), namespace: 'billing' });
  const { step } = setup(undefined, elsewhere);
  const refused = await step('zone-a', 'drainReads');
  assert.equal(refused.phase, 'Failed');
  assert.equal(refused.status?.code, 'NamespaceNotAllowed');
  assert.match(refused.message ?? '', /is in namespace billing, outside namespace vm of Rollout vm\/walk/);
  assert.match(refused.message ?? '', /--allowed-namespaces=billing/);

  const kube = threeZones(vmauth.port);
  kube.put(rolloutObject('walk', { currentPodHash: revisionR, stableRS: stable }, elsewhere));
  const allowed = createZoneStepPlugin({
    clock,
    kube,
    reconciler: false,
    logger: silentLogger,
    namespaces: { all: false, extra: ['billing'] },
  });
  const result = await allowed.run(view(kube), {
    pluginName: 'vmzones/step',
    config: { zone: 'zone-a', action: 'drainReads' },
    status: undefined,
  });
  // Allowed: it goes on to look for the VMCluster there (which this fixture does not have).
  assert.match(result.message ?? '', /VMCluster billing\/vm-zone-a of zone zone-a does not exist/);
});

test('after a rollback, reads come back only once the zone is operational and its vmagent queues have drained', async () => {
  const { kube, step } = setup();
  await drainAndApply(step, 'zone-a');
  const seen: unknown[] = [];
  let readings = 0;
  const reconciler = new ZoneReconciler({
    clock,
    kube,
    logger: silentLogger,
    queueCheck: async (_kube, request, previous) => {
      seen.push(previous);
      readings++;
      assert.deepEqual(request, { namespace: ns, vmcluster: 'vm-zone-a', vmagents: ['vmagent'] });
      return readings < 3
        ? { verdict: 'wait', message: `round ${readings} of 3`, state: { rounds: readings } }
        : { verdict: 'pass', message: 'drained' };
    },
  });
  kube.setStatus('Rollout', 'walk', { abort: true });
  for (let i = 0; i < 10 && readings < 2; i++) await reconciler.tick();
  assert.equal(
    kube.getStored('VMCluster', 'vm-zone-a').spec?.clusterVersion,
    'v1.151.0-cluster',
    'rolled back',
  );
  assert.deepEqual(routed(kube), ['zone-b', 'zone-c'], 'operational, but not served while its queue drains');
  assert.match(
    stateOf(kube, 'zone-a').handoff?.message ?? '',
    /reads come back once its vmagent queues have drained: round 2 of 3/,
  );
  await untilSettled(reconciler);
  assert.deepEqual(routed(kube), ['zone-a', 'zone-b', 'zone-c']);
  assert.deepEqual(
    seen,
    [undefined, { rounds: 1 }, { rounds: 2 }],
    'the rounds carried between passes in the handoff',
  );
});

test('the reconciler lists only the namespaces it is told to watch (namespace-scoped RBAC)', async () => {
  const { kube, step } = setup();
  await drainAndApply(step, 'zone-a');
  kube.setStatus('Rollout', 'walk', { stableRS: revisionR, currentStepIndex: 9 });
  const elsewhere = new ZoneReconciler({ clock, kube, logger: silentLogger, namespaces: ['billing'] });
  await untilSettled(elsewhere, 3);
  assert.deepEqual(routed(kube), ['zone-b', 'zone-c'], 'a reconciler watching billing leaves vm alone');
  assert.ok(
    kube.reads.some((r) => r === 'list VMCluster billing '),
    'listed billing',
  );
  assert.ok(!kube.reads.some((r) => r.startsWith('list VMCluster  ')), 'no cluster-wide list');
  await untilSettled(new ZoneReconciler({ clock, kube, logger: silentLogger, namespaces: [ns] }));
  assert.deepEqual(routed(kube), ['zone-a', 'zone-b', 'zone-c']);
  assert.deepEqual(parseWatchNamespaces(['--watch-namespaces=vm,billing']), ['billing', 'vm']);
  assert.throws(() => parseWatchNamespaces(['--watch-namespaces=Not_A_NS']), {
    code: 'FlagInvalid',
    message: /Not_A_NS/,
  });
});

test('events on the Rollout and the VMCluster for each transition, once even when a Run is replayed', async () => {
  const { kube, step, reconciler } = setup();
  await drainAndApply(step, 'zone-a');
  await step('zone-a', 'drainReads'); // replayed after success: no second event
  await step('zone-a', 'apply');
  assert.equal((await step('zone-a', 'restoreReads')).phase, 'Successful');
  const events = () =>
    kube.created
      .filter((o) => o.kind === 'Event')
      .map((o) => `${o.reason as string} ${(o.regarding as { kind: string }).kind}`);
  assert.deepEqual(events(), [
    'ZoneDrained Rollout',
    'ZoneDrained VMCluster',
    'ZoneChanged Rollout',
    'ZoneChanged VMCluster',
    'ZoneRestored Rollout',
    'ZoneRestored VMCluster',
  ]);
  const changed = kube.created.find((o) => o.reason === 'ZoneChanged');
  // The field, never its values (issue 35 item 10): those stay in the rollback record on the zone object.
  assert.match(String(changed?.note), /spec\.clusterVersion/);
  assert.doesNotMatch(String(changed?.note), /v1\.152\.0-cluster/);
  assert.equal(changed?.type, 'Normal');

  // promote --full with zone-b in hand: the ending is said in an event, then the finish.
  await drainAndApply(step, 'zone-b');
  kube.setStatus('Rollout', 'walk', { stableRS: revisionR, currentStepIndex: 9 });
  await untilSettled(reconciler);
  const ended = kube.created.find((o) => o.reason === 'ZoneWalkEnded');
  assert.match(
    String(ended?.note),
    /promoted to stable before zone zone-b was finished; vmzones finishes it with the change it has \(revision rev-r\)/,
  );
  assert.deepEqual(
    events()
      .slice(6)
      .filter((e) => e.endsWith('Rollout')),
    ['ZoneDrained Rollout', 'ZoneChanged Rollout', 'ZoneWalkEnded Rollout', 'ZoneFinished Rollout'],
  );
});

/** A new commit: the Rollout's template carries `version`, its walk starts again at step 0. */
function newRevision(kube: MemoryKube, revision: string, version: string): void {
  kube.put(
    rolloutObject(
      'walk',
      { currentPodHash: revision, stableRS: stable, currentStepIndex: 0 },
      specDocument({ clusterVersion: version }),
    ),
  );
}

test('after a superseded walk, the new walk records how to get back to the stable spec, and a Git revert gets there', async () => {
  const { kube, step, reconciler } = setup();
  await drainAndApply(step, 'zone-a');
  assert.equal((await step('zone-a', 'restoreReads')).phase, 'Successful');
  await drainAndApply(step, 'zone-b');
  newRevision(kube, 'rev-r2', 'v1.153.0-cluster');
  await untilSettled(reconciler);
  assert.equal(kube.getStored('VMCluster', 'vm-zone-b').spec?.clusterVersion, 'v1.152.0-cluster');

  await drainAndApply(step, 'zone-a');
  const record = stateOf(kube, 'zone-a').rollback;
  assert.equal(record?.overRevision, revisionR);
  assert.deepEqual(record?.changes, [
    { path: ['clusterVersion'], before: 'v1.151.0-cluster', after: 'v1.153.0-cluster' },
  ]);
  assert.equal((await step('zone-a', 'restoreReads')).phase, 'Successful');

  // The template goes back to the stable one: every zone either walk changed goes back to the stable spec.
  kube.setStatus('Rollout', 'walk', { currentPodHash: stable, currentStepIndex: 9 });
  await untilSettled(reconciler, 30);
  for (const zone of ['zone-a', 'zone-b', 'zone-c']) {
    assert.equal(kube.getStored('VMCluster', `vm-${zone}`).spec?.clusterVersion, 'v1.151.0-cluster', zone);
    assert.equal(stateOf(kube, zone).lease, undefined, `${zone} released`);
  }
  assert.deepEqual(routed(kube), ['zone-a', 'zone-b', 'zone-c']);
});

test('an abort of the new walk takes a zone the superseded walk changed back to the stable spec', async () => {
  const { kube, step, reconciler } = setup();
  await drainAndApply(step, 'zone-a');
  newRevision(kube, 'rev-r2', 'v1.153.0-cluster');
  await untilSettled(reconciler);
  await drainAndApply(step, 'zone-a');
  kube.setStatus('Rollout', 'walk', { abort: true });
  for (const action of ['apply', 'drainReads']) {
    const aborted = await step('zone-a', action, 'abort');
    assert.notEqual(aborted.phase, 'Failed', aborted.message);
  }
  await untilSettled(reconciler, 30);
  assert.equal(kube.getStored('VMCluster', 'vm-zone-a').spec?.clusterVersion, 'v1.151.0-cluster');
  assert.deepEqual(routed(kube), ['zone-a', 'zone-b', 'zone-c']);
});

test('a walk that became stable is not chained: the next walk undoes only its own change', async () => {
  const { kube, step } = setup();
  await drainAndApply(step, 'zone-a');
  assert.equal((await step('zone-a', 'restoreReads')).phase, 'Successful');
  // revision R finished and became stable; the next commit walks from it.
  kube.put(
    rolloutObject(
      'walk',
      { currentPodHash: 'rev-r2', stableRS: revisionR, currentStepIndex: 0 },
      specDocument({ clusterVersion: 'v1.153.0-cluster' }),
    ),
  );
  await drainAndApply(step, 'zone-a');
  const record = stateOf(kube, 'zone-a').rollback;
  assert.equal(record?.overRevision, undefined);
  assert.deepEqual(record?.changes, [
    { path: ['clusterVersion'], before: 'v1.152.0-cluster', after: 'v1.153.0-cluster' },
  ]);
});
