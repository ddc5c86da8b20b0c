// The soak's invariant checker (test/soak/invariants.ts) on synthetic snapshots: each invariant is violated by one
// history and reported exactly once, as that invariant; a clean walk (drain, change, restore) reports nothing.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  type CheckerOptions,
  InvariantChecker,
  lostSamples,
  type Snapshot,
  settleProblems,
  type Violation,
  type ZoneObservation,
} from '../../soak/invariants.ts';

const options: CheckerOptions = { budgetPerBalancer: 1, leaseStallMs: 180_000, deadHolderGraceMs: 60_000 };
const zoneNames = ['zone-a', 'zone-b', 'zone-c', 'zone-d'];
const holderA = { rollout: 'vm/soak-a', uid: 'uid-a' };

function zone(name: string, extra: Partial<ZoneObservation> = {}): ZoneObservation {
  return {
    zone: name,
    generation: 1,
    observedGeneration: 1,
    updateStatus: 'operational',
    value: undefined,
    lease: undefined,
    maintenance: false,
    handoff: false,
    ...extra,
  };
}

/** A snapshot at second `t`: every zone healthy and routed unless `out` names it or `zones` overrides it. */
function snap(
  t: number,
  changes: { zones?: Record<string, Partial<ZoneObservation>>; out?: string[]; failed?: number } = {},
  extra: Partial<Snapshot> = {},
): Snapshot {
  return {
    at: t * 1000,
    zones: zoneNames.map((n) => zone(n, changes.zones?.[n])),
    balancers: [
      { name: 'VMUser vm/vmauth-read', routed: zoneNames.filter((n) => !changes.out?.includes(n)) },
    ],
    rollouts: [
      { rollout: 'vm/soak-a', uid: 'uid-a', phase: 'Progressing', stepIndex: 0, podHash: 'h2', abort: false },
      { rollout: 'vm/soak-b', uid: 'uid-b', phase: 'Healthy', stepIndex: 6, podHash: 'h1', abort: false },
    ],
    reads: { sent: t * 20, failed: changes.failed ?? 0, lastFailures: [] },
    vmauthRestarting: false,
    foreignGenerations: {},
    ...extra,
  };
}

function run(history: Snapshot[], checker = new InvariantChecker(options)): Violation[] {
  return history.flatMap((s) => checker.check(s));
}

/** zone-a walked cleanly: leased, drained, changed, operational again, restored, released. */
function cleanWalk(): Snapshot[] {
  const leased = { lease: holderA, maintenance: true };
  return [
    snap(0),
    snap(1, { zones: { 'zone-a': leased } }),
    snap(2, { zones: { 'zone-a': leased }, out: ['zone-a'] }),
    snap(3, {
      zones: { 'zone-a': { ...leased, generation: 2, updateStatus: 'expanding' } },
      out: ['zone-a'],
    }),
    snap(4, {
      zones: { 'zone-a': { ...leased, generation: 2, observedGeneration: 2, value: '6s' } },
      out: ['zone-a'],
    }),
    snap(5, { zones: { 'zone-a': { ...leased, generation: 2, observedGeneration: 2, value: '6s' } } }),
    snap(6, { zones: { 'zone-a': { generation: 2, observedGeneration: 2, value: '6s' } } }),
  ];
}

test('a clean walk of one zone reports no violation and counts its checks', () => {
  const checker = new InvariantChecker(options);
  assert.deepEqual(run(cleanWalk(), checker), []);
  // 4 zone checks × 4 zones + 1 balancer + 1 read check, per snapshot.
  assert.equal(checker.checks, 7 * (4 * 4 + 1 + 1));
});

test('changed-while-routed: a generation moves while the balancer routes reads to the zone in both snapshots', () => {
  const found = run([snap(0), snap(1, { zones: { 'zone-b': { generation: 2, value: '9s' } } })]);
  assert.deepEqual(
    found.map((v) => v.invariant),
    ['changed-while-routed'],
  );
  assert.match(found[0]?.detail ?? '', /zone-b: generation 1 → 2 \(value undefined → 9s\)/);
});

test('changed-while-routed: a generation the soak made itself (a foreign edit) is not vmzones’ change', () => {
  const found = run([
    snap(0),
    snap(1, { zones: { 'zone-b': { generation: 2 } } }, { foreignGenerations: { 'zone-b': [2] } }),
  ]);
  assert.deepEqual(
    found.filter((v) => v.invariant === 'changed-while-routed'),
    [],
  );
});

