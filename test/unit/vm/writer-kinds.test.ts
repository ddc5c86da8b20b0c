import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { KubeObject } from '../../../plugin/kube/objects.ts';
import { queueMetricNames, queueMetricNamesOf } from '../../../plugin/vm/remote-write.ts';
import {
  expectedWriterPods,
  writerKinds,
  writerPodLabels,
  writerRef,
} from '../../../plugin/vm/writer-kinds.ts';

const agent = (spec: Record<string, unknown>): KubeObject => ({
  metadata: { name: 'a', namespace: 'vm' },
  spec,
});

test('expected VMAgent pods: replicas × shards, none in daemonSet mode', () => {
  const vmagent = writerKinds.VMAgent;
  assert.equal(expectedWriterPods(vmagent, agent({})), 1);
  assert.equal(expectedWriterPods(vmagent, agent({ replicaCount: 2, shardCount: 3 })), 6);
  assert.equal(expectedWriterPods(vmagent, agent({ daemonSetMode: true, replicaCount: 2 })), undefined);
});

test('expected VLAgent pods: replicaCount (shardCount is not a VLAgent field), none as a k8s collector', () => {
  const vlagent = writerKinds.VLAgent;
  assert.equal(expectedWriterPods(vlagent, agent({})), 1);
  assert.equal(expectedWriterPods(vlagent, agent({ replicaCount: 2, shardCount: 3 })), 2);
  assert.equal(expectedWriterPods(vlagent, agent({ k8sCollector: { enabled: true } })), undefined);
});

test("a VLAgent is found in operator.victoriametrics.com/v1 and its pods by the operator's vlagent labels", () => {
  assert.deepEqual(writerRef(writerKinds.VLAgent, 'vm', 'logs'), {
    apiVersion: 'operator.victoriametrics.com/v1',
    kind: 'VLAgent',
    namespace: 'vm',
    name: 'logs',
  });
  assert.equal(writerPodLabels(writerKinds.VLAgent, 'logs')['app.kubernetes.io/name'], 'vlagent');
  assert.equal(writerPodLabels(writerKinds.VMAgent, 'm')['app.kubernetes.io/name'], 'vmagent');
});

test("vlagent's queue series: vlagent_remotewrite_ per URL, the shared vm_persistentqueue_ ones unchanged", () => {
  const names = queueMetricNamesOf(writerKinds.VLAgent);
  assert.equal(names.pendingDataBytes, 'vlagent_remotewrite_pending_data_bytes');
  assert.equal(names.requests, 'vlagent_remotewrite_requests_total');
  assert.equal(names.onDiskPendingBytes, 'vm_persistentqueue_bytes_pending');
  assert.equal(names.onDiskBlocksDropped, 'vm_persistentqueue_blocks_dropped_total');
  assert.deepEqual(queueMetricNamesOf(writerKinds.VMAgent), queueMetricNames);
});
