// The step's in-call waits wake on watch events instead of polling (plugin/zones/step/deps.ts waitInCall, issue 26
// item 5): a drainReads that waits for the operator to take up the VMUser reads it once, then again only when the
// watch saw it change; its deadline is the same as when it polled.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { silentLogger } from '../../../plugin/goplugin/index.ts';
import type { KubeObjects, ObjectChange, ObjectRef } from '../../../plugin/kube/objects.ts';
import type { RolloutView, StepResult } from '../../../plugin/rollouts/types.ts';
import { createZoneStepPlugin } from '../../../plugin/zones/step-plugin.ts';
import { FakeClock } from '../fake-clock.ts';
import type { MemoryKube } from '../kube/memory-kube.ts';
import { ns, rolloutObject, threeZones, useVmauthFixture } from './memory-cluster.ts';

const clock = new FakeClock();
const vmauth = useVmauthFixture(clock);
const vmuser = `VMUser ${ns}/vmauth-read`;
const inCallWaitMs = 5_000;

/** MemoryKube with a watch of the test's own: `changed(ref)` wakes the waits on that object. */
function watching(kube: MemoryKube) {
  const waiters = new Map<string, Set<() => void>>();
  const key = (ref: ObjectRef) => `${ref.kind} ${ref.namespace}/${ref.name}`;
  const subscribed: string[] = [];
  const client: KubeObjects = {
    get: (ref) => kube.get(ref),
    list: (...args) => kube.list(...args),
    mergePatch: (...args) => kube.mergePatch(...args),
    create: (object) => kube.create(object),
    changeOf(ref): ObjectChange {
      subscribed.push(key(ref));
      const set = waiters.get(key(ref)) ?? new Set<() => void>();
      waiters.set(key(ref), set);
      let wake = () => {};
      const changed = new Promise<void>((resolve) => {
        wake = resolve;
      });
      set.add(wake);
      return { changed, cancel: () => set.delete(wake) };
    },
  };
  const changed = (name: string) => {
    for (const wake of waiters.get(name) ?? []) wake();
  };
  return { client, changed, subscribed };
}

function setup(waitMs = inCallWaitMs) {
  const kube = threeZones(vmauth.port);
  kube.put(rolloutObject('walk', { currentPodHash: 'rev-r', stableRS: 'rev-s', currentStepIndex: 0 }));
  // The operator has not taken up the drained routing yet.
  kube.heldBack.add(vmuser);
  const watch = watching(kube);
  const plugin = createZoneStepPlugin({
    clock,
    kube: watch.client,
    reconciler: false,
    logger: silentLogger,
    inCallWaitMs: waitMs,
  });
  const rollout = () => kube.getStored('Rollout', 'walk', 'argoproj.io/v1alpha1') as unknown as RolloutView;
  const drain = (previous?: StepResult) =>
    plugin.run(rollout(), {
      pluginName: 'vmzones/step',
      config: { zone: 'zone-a', action: 'drainReads' },
      status: previous?.status,
    });
  const vmuserGets = () => kube.reads.filter((r) => r === vmuser).length;
  return { kube, watch, drain, vmuserGets };
}

/** How often a drainReads that does not wait in the call at all reads the VMUser. */
async function readsWithoutWaiting(): Promise<number> {
  return (await withoutWaiting()).reads;
}

/** A drainReads that does not wait in the call at all: how often it reads the VMUser, how long it takes. */
async function withoutWaiting(): Promise<{ reads: number; ms: number }> {
  const { kube, drain, vmuserGets } = setup(0);
  kube.reads.length = 0;
  const began = clock.now().getTime();
  const result = await drain();
  assert.equal((result.status as { state?: string }).state, 'waitingForVmauth', result.message);
  return { reads: vmuserGets(), ms: clock.now().getTime() - began };
}

test('drainReads waiting for the VMUser reads it no more in a 5 s in-call wait than without one, and waits its full in-call time', async () => {
  const { reads: baseline, ms } = await withoutWaiting();
  const { kube, watch, drain, vmuserGets } = setup();
  kube.reads.length = 0;
  const began = clock.now().getTime();
  const result = await drain();
  assert.equal(result.phase, 'Running', result.message);
  assert.equal((result.status as { state?: string }).state, 'waitingForVmauth');
  assert.match(result.message ?? '', /has not rendered VMUser vm\/vmauth-read yet/);
  // Polling read it 20 more times over the 5 s (every 250 ms); the watch saw no change: no read more.
  assert.equal(
    vmuserGets(),
    baseline,
    `VMUser reads in one Run: ${vmuserGets()}, without waiting ${baseline}`,
  );
  assert.ok(watch.subscribed.includes(vmuser), 'the wait watched the VMUser');
  assert.equal(clock.now().getTime() - began, ms + inCallWaitMs, 'the wait still lasts its in-call time');
});

test('drainReads woken by the VMUser changing reads it again and goes on within the same call', async () => {
  const baseline = await readsWithoutWaiting();
  const { kube, watch, drain, vmuserGets } = setup();
  kube.reads.length = 0;
  // The operator takes the VMUser up while the step waits on it: the watch reports the change.
  const operator = (async () => {
    for (let i = 0; i < 10_000 && !watch.subscribed.includes(vmuser); i++)
      await new Promise((resolve) => setImmediate(resolve));
    kube.heldBack.delete(vmuser);
    const stored = kube.getStored('VMUser', 'vmauth-read');
    const { resourceVersion: _old, ...metadata } = stored.metadata;
    kube.put({
      ...stored,
      apiVersion: 'operator.victoriametrics.com/v1beta1',
      kind: 'VMUser',
      metadata,
      status: { updateStatus: 'operational', observedGeneration: stored.metadata.generation ?? 1 },
    });
    watch.changed(vmuser);
  })();
  const result = await drain();
  await operator;
  assert.notEqual((result.status as { state?: string }).state, 'waitingForVmauth', result.message);
  assert.doesNotMatch(result.message ?? '', /has not rendered/);
  // One more evidence check after the wake, and the re-read of the routing that proves it (drain.ts).
  assert.ok(
    vmuserGets() <= baseline + 3,
    `VMUser reads in one Run: ${vmuserGets()}, without waiting ${baseline}`,
  );
});
