// Readings due within the in-call wait are taken inside one gates call (issue 26 item 2: cut the controller's
// requeue lag where the plugin can wait inside a call), each on the state the one before left; readings due later
// are left to the controller's next call at ResumeAt. Time is a clock the test's sleep moves.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createGatesProvider, metadataKeys } from '../../../plugin/gates/provider.ts';
import type { AnalysisRunView, MetricView } from '../../../plugin/rollouts/types.ts';
import { MemoryKube } from '../kube/memory-kube.ts';

const run: AnalysisRunView = { metadata: { name: 'ro-abc-3', namespace: 'vm' }, spec: {}, status: {} };
const start = Date.UTC(2026, 4, 1, 12, 0, 0);

function readyGate(pollInterval: string): MetricView {
  return {
    name: 'gate',
    provider: {
      plugin: { 'vmzones/gates': { gate: 'vmclusterReady', vmcluster: 'vm-zone-a', pollInterval } },
    },
  };
}

/** Writes vm-zone-a with the operator's `updateStatus` (and a `reason`, as the operator gives with `failed`). */
function putCluster(kube: MemoryKube, updateStatus: string, reason?: string) {
  kube.put({
    apiVersion: 'operator.victoriametrics.com/v1beta1',
    kind: 'VMCluster',
    metadata: { name: 'vm-zone-a', namespace: 'vm', generation: 2 },
    status: { updateStatus, observedGeneration: 2, ...(reason === undefined ? {} : { reason }) },
  });
}

/** A VMCluster that becomes operational once `readyAfterMs` passed on the test's clock. */
function world(readyAfterMs: number) {
  let now = start;
  const slept: number[] = [];
  const kube = new MemoryKube();
  const put = (status: string) => putCluster(kube, status);
  put('expanding');
  const sleep = async (ms: number) => {
    slept.push(ms);
    now += ms;
    if (now - start >= readyAfterMs) put('operational');
  };
  return {
    kube,
    slept,
    sleep,
    now: () => now,
    advance: (ms: number) => {
      now += ms;
    },
  };
}

test('readings 2 s apart are taken inside the call: the zone ready 4 s later passes in the first call', async () => {
  const w = world(4_000);
  const provider = createGatesProvider({ kube: () => w.kube, now: w.now, sleep: w.sleep });
  const result = await provider.run(run, readyGate('2s'));
  assert.equal(result.phase, 'Successful', result.message);
  assert.deepEqual(w.slept, [2_000, 2_000]);
  assert.equal(result.metadata?.[metadataKeys.readings], '3', 'three readings in one call');
});

test("each reading is pollMs after the start of the one before: a reading's own time does not stretch the spacing", async () => {
  const w = world(4_000);
  const reads: number[] = [];
  const slow = {
    get: async (...args: Parameters<MemoryKube['get']>) => {
      reads.push(w.now() - start);
      w.advance(300); // the API answers in 300 ms
      return w.kube.get(...args);
    },
  } as unknown as MemoryKube;
  const provider = createGatesProvider({ kube: () => slow, now: w.now, sleep: w.sleep });
  const result = await provider.run(run, readyGate('2s'));
  assert.equal(result.phase, 'Successful', result.message);
  assert.deepEqual(reads, [0, 2_000, 4_000], 'readings start 2 s apart');
  assert.deepEqual(w.slept, [1_700, 1_700]);
});

test('a reading due after the in-call wait is left to the controller: Running with ResumeAt', async () => {
  const w = world(60_000);
  const provider = createGatesProvider({ kube: () => w.kube, now: w.now, sleep: w.sleep });
  const result = await provider.run(run, readyGate('2s'));
  assert.equal(result.phase, 'Running', result.message);
  assert.deepEqual(w.slept, [2_000, 2_000], 'a third sleep would end after the 5 s in-call wait');
  assert.equal(result.resumeAt, '2026-05-01T12:00:06.000Z');
  const slow = world(60_000);
  const tenSeconds = await createGatesProvider({
    kube: () => slow.kube,
    now: slow.now,
    sleep: slow.sleep,
  }).run(run, readyGate('10s'));
  assert.equal(tenSeconds.phase, 'Running');
  assert.deepEqual(slow.slept, [], 'a 10 s poll is longer than the in-call wait: one reading per call');
});

test('an injected clock without a sleep never waits inside the call', async () => {
  const w = world(0);
  const result = await createGatesProvider({ kube: () => w.kube, now: w.now }).run(run, readyGate('2s'));
  assert.equal(result.phase, 'Running');
  assert.deepEqual(w.slept, []);
});

test("a reading that returns no state leaves none to the next: a failure after an 'expanding' counts from itself", async () => {
  // The last call left a failure first seen 50 s ago. In this call the operator says expanding (the failure
  // paused), then failed again at 2 s: a new failure, counted from 2 s — not the old one, 60 s old by 10 s.
  let now = start;
  const kube = new MemoryKube();
  const put = (status: string) => putCluster(kube, status, 'cannot update statefulset');
  put('expanding');
  const sleep = async (ms: number) => {
    now += ms;
    put('failed');
  };
  const provider = createGatesProvider({ kube: () => kube, now: () => now, sleep });
  const result = await provider.resume(run, readyGate('2s'), {
    phase: 'Running',
    startedAt: new Date(start - 50_000).toISOString(),
    metadata: {
      [metadataKeys.gate]: 'vmclusterReady',
      [metadataKeys.state]: JSON.stringify({ failingSince: start - 50_000 }),
    },
  });
  assert.equal(result.phase, 'Running', result.message);
  const state = JSON.parse(result.metadata?.[metadataKeys.state] ?? '{}') as { failingSince?: number };
  assert.equal(
    state.failingSince,
    start + 2_000,
    'the failure seen after expanding began at 2 s, not 50 s ago',
  );
});
