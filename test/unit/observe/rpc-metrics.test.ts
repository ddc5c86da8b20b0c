// RPC call events into metrics: latency by method and outcome, whole step and gate durations from the starts
// Kubernetes records, vmauth waits from the step statuses, and the drain gate's queue figures per agent.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { metadataKeys } from '../../../plugin/gates/provider.ts';
import { createMetrics } from '../../../plugin/observe/metrics.ts';
import { rpcMetrics } from '../../../plugin/observe/rpc-metrics.ts';
import { notify, type StepCallEvent } from '../../../plugin/rollouts/rpc-observer.ts';
import type { RolloutView } from '../../../plugin/rollouts/types.ts';

const endedAt = Date.parse('2026-12-01T10:02:00Z');

function rolloutAtStep(startedAt: string | undefined): RolloutView {
  return {
    metadata: { name: 'walk', namespace: 'vm' },
    spec: { template: { metadata: {} }, strategy: {} },
    status: {
      currentStepIndex: 2,
      canary: {
        stepPluginStatuses: [
          { index: 1, operation: 'Run', startedAt: '2026-12-01T09:00:00Z' },
          ...(startedAt === undefined ? [] : [{ index: 2, operation: 'Run', startedAt }]),
        ],
      },
    },
  };
}

function stepEvent(overrides: Partial<StepCallEvent>): StepCallEvent {
  return {
    kind: 'step',
    service: 'step',
    method: 'Run',
    outcome: 'Successful',
    durationMs: 40,
    endedAt,
    rollout: rolloutAtStep('2026-12-01T10:00:00Z'),
    context: {
      pluginName: 'vmzones/step',
      config: { zone: 'zone-a', action: 'drainReads' },
      status: undefined,
    },
    result: {
      phase: 'Successful',
      status: { state: 'drained', drainedAt: '2026-12-01T10:00:05Z', reloadedAt: '2026-12-01T10:00:07Z' },
    },
    ...overrides,
  };
}

async function values(metrics: ReturnType<typeof createMetrics>, name: string) {
  const metric = metrics.registry.getSingleMetric(name);
  assert.ok(metric, name);
  // prom-client's type leaves out metricName, which histograms set on every value (_bucket, _sum, _count).
  return (await metric.get()).values as {
    metricName?: string;
    labels: Record<string, string | number>;
    value: number;
  }[];
}

test('a step that ends is observed from the start its Rollout status records, with the vmauth wait', async () => {
  const metrics = createMetrics('step');
  const observer = rpcMetrics(metrics);
  observer.call(stepEvent({}));
  const steps = await values(metrics, 'vmzones_step_duration_seconds');
  const sum = steps.find((v) => v.metricName === 'vmzones_step_duration_seconds_sum');
  assert.deepEqual(sum?.labels, { action: 'drainReads', phase: 'Successful' });
  assert.equal(sum?.value, 120);
  const waits = await values(metrics, 'vmzones_vmauth_reload_wait_seconds');
  assert.equal(waits.find((v) => v.metricName === 'vmzones_vmauth_reload_wait_seconds_sum')?.value, 2);
  const rpc = await values(metrics, 'vmzones_rpc_duration_seconds');
  const count = rpc.find((v) => v.metricName === 'vmzones_rpc_duration_seconds_count');
  assert.deepEqual(count?.labels, { service: 'step', method: 'Run', outcome: 'Successful' });
  assert.equal(count?.value, 1);
});

test('Running steps are not durations; a first Run that ends at once lasts its call; unknown actions are "other"', async () => {
  const metrics = createMetrics('step');
  const observer = rpcMetrics(metrics);
  observer.call(stepEvent({ outcome: 'Running', result: { phase: 'Running' } }));
  assert.equal(
    (await values(metrics, 'vmzones_step_duration_seconds')).filter((v) => v.metricName?.endsWith('_count'))
      .length,
    0,
  );
  observer.call(
    stepEvent({
      rollout: rolloutAtStep(undefined),
      context: { pluginName: 'vmzones/step', config: { zone: 'z', action: 'x"}\n' }, status: undefined },
      result: { phase: 'Failed' },
      outcome: 'Failed',
    }),
  );
  const sum = (await values(metrics, 'vmzones_step_duration_seconds')).find((v) =>
    v.metricName?.endsWith('_sum'),
  );
  assert.deepEqual(sum?.labels, { action: 'other', phase: 'Failed' });
  assert.equal(sum?.value, 0.04);
});

