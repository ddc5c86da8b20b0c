// A failed step carries its failure code as a field of the step status (beside the message in `error`), and a
// failure event carries it as a label: both are what users alert on, so their shape is pinned literally here.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { StepResult } from '../../../plugin/rollouts/types.ts';
import { FakeClock } from '../fake-clock.ts';
import type { MemoryKube } from '../kube/memory-kube.ts';
import { rolloutObject, stepPluginOf, threeZones, useVmauthFixture } from './memory-cluster.ts';

const clock = new FakeClock();
const vmauth = useVmauthFixture(clock);

/** The status as the controller stores it (JSON), with the message replaced so that the literal stays short. */
function statusJson(result: StepResult): string {
  assert.equal(result.status?.error, result.message, 'error holds the message');
  return JSON.stringify({ ...result.status, error: '…' });
}

function twoRollouts(): MemoryKube {
  const kube = threeZones(vmauth.port);
  kube.put(rolloutObject('walk', { currentPodHash: 'rev-w', stableRS: 'rev-s', currentStepIndex: 0 }));
  kube.put(rolloutObject('other', { currentPodHash: 'rev-o', stableRS: 'rev-s', currentStepIndex: 0 }));
  return kube;
}

test('a lease held by another Rollout: status {zone, action, error, code: LeaseHeld}, and a Warning event labelled LeaseHeld', async () => {
  const kube = twoRollouts();
  const walk = stepPluginOf(kube, clock, { rollout: 'walk', inCallWaitMs: 0 });
  const other = stepPluginOf(kube, clock, { rollout: 'other', inCallWaitMs: 0 });
  const first = await walk.call('run', 'zone-a', 'drainReads');
  assert.notEqual(first.phase, 'Failed', first.message);

  // It waits for the holder (issue 35 item 9), at most readyTimeout; then it fails LeaseHeld.
  const waiting = await other.call('run', 'zone-a', 'drainReads');
  assert.equal(waiting.phase, 'Running', waiting.message);
  clock.advance(16 * 60_000);
  const refused = await other.call('run', 'zone-a', 'drainReads', waiting);
  assert.equal(refused.phase, 'Failed');
  assert.equal(statusJson(refused), '{"zone":"zone-a","action":"drainReads","error":"…","code":"LeaseHeld"}');

  const events = kube.created.filter((o) => o.kind === 'Event' && o.reason === 'ZoneLeaseRefused');
  assert.deepEqual(
    events.map((e) => [(e.regarding as { kind: string }).kind, e.type, e.metadata.labels]),
    [
      ['Rollout', 'Warning', { 'vmzones.io/failure-code': 'LeaseHeld' }],
      ['VMCluster', 'Warning', { 'vmzones.io/failure-code': 'LeaseHeld' }],
    ],
  );
});

test('apply before drainReads fails NotDrained, the code in its status (Abort: actions.test.ts, StateInvalid)', async () => {
  const kube = twoRollouts();
  const walk = stepPluginOf(kube, clock, { rollout: 'walk', inCallWaitMs: 0 });
  const early = await walk.call('run', 'zone-b', 'apply');
  assert.equal(early.phase, 'Failed');
  assert.equal(statusJson(early), '{"zone":"zone-b","action":"apply","error":"…","code":"NotDrained"}');
});

test('a step config that is no zone fails SpecInvalid before anything is read', async () => {
  const kube = twoRollouts();
  const walk = stepPluginOf(kube, clock, { rollout: 'walk', inCallWaitMs: 0 });
  const result = await walk.call('run', 'zone-x', 'drainReads');
  assert.equal(result.phase, 'Failed');
  assert.equal(
    statusJson(result),
    '{"zone":"zone-x","action":"drainReads","error":"…","code":"SpecInvalid"}',
  );
});
