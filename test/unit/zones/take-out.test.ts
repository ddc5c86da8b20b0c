// The drain half of the zone driver (plugin/zones/moves/take-out.ts), called as the step and the reconciler call it:
// one progress value with what it waits on, since when and until when it may; its deadline checked in one place;
// a 409 decided in one place (plugin/zones/moves/conflict.ts): retried on a fresh read while the zone is in the
// same hands, lost once they changed.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { hubOnly } from '../../../plugin/kube/cluster-registry.ts';
import { KubeError } from '../../../plugin/kube/objects.ts';
import type { RolloutView } from '../../../plugin/rollouts/types.ts';
import { conflictMeaning, guardedWrite } from '../../../plugin/zones/moves/conflict.ts';
import { stepLeasePatch } from '../../../plugin/zones/moves/lease.ts';
import { restoreReadsMove } from '../../../plugin/zones/moves/restore.ts';
import { type TakeOutRequest, takeOut } from '../../../plugin/zones/moves/take-out.ts';
import { parseSpecDocument } from '../../../plugin/zones/spec.ts';
import { rolloutIdentity } from '../../../plugin/zones/state/zone-annotations.ts';
import { loadedCluster } from '../../../plugin/zones/state/zone-object.ts';
import { readBalancerConfigs } from '../../../plugin/zones/step/target.ts';
import { FakeClock } from '../fake-clock.ts';
import type { MemoryKube } from '../kube/memory-kube.ts';
import {
  ns,
  rolloutObject,
  routedObjects,
  specDocument,
  stepPluginOf,
  threeZones,
  useVmauthFixture,
} from './memory-cluster.ts';

const clock = new FakeClock();
const vmauth = useVmauthFixture(clock);
const ref = (zone: string) => ({
  apiVersion: 'operator.victoriametrics.com/v1beta1',
  kind: 'VMCluster',
  namespace: ns,
  name: `vm-${zone}`,
});

function walking(kube: MemoryKube, name: string): void {
  kube.put(rolloutObject(name, { currentPodHash: `${name}-2`, stableRS: `${name}-1`, currentStepIndex: 0 }));
}

/** What the step's drainReads asks of the move for `rollout` on `zone`. */
function stepRequest(kube: MemoryKube, rollout: string, zone: string): TakeOutRequest {
  const who = rolloutIdentity(
    kube.getStored('Rollout', rollout, 'argoproj.io/v1alpha1') as unknown as RolloutView,
  );
  const spec = parseSpecDocument(specDocument());
  const reads = readBalancerConfigs(spec, ns);
  const by = `drainReads by ${rollout}`;
  const target = {
    who,
    config: { zone },
    reads,
    drainGracePeriod: '0s',
    vmagents: ['vmagent'],
    vmagentsCluster: undefined,
    vminsertHosts: undefined,
  };
  return {
    zone,
    ref: ref(zone),
    reads,
    by,
    holder: who,
    graceMs: 0,
    hold: (found) =>
      stepLeasePatch(
        target,
        { kind: 'VMCluster', namespace: ns, name: `vm-${zone}`, uid: found.object.metadata.uid ?? '' },
        clock.now(),
        by,
      ),
    leaseOnlyWhileDrained: true,
    readyTimeout: { ms: 60_000, text: '1m' },
  };
}

const deps = (kube: MemoryKube) => ({
  kube,
  clusters: hubOnly(kube),
  now: clock.now,
  sleep: clock.sleep,
  inCallWaitMs: 5_000,
});

/** The first write of the VMUser meets another writer first: `meanwhile` (e.g. a change of the zone's hands), then a
 *  write of the VMUser itself, so that the guarded write gets a 409. */
