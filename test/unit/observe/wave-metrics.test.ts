// The RPC metrics of steps and gates over a wave (issue 24): a wave step keeps each zone's status under
// `zones.<zone>` (plugin/zones/step/wave.ts) and a wave gate each zone's figures (plugin/gates/wave-reading.ts);
// each zone's vmauth wait and queue reading is observed, as for a one-zone step or gate.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { metadataKeys } from '../../../plugin/gates/provider.ts';
import { createMetrics } from '../../../plugin/observe/metrics.ts';
import { rpcMetrics } from '../../../plugin/observe/rpc-metrics.ts';
import type { MeasurementCallEvent, StepCallEvent } from '../../../plugin/rollouts/rpc-observer.ts';

const endedAt = Date.parse('2026-12-01T10:02:00Z');

function waveStep(action: string, zones: Record<string, Record<string, unknown>>): StepCallEvent {
  return {
    kind: 'step',
    service: 'step',
    method: 'Run',
    outcome: 'Successful',
    durationMs: 40,
    endedAt,
    rollout: {
      metadata: { name: 'walk', namespace: 'vm' },
      spec: { template: { metadata: {} }, strategy: {} },
      status: { currentStepIndex: 0 },
    },
    context: {
      pluginName: 'vmzones/step',
      config: { zones: Object.keys(zones), action },
      status: undefined,
    },
    result: { phase: 'Successful', status: { action, zones } },
  };
}

function waveMeasurement(gate: string, zones: Record<string, Record<string, unknown>>): MeasurementCallEvent {
  return {
    kind: 'measurement',
    service: 'metricprovider',
    method: 'Resume',
    outcome: 'Successful',
    durationMs: 15,
    endedAt,
    run: { metadata: {}, spec: {}, status: {} },
    metric: { provider: {} },
    previous: undefined,
    result: {
      phase: 'Successful',
      value: JSON.stringify({ zones }),
      metadata: { [metadataKeys.gate]: gate, [metadataKeys.startedAt]: '2026-12-01T10:01:00.000Z' },
    },
  };
}

async function samples(metrics: ReturnType<typeof createMetrics>, name: string) {
  const metric = metrics.registry.getSingleMetric(name);
  assert.ok(metric, name);
  // prom-client's type leaves out metricName, which histograms set on every value (_bucket, _sum, _count).
  return (await metric.get()).values as {
    metricName?: string;
    labels: Record<string, string | number>;
    value: number;
  }[];
}

const reloadWait = async (metrics: ReturnType<typeof createMetrics>, source: string) => {
  const all = (await samples(metrics, 'vmzones_vmauth_reload_wait_seconds')).filter(
    (v) => v.labels.source === source,
  );
  const of = (suffix: string) => all.find((v) => v.metricName?.endsWith(suffix))?.value;
  return { count: of('_count'), sum: of('_sum') };
};

test("a wave's drainReads and restoreReads observe each zone's vmauth wait", async () => {
  const metrics = createMetrics('step');
  const observer = rpcMetrics(metrics);
  observer.call(
    waveStep('drainReads', {
      'zone-b': {
        phase: 'Successful',
        state: 'drained',
        drainedAt: '2026-12-01T10:00:00Z',
        reloadedAt: '2026-12-01T10:00:02Z',
      },
      'zone-c': {
        phase: 'Successful',
        state: 'drained',
        drainedAt: '2026-12-01T10:00:01Z',
        reloadedAt: '2026-12-01T10:00:04Z',
      },
    }),
  );
  assert.deepEqual(await reloadWait(metrics, 'drainReads'), { count: 2, sum: 5 });
  observer.call(
    waveStep('restoreReads', {
      'zone-b': {
        phase: 'Successful',
        state: 'restored',
        restoredAt: '2026-12-01T10:01:00Z',
        releasedAt: '2026-12-01T10:01:01Z',
      },
      'zone-c': {
        phase: 'Successful',
        state: 'restored',
        restoredAt: '2026-12-01T10:01:00Z',
        releasedAt: '2026-12-01T10:01:03Z',
      },
    }),
  );
  assert.deepEqual(await reloadWait(metrics, 'restoreReads'), { count: 2, sum: 4 });
});

test("a wave's queue-drain reading sets each zone's pending bytes; a wave's vmauthReloaded each zone's wait", async () => {
  const metrics = createMetrics('metricprovider');
  const observer = rpcMetrics(metrics);
  const queue = (zone: string, bytes: number) => ({
    gate: 'vmagentQueueDrained',
    zone,
    namespace: 'vm',
    agents: { vmagent: { pendingDataBytes: bytes, onDiskPendingBytes: bytes / 2 } },
  });
  observer.call(
    waveMeasurement('vmagentQueueDrained', { 'zone-b': queue('zone-b', 64), 'zone-c': queue('zone-c', 128) }),
  );
  assert.deepEqual(
    (await samples(metrics, 'vmzones_gate_queue_pending_bytes')).map((v) => [
      v.labels.zone,
      v.labels.vmagent,
      v.value,
    ]),
    [
      ['zone-b', 'vmagent', 64],
      ['zone-c', 'vmagent', 128],
    ],
  );
  assert.deepEqual(
    (await samples(metrics, 'vmzones_gate_queue_on_disk_pending_bytes')).map((v) => [v.labels.zone, v.value]),
    [
      ['zone-b', 32],
      ['zone-c', 64],
    ],
  );
  observer.call(
    waveMeasurement('vmauthReloaded', {
      'zone-b': { since: '2026-12-01T10:01:58Z' },
      'zone-c': { since: '2026-12-01T10:01:50Z' },
    }),
  );
  assert.deepEqual(await reloadWait(metrics, 'vmauthReloaded'), { count: 2, sum: 12 });
});
