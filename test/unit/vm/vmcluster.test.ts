import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { KubeObject } from '../../../plugin/kube/objects.ts';
import { vmclusterReadiness } from '../../../plugin/vm/vmcluster.ts';

function cluster(generation: number, status: Record<string, unknown> | undefined): KubeObject {
  return { metadata: { name: 'vm-a', namespace: 'mon', generation }, status };
}

test('operational at the current generation is ready', () => {
  const r = vmclusterReadiness(cluster(3, { updateStatus: 'operational', observedGeneration: 3 }));
  assert.equal(r.state, 'ready');
  assert.equal(r.message, 'VMCluster mon/vm-a is operational at generation 3');
});

test('operational at an older generation is not ready (the operator has not seen the change)', () => {
  const r = vmclusterReadiness(cluster(4, { updateStatus: 'operational', observedGeneration: 3 }));
  assert.equal(r.state, 'progressing');
  assert.match(r.message, /waiting for the operator to observe generation 4 \(observed: 3\)/);
});

test('expanding at the current generation is not ready: observedGeneration alone never means done', () => {
  const r = vmclusterReadiness(cluster(4, { updateStatus: 'expanding', observedGeneration: 4 }));
  assert.equal(r.state, 'progressing');
  assert.match(r.message, /updateStatus operational \(now: expanding\)/);
});

test('a generation we applied is required even if metadata.generation is read stale', () => {
  assert.equal(
    vmclusterReadiness(cluster(4, { updateStatus: 'operational', observedGeneration: 4 }), 5).state,
    'progressing',
  );
});

test('failed at the current generation fails with the reason; a failure of an older generation is still progress', () => {
  const failed = vmclusterReadiness(
    cluster(5, { updateStatus: 'failed', observedGeneration: 5, reason: 'bad image' }),
  );
  assert.equal(failed.state, 'failed');
  assert.match(failed.message, /failed at generation 5: bad image/);
  assert.equal(
    vmclusterReadiness(cluster(6, { updateStatus: 'failed', observedGeneration: 5 })).state,
    'progressing',
  );
});

test('no status yet, and paused', () => {
  assert.equal(vmclusterReadiness(cluster(1, undefined)).state, 'progressing');
  assert.equal(
    vmclusterReadiness(cluster(1, { updateStatus: 'paused', observedGeneration: 1 })).state,
    'paused',
  );
});

test('a VMSingle and a VLCluster follow the same rule and are named by their kind', () => {
  const single = { ...cluster(2, { updateStatus: 'operational', observedGeneration: 2 }), kind: 'VMSingle' };
  assert.equal(vmclusterReadiness(single).message, 'VMSingle mon/vm-a is operational at generation 2');
  const logs = { ...cluster(3, { updateStatus: 'operational', observedGeneration: 2 }), kind: 'VLCluster' };
  assert.equal(vmclusterReadiness(logs).state, 'progressing');
  assert.match(vmclusterReadiness(logs).message, /^VLCluster mon\/vm-a is not ready yet/);
});