function writerBetween(kube: MemoryKube, meanwhile: () => Promise<unknown> = async () => undefined): void {
  kube.beforePatch = async (what) => {
    if (what !== `VMUser ${ns}/vmauth-read`) return;
    kube.beforePatch = undefined;
    await meanwhile();
    await kube.mergePatch(
      {
        apiVersion: 'operator.victoriametrics.com/v1beta1',
        kind: 'VMUser',
        namespace: ns,
        name: 'vmauth-read',
      },
      { metadata: { labels: { touched: 'yes' } } },
    );
  };
}

/** The move on zone-a as it is stored now. */
function takeOutZoneA(kube: MemoryKube, request: TakeOutRequest) {
  return takeOut(deps(kube), request, loadedCluster(kube.getStored('VMCluster', 'vm-zone-a')));
}

test('a live holder is waited on: one progress value, since the first look and deadline readyTimeout later, then LeaseHeld (final: no)', async () => {
  const kube = threeZones(vmauth.port);
  walking(kube, 'one');
  walking(kube, 'two');
  assert.equal(
    (await stepPluginOf(kube, clock, { rollout: 'one' }).run('zone-a', 'drainReads')).phase,
    'Successful',
  );
  const request = stepRequest(kube, 'two', 'zone-a');
  const first = await takeOutZoneA(kube, request);
  assert.equal(first.phase, 'waiting');
  assert.ok(first.phase === 'waiting');
  assert.equal(first.waitsOn, 'lease');
  assert.equal(first.heldBy?.rollout, 'vm/one');
  assert.equal(
    first.deadline?.getTime(),
    first.since.getTime() + 60_000,
    'the deadline is readyTimeout after the start',
  );
  assert.match(first.message, /leased by Rollout vm\/one/);

  clock.advance(40_000);
  const later = await takeOutZoneA(kube, { ...request, previous: { waitsOn: 'lease', since: first.since } });
  assert.ok(
    later.phase === 'waiting' && later.since.getTime() === first.since.getTime(),
    'the wait goes on from its start',
  );
  // Another wait's start does not count for this one.
  const fresh = await takeOutZoneA(kube, { ...request, previous: { waitsOn: 'budget', since: first.since } });
  assert.ok(fresh.phase === 'waiting' && fresh.since.getTime() === clock.now().getTime());

  clock.advance(21_000);
  const late = await takeOutZoneA(kube, { ...request, previous: { waitsOn: 'lease', since: first.since } });
  assert.equal(late.phase, 'failed');
  assert.ok(late.phase === 'failed');
  assert.equal(late.code, 'LeaseHeld');
  assert.equal(late.final, false, 'LeaseHeld may clear once the holder lets go');
  assert.match(late.message, /waited since 2030-.*, readyTimeout 1m/);
  // The reconciler asks without a deadline: it waits on.
  const { readyTimeout: _, ...reconcilerRequest } = request;
  const waits = await takeOutZoneA(kube, {
    ...reconcilerRequest,
    previous: { waitsOn: 'lease', since: first.since },
  });
  assert.ok(waits.phase === 'waiting' && waits.deadline === undefined);
});

test('a 409 on the balancer after the budget admitted the drain, with the zone in the same hands: drained on a fresh read in the same call', async () => {
  const kube = threeZones(vmauth.port);
  walking(kube, 'one');
  // Another writer (a status write, vmauth's operator) changes the VMUser between the budget check and the drain.
  writerBetween(kube);
  const progress = await takeOutZoneA(kube, stepRequest(kube, 'one', 'zone-a'));
  assert.notEqual(progress.phase, 'failed', progress.message);
  assert.notEqual(progress.phase, 'lost', progress.message);
  assert.deepEqual(routedObjects(kube), ['vm-zone-b', 'vm-zone-c'], 'zone-a is out after one call');
  assert.equal(progress.held, true);
});