test('over-budget: two zones out of one balancer, reported once for the episode', () => {
  const both = {
    zones: { 'zone-a': { lease: holderA }, 'zone-d': { lease: { rollout: 'vm/soak-b', uid: 'uid-b' } } },
    out: ['zone-a', 'zone-d'],
  };
  const found = run([snap(0), snap(1, both), snap(2, both), snap(3, both)]);
  assert.deepEqual(
    found.map((v) => v.invariant),
    ['over-budget'],
  );
  assert.match(found[0]?.detail ?? '', /2 zones out of reads \(zone-a, zone-d\); the budget is 1/);
});

test('out-without-live-lease: a zone out of reads with no lease, seen twice in a row', () => {
  const found = run([snap(0), snap(1, { out: ['zone-c'] }), snap(2, { out: ['zone-c'] })]);
  assert.deepEqual(
    found.map((v) => v.invariant),
    ['out-without-live-lease'],
  );
  // Seen once (a read of the VMUser and the VMCluster straddling a restore) it is not reported.
  assert.deepEqual(run([snap(0), snap(1, { out: ['zone-c'] }), snap(2)]), []);
});

test('out-without-live-lease: the holder is gone and nobody took the zone over within the grace', () => {
  const orphan = {
    zones: { 'zone-c': { lease: { rollout: 'vm/soak-a', uid: 'deleted-uid' } } },
    out: ['zone-c'],
  };
  const found = run([snap(0), snap(1, orphan), snap(30, orphan), snap(61, orphan), snap(70, orphan)]);
  assert.deepEqual(
    found.map((v) => v.invariant),
    ['out-without-live-lease'],
  );
  assert.equal(found[0]?.at, 61_000);
  // Handed to the reconciler: not a violation however long it takes.
  const handed = { zones: { 'zone-c': { ...orphan.zones['zone-c'], handoff: true } }, out: ['zone-c'] };
  assert.deepEqual(run([snap(0), snap(1, handed), snap(100, handed)]), []);
});

test('lease-without-progress: a lease whose zone shows no transition for longer than the bound', () => {
  const stuck = { zones: { 'zone-b': { lease: holderA, maintenance: true } }, out: ['zone-b'] };
  const history = [snap(0), ...Array.from({ length: 20 }, (_, i) => snap(1 + i * 10, stuck))];
  const found = run(history);
  assert.deepEqual(
    found.map((v) => v.invariant),
    ['lease-without-progress'],
  );
  assert.equal(found[0]?.at, 181_000);
});

test('read-failed: a failed read outside a vmauth restart is a violation; inside one it is counted apart', () => {
  const found = run([snap(0), snap(1, { failed: 2 })]);
  assert.deepEqual(
    found.map((v) => v.invariant),
    ['read-failed'],
  );
  assert.match(found[0]?.detail ?? '', /^2 read\(s\) through vmauth failed/);
  const checker = new InvariantChecker(options);
  assert.deepEqual(run([snap(0), snap(1, { failed: 3 }, { vmauthRestarting: true })], checker), []);
  assert.equal(checker.readsFailedDuringVmauthRestart, 3);
});

test('routed-not-operational: a routed zone whose VMCluster is not operational at its generation, twice in a row', () => {
  const restarting = { zones: { 'zone-d': { updateStatus: 'expanding' } } };
  const found = run([snap(0), snap(1, restarting), snap(2, restarting)]);
  assert.deepEqual(
    found.map((v) => v.invariant),
    ['routed-not-operational'],
  );
});

test('settleProblems: names what keeps each zone from being settled, and nothing once it is', () => {
  const known = Object.fromEntries(zoneNames.map((n) => [n, new Set<string | undefined>([undefined, '6s'])]));
  const settled = snap(0, {}, { rollouts: [] });
  assert.deepEqual(settleProblems(settled, known), []);
  const left = snap(
    0,
    {
      zones: { 'zone-a': { lease: holderA, maintenance: true }, 'zone-b': { value: '7s' } },
      out: ['zone-a'],
    },
    { rollouts: [] },
  );
  assert.deepEqual(settleProblems(left, known), [
    'zone-a: leased by vm/soak-a, in maintenance, out of reads',
    'zone-b: on value 7s, not one of undefined, 6s',
  ]);
  assert.deepEqual(settleProblems(snap(0), known), ['vm/soak-a: Progressing']);
});

test('lostSamples: gaps per zone, with the sequence numbers of an injected vmagent restart counted apart', () => {
  const all = new Set([1, 2, 3, 4, 5, 6, 7, 8]);
  const gappy = new Set([1, 2, 5, 8]);
  const result = lostSamples({ 'zone-a': all, 'zone-b': gappy }, 1, 8, [{ from: 3, to: 4 }]);
  assert.deepEqual(result, { lost: 2, excused: 2, detail: 'zone-b: 2 missing (first 6, 7)' });
  assert.equal(lostSamples({ 'zone-a': all }, 1, 8, []).lost, 0);
});
