// Gates over a wave (issue 24): the analysis step of a wave passes `zone: "zone-a,zone-b"`; the gate reads every
// zone as its own and passes only when each has its evidence; a wait or a failure names the zone. Over the
// in-memory API, as test/unit/gates/provider.test.ts.

import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { createGatesProvider, metadataKeys } from '../../../plugin/gates/provider.ts';
import type { MeasurementResult, MeasurementView, MetricView } from '../../../plugin/rollouts/types.ts';
import { remoteWriteQueueDirName } from '../../../plugin/vm/remote-write.ts';
import { MemoryKube, readyPod } from '../kube/memory-kube.ts';
import { ownedRun } from './owned-run.ts';

const vmApi = 'operator.victoriametrics.com/v1beta1';
const run = { metadata: { name: 'ro-abc-3', namespace: 'vm' }, spec: {}, status: {} };
const specDocument = [
  'readyTimeout: 2m',
  'vmauth: {vmuser: vmauth-read}',
  'vmagent: {vmagent: vmagent}',
  'waves: [[zone-a, zone-b]]',
  'zones:',
  '  zone-a: {vmcluster: vm-zone-a}',
  '  zone-b: {vmcluster: vm-zone-b}',
].join('\n');

const metric = (config: unknown): MetricView => ({
  name: 'gate',
  provider: { plugin: { 'vmzones/gates': config } },
});

function vmcluster(name: string, status: Record<string, unknown>) {
  return { apiVersion: vmApi, kind: 'VMCluster', metadata: { name, namespace: 'vm', generation: 2 }, status };
}

/** The AnalysisRun and the Rollout that owns it, whose spec document names the zones. */
function owned(): MemoryKube {
  return ownedRun(new MemoryKube(), { 'vmzones.io/spec': specDocument });
}

/** What the controller hands back on Resume. */
const stored = (result: MeasurementResult): MeasurementView => ({
  phase: result.phase,
  message: result.message,
  value: result.value,
  metadata: result.metadata,
});

const operational = { updateStatus: 'operational', observedGeneration: 2 };
const start = Date.UTC(2026, 4, 1, 12, 0, 0);

test('vmclusterReady over a wave waits for the zone not yet ready, naming it, and passes once every zone is', async () => {
  const kube = owned()
    .put(vmcluster('vm-zone-a', operational))
    .put(vmcluster('vm-zone-b', { updateStatus: 'expanding', observedGeneration: 2 }));
  let now = start;
  const provider = createGatesProvider({ kube: () => kube, now: () => now });
  const config = metric({ gate: 'vmclusterReady', zone: 'zone-a,zone-b' });

  const first = await provider.run(run, config);
  assert.equal(first.phase, 'Running', first.message);
  assert.match(
    first.message ?? '',
    /^wave zone-a, zone-b: waiting for zone zone-b: zone zone-b: .*expanding/,
  );
  const figures = JSON.parse(first.value ?? '') as { zones: Record<string, { ready: boolean }> };
  assert.deepEqual(Object.keys(figures.zones), ['zone-a', 'zone-b']);
  assert.equal(figures.zones['zone-a']?.ready, true);
  assert.equal(figures.zones['zone-b']?.ready, false);

  now += 10_000;
  kube.put(vmcluster('vm-zone-b', operational));
  const second = await provider.resume(run, config, stored(first));
  assert.equal(second.phase, 'Successful', second.message);
  assert.match(second.message ?? '', /^wave zone-a, zone-b: every zone passed/);
  assert.deepEqual(await provider.getMetadata(config), {
    [metadataKeys.gate]: 'vmclusterReady',
    'vmzones.io/zone': 'zone-a,zone-b',
  });
});

test('vmclusterReady over a wave fails when the failure of one zone is final, naming that zone', async () => {
  const kube = owned()
    .put(vmcluster('vm-zone-a', { updateStatus: 'failed', observedGeneration: 2, reason: 'image not found' }))
    .put(vmcluster('vm-zone-b', operational));
  let now = start;
  const provider = createGatesProvider({ kube: () => kube, now: () => now });
  const config = { gate: 'vmclusterReady', zone: 'zone-a,zone-b' };
  const failing = await provider.run(run, metric(config));
  assert.equal(
    failing.phase,
    'Running',
    'the operator may still recover within 60 s (vm/operator-failure.ts)',
  );
  now = start + 60_000;
  const failed = await provider.resume(run, metric(config), stored(failing));
  assert.equal(failed.phase, 'Failed');
  assert.match(
    failed.message ?? '',
    /^zone zone-a of wave zone-a, zone-b failed: zone zone-a: .*image not found/,
  );
  assert.doesNotMatch(failed.message ?? '', /zone zone-b of wave/);
});