test('a 409 on the balancer while the zone changed hands: lost, nothing drained, the caller decides again', async () => {
  const kube = threeZones(vmauth.port);
  walking(kube, 'one');
  // Someone else marks the zone (its hands change) and the balancer is written meanwhile.
  writerBetween(kube, () =>
    kube.mergePatch(ref('zone-a'), {
      metadata: {
        annotations: {
          'vmzones.io/maintenance': JSON.stringify({
            zone: 'zone-a',
            since: '2030-01-01T00:00:00Z',
            reason: 'someone else',
          }),
        },
      },
    }),
  );
  const progress = await takeOutZoneA(kube, stepRequest(kube, 'one', 'zone-a'));
  assert.equal(progress.phase, 'lost', progress.message);
  assert.deepEqual(routedObjects(kube), ['vm-zone-a', 'vm-zone-b', 'vm-zone-c'], 'nothing drained');
});

test('conflictMeaning: a status write is a retry; a new holder, a handoff or a new generation is lost; guardedWrite gives up after three tries', async () => {
  const kube = threeZones(vmauth.port);
  const before = loadedCluster(kube.getStored('VMCluster', 'vm-zone-a'));
  const status = loadedCluster({
    ...before.object,
    metadata: { ...before.object.metadata, resourceVersion: '999' },
    status: { updateStatus: 'expanding' },
  });
  assert.equal(conflictMeaning(before, status), 'retry');
  const newGeneration = loadedCluster({
    ...before.object,
    metadata: { ...before.object.metadata, generation: 7 },
  });
  assert.equal(conflictMeaning(before, newGeneration), 'lost');
  const leased = loadedCluster({
    ...before.object,
    metadata: {
      ...before.object.metadata,
      annotations: {
        'vmzones.io/maintenance': JSON.stringify({
          zone: 'zone-a',
          since: '2030-01-01T00:00:00Z',
          reason: 'x',
        }),
      },
    },
  });
  assert.equal(conflictMeaning(before, leased), 'lost');

  let tries = 0;
  await assert.rejects(
    guardedWrite(kube, ref('zone-a'), before, async () => {
      tries++;
      throw new KubeError('conflict', 'HTTP 409', 409);
    }),
    (err: unknown) => err instanceof KubeError && err.kind === 'conflict',
  );
  assert.equal(tries, 3, 'the first try and two more on fresh reads');
  const other = await guardedWrite(kube, ref('zone-a'), before, async () => {
    throw new KubeError('forbidden', 'HTTP 403', 403);
  }).catch((err: unknown) => err);
  assert.ok(other instanceof KubeError && other.kind === 'forbidden', 'any other error at once');
});

test('the restore meets a 409 on the balancer with the zone in the same hands: put back on a fresh read in the same call; lost once the hands changed', async () => {
  for (const handsChange of [false, true]) {
    const kube = threeZones(vmauth.port);
    walking(kube, 'one');
    assert.equal(
      (await stepPluginOf(kube, clock, { rollout: 'one' }).run('zone-a', 'drainReads')).phase,
      'Successful',
    );
    // The walk let go of the zone (its hands change), or not, while the balancer is written meanwhile.
    writerBetween(kube, async () => {
      if (!handsChange) return;
      await kube.mergePatch(ref('zone-a'), {
        metadata: { annotations: { 'vmzones.io/lease': null, 'vmzones.io/maintenance': null } },
      });
    });
    const { reads, by } = stepRequest(kube, 'one', 'zone-a');
    const outcome = await restoreReadsMove(
      deps(kube),
      { zone: 'zone-a', ref: ref('zone-a'), reads, by },
      loadedCluster(kube.getStored('VMCluster', 'vm-zone-a')),
    );
    if (handsChange) {
      assert.equal(outcome.kind, 'lost', outcome.message);
      assert.deepEqual(routedObjects(kube), ['vm-zone-b', 'vm-zone-c'], 'nothing put back for lost hands');
    } else {
      assert.notEqual(outcome.kind, 'failed', outcome.message);
      assert.deepEqual(outcome.restored, ['VMUser vm/vmauth-read']);
      assert.deepEqual(routedObjects(kube), ['vm-zone-a', 'vm-zone-b', 'vm-zone-c']);
    }
  }
});
