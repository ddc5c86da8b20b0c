// The sandbox tests' and the bench's Rollout reader: a Rollout the controller has not given a status yet must read
// as "not Healthy yet" (npm run bench died on its first poll with `reading 'phase'` of an undefined status).

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ns, rolloutState } from '../../e2e/step/harness.ts';
import { MemoryKube } from '../kube/memory-kube.ts';

const rollout = (status?: Record<string, unknown>) => ({
  apiVersion: 'argoproj.io/v1alpha1',
  kind: 'Rollout',
  metadata: { namespace: ns, name: 'bench', uid: 'u1', generation: 1 },
  spec: {},
  ...(status === undefined ? {} : { status }),
});

test('a Rollout without a status yet reads with an empty status', async () => {
  const kube = new MemoryKube().put(rollout());
  const state = await rolloutState(kube, 'bench');
  assert.equal(state.status.phase, undefined);
  assert.deepEqual(state.status, {});
});

test('a Rollout with a status reads its phase and step statuses', async () => {
  const kube = new MemoryKube().put(
    rollout({
      phase: 'Healthy',
      canary: { stepPluginStatuses: [{ index: 0, name: 'vmzones/step', operation: 'Run' }] },
    }),
  );
  const state = await rolloutState(kube, 'bench');
  assert.equal(state.status.phase, 'Healthy');
  assert.equal(state.status.canary?.stepPluginStatuses?.[0]?.operation, 'Run');
});