test('a wave naming a zone the spec does not know is an Error naming it', async () => {
  const kube = owned().put(vmcluster('vm-zone-a', operational));
  const provider = createGatesProvider({ kube: () => kube, now: () => start });
  const result = await provider.run(run, metric({ gate: 'vmclusterReady', zone: 'zone-a,zone-x' }));
  assert.equal(result.phase, 'Error');
  assert.match(result.message ?? '', /zone-x/);
});

const writeUrls = ['zone-a', 'zone-b'].map(
  (zone) => `http://vminsert-vm-${zone}.vm.svc:8480/insert/0/prometheus/api/v1/write`,
);

/** One vmagent /metrics page: each zone's queue with `pending` bytes, and `sent` requests so far. */
async function queuePage(figures: { pending: number; sent: number }[]): Promise<string> {
  const lines = ['vm_app_version{version="vmagent-v1.151.0",short_version="v1.151.0"} 1'];
  for (const [position, f] of figures.entries()) {
    const index = position + 1;
    const path = `/vmagent-remotewrite-data/persistent-queue/${await remoteWriteQueueDirName(index, writeUrls[position] ?? '')}`;
    const url = `${index}:secret-url`;
    lines.push(
      `vmagent_remotewrite_pending_data_bytes{path="${path}", url="${url}"} ${f.pending}`,
      `vm_persistentqueue_bytes_pending{path="${path}"} ${f.pending}`,
      `vmagent_remotewrite_requests_total{url="${url}", status_code="2XX"} ${f.sent}`,
      `vmagent_remotewrite_bytes_sent_total{url="${url}"} ${f.sent * 100}`,
      `vmagent_remotewrite_retries_count_total{url="${url}"} 0`,
      `vmagent_remotewrite_errors_total{url="${url}"} 0`,
      `vmagent_remotewrite_packets_dropped_total{url="${url}"} 0`,
      `vm_persistentqueue_bytes_dropped_total{path="${path}"} 0`,
      `vm_persistentqueue_blocks_dropped_total{path="${path}"} 0`,
    );
  }
  return `${lines.join('\n')}\n`;
}

test("vmagentQueueDrained over a wave keeps each zone's rounds apart and passes when both queues drained", async (t) => {
  let page = '';
  const server = createServer((_request, response) => response.end(page));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const kube = owned()
    .put(vmcluster('vm-zone-a', operational))
    .put(vmcluster('vm-zone-b', operational))
    .put({
      apiVersion: vmApi,
      kind: 'VMAgent',
      metadata: { name: 'vmagent', namespace: 'vm' },
      spec: { replicaCount: 1, remoteWrite: writeUrls.map((url) => ({ url })) },
    })
    .put(
      readyPod(
        'vm',
        'vmagent-0',
        {
          'app.kubernetes.io/name': 'vmagent',
          'app.kubernetes.io/instance': 'vmagent',
          'app.kubernetes.io/component': 'monitoring',
          'managed-by': 'vm-operator',
        },
        { http: (server.address() as AddressInfo).port },
        { args: [`-remoteWrite.url=${writeUrls.join(',')}`] },
      ),
    );
  let now = start;
  const provider = createGatesProvider({ kube: () => kube, now: () => now });
  const config = metric({ gate: 'vmagentQueueDrained', zone: 'zone-a,zone-b' });

  // zone-b's queue still holds data at first; zone-a's is empty.
  page = await queuePage([
    { pending: 0, sent: 100 },
    { pending: 4096, sent: 100 },
  ]);
  let measurement = await provider.run(run, config);
  assert.equal(measurement.phase, 'Running', measurement.message);
  assert.match(measurement.message ?? '', /^wave zone-a, zone-b: waiting for zone zone-a, zone zone-b: /);
  assert.match(measurement.message ?? '', /zone zone-b: .*4096 bytes/);
  const state = JSON.parse(measurement.metadata?.[metadataKeys.state] ?? '{}') as Record<
    string,
    { rounds: unknown[]; agents: Record<string, { index: number }> }
  >;
  assert.deepEqual(Object.keys(state), ['zone-a', 'zone-b']);
  assert.equal(state['zone-a']?.agents.vmagent?.index, 1, "zone-a's own queue");
  assert.equal(state['zone-b']?.agents.vmagent?.index, 2, "zone-b's own queue");

  const phases: string[] = [];
  for (let round = 1; round <= 4 && measurement.phase === 'Running'; round++) {
    now += 10_000;
    page = await queuePage([
      { pending: 0, sent: 100 + round },
      { pending: 0, sent: 100 + round },
    ]);
    measurement = await provider.resume(run, config, stored(measurement));
    phases.push(measurement.phase);
  }
  assert.equal(measurement.phase, 'Successful', measurement.message);
  assert.match(measurement.message ?? '', /^wave zone-a, zone-b: every zone passed/);
  const figures = JSON.parse(measurement.value ?? '') as { zones: Record<string, { drained: boolean }> };
  assert.equal(figures.zones['zone-a']?.drained, true);
  assert.equal(figures.zones['zone-b']?.drained, true);
});