test('drain gate readings set the pending bytes per agent; a finished measurement is timed from its start', async () => {
  const metrics = createMetrics('metricprovider');
  const observer = rpcMetrics(metrics);
  const figures = {
    gate: 'vmagentQueueDrained',
    zone: 'zone-a',
    namespace: 'vm',
    agents: {
      vmagent: { pendingDataBytes: 4096, onDiskPendingBytes: 1024 },
      'vmagent-2': { pendingDataBytes: 0 },
    },
  };
  const base = {
    kind: 'measurement' as const,
    service: 'metricprovider' as const,
    durationMs: 15,
    endedAt,
    run: { metadata: {}, spec: {}, status: {} },
    metric: { provider: {} },
    previous: undefined,
  };
  const metadata = {
    [metadataKeys.gate]: 'vmagentQueueDrained',
    [metadataKeys.startedAt]: '2026-12-01T10:01:30.000Z',
  };
  observer.call({
    ...base,
    method: 'Run',
    outcome: 'Running',
    result: { phase: 'Running', value: JSON.stringify(figures), metadata },
  });
  const pending = await values(metrics, 'vmzones_gate_queue_pending_bytes');
  assert.deepEqual(
    pending.map((v) => [v.labels.vmagent, v.value]),
    [
      ['vmagent', 4096],
      ['vmagent-2', 0],
    ],
  );
  assert.equal((await values(metrics, 'vmzones_gate_queue_on_disk_pending_bytes'))[0]?.value, 1024);
  observer.call({
    ...base,
    method: 'Resume',
    outcome: 'Successful',
    result: {
      phase: 'Successful',
      value: JSON.stringify({ ...figures, agents: { vmagent: { pendingDataBytes: 0 } } }),
      metadata,
    },
  });
  assert.equal((await values(metrics, 'vmzones_gate_queue_pending_bytes'))[0]?.value, 0);
  const gate = (await values(metrics, 'vmzones_gate_duration_seconds')).find((v) =>
    v.metricName?.endsWith('_sum'),
  );
  assert.deepEqual(gate?.labels, { gate: 'vmagentQueueDrained', phase: 'Successful' });
  assert.equal(gate?.value, 30);
});

test('an observer that throws never fails the call', () => {
  assert.doesNotThrow(() =>
    notify(
      {
        call() {
          throw new Error('observer bug');
        },
      },
      { kind: 'other', service: 'step', method: 'Type', outcome: 'ok', durationMs: 1, endedAt },
    ),
  );
});

test('failures are counted by their code: a Failed step by its status code, a thrown one by its error, a gate by its metadata', async () => {
  const metrics = createMetrics('step');
  const observer = rpcMetrics(metrics);
  const failed = (code: unknown) =>
    stepEvent({ outcome: 'Failed', result: { phase: 'Failed', status: { zone: 'zone-a', code } } });
  observer.call(failed('LeaseHeld'));
  observer.call(failed('LeaseHeld'));
  observer.call(failed('no such code'));
  observer.call(stepEvent({ method: 'Abort', outcome: 'error', result: undefined, thrown: 'ApiTransient' }));
  observer.call(stepEvent({})); // a success counts nowhere
  observer.call({
    kind: 'measurement',
    service: 'metricprovider',
    method: 'Resume',
    outcome: 'Failed',
    durationMs: 5,
    endedAt,
    run: { metadata: {}, spec: {}, status: {} },
    metric: { provider: {} },
    previous: undefined,
    result: {
      phase: 'Failed',
      metadata: { [metadataKeys.gate]: 'vmclusterReady', [metadataKeys.failureCode]: 'ZoneFailed' },
    },
  });
  const steps = await values(metrics, 'vmzones_step_failures_total');
  assert.deepEqual(
    steps.map((v) => [v.labels, v.value]),
    [
      [{ action: 'drainReads', method: 'Run', phase: 'Failed', code: 'LeaseHeld' }, 2],
      [{ action: 'drainReads', method: 'Run', phase: 'Failed', code: 'Unexpected' }, 1],
      [{ action: 'drainReads', method: 'Abort', phase: 'Error', code: 'ApiTransient' }, 1],
    ],
  );
  const gates = await values(metrics, 'vmzones_gate_failures_total');
  assert.deepEqual(
    gates.map((v) => [v.labels, v.value]),
    [[{ gate: 'vmclusterReady', phase: 'Failed', code: 'ZoneFailed' }, 1]],
  );
});

test('a drain is counted by what ended it: the reading of queries in flight, the grace period it fell back to, or the grace period asked for', async () => {
  const metrics = createMetrics('step');
  const observer = rpcMetrics(metrics);
  const drained = { state: 'drained', drainedAt: '2026-12-01T10:00:05Z', reloadedAt: '2026-12-01T10:00:07Z' };
  const ended = (status: Record<string, unknown>) =>
    observer.call(stepEvent({ result: { phase: 'Successful', status: { ...drained, ...status } } }));
  ended({
    queries: 'no query executes on the 1 vmselect pod in 2 readings',
    queriesDoneAt: '2026-12-01T10:00:08Z',
  });
  ended({
    queries:
      'no reading of the queries in flight (HTTP 400: address not allowed), so the whole grace period is waited',
  });
  ended({ queries: 'queries still in flight: vm/vmselect-0: 2 (vm_concurrent_select_current)' });
  ended({});
  // A drain still waiting is not counted; neither is another action.
  observer.call(stepEvent({ outcome: 'Running', result: { phase: 'Running', status: drained } }));
  observer.call(
    stepEvent({
      context: { pluginName: 'vmzones/step', config: { zone: 'zone-a', action: 'apply' }, status: undefined },
    }),
  );
  const counted = Object.fromEntries(
    (await values(metrics, 'vmzones_drain_endings_total')).map((v) => [v.labels.ended, v.value]),
  );
  assert.deepEqual(counted, { queries: 1, graceFallback: 2, grace: 1 });
});
