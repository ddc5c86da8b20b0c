// The vmzones/gates provider over an in-memory API (MemoryKube) and local HTTP servers standing in for the
// vmagent pods' /metrics: config errors, the gates' verdicts, conditions, timeouts, and the drain state
// carried from Run to Resume in the measurement.

import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, test } from 'node:test';
import { maxConsecutiveRounds } from '../../../plugin/gates/config.ts';
import { createGatesProvider, metadataKeys } from '../../../plugin/gates/provider.ts';
import { maxStoredStateChars } from '../../../plugin/gates/vmagent-drained.ts';
import { clusterClients } from '../../../plugin/kube/cluster-registry.ts';
import { KubeError } from '../../../plugin/kube/objects.ts';
import type {
  AnalysisRunView,
  MeasurementResult,
  MeasurementView,
  MetricView,
} from '../../../plugin/rollouts/types.ts';
import { remoteWriteQueueDirName } from '../../../plugin/vm/remote-write.ts';
import { MemoryKube, readyPod, secret } from '../kube/memory-kube.ts';
import { ownedRun } from './owned-run.ts';

const servers: Server[] = [];
after(async () => {
  await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
});

const vmApi = 'operator.victoriametrics.com/v1beta1';
const zoneAUrl = 'http://vminsert-vm-zone-a.vm.svc:8480/insert/0/prometheus/api/v1/write';
const zoneBUrl = 'http://vminsert-vm-zone-b.vm.svc:8480/insert/0/prometheus/api/v1/write';
const specDocument = [
  'readyTimeout: 2m',
  'vmauth: {vmuser: vmauth-read}',
  'vmagent: {vmagent: vmagent}',
  'zones:',
  '  zone-a: {vmcluster: vm-zone-a}',
  '  zone-b: {vmcluster: vm-zone-b}',
].join('\n');

const run: AnalysisRunView = { metadata: { name: 'ro-abc-3', namespace: 'vm' }, spec: {}, status: {} };

function metric(config: unknown, conditions: Partial<MetricView> = {}): MetricView {
  return { name: 'gate', provider: { plugin: { 'vmzones/gates': config } }, ...conditions };
}

function vmcluster(name: string, generation: number, status: Record<string, unknown>) {
  return { apiVersion: vmApi, kind: 'VMCluster', metadata: { name, namespace: 'vm', generation }, status };
}

function owned(kube: MemoryKube, annotations: Record<string, string> = { 'vmzones.io/spec': specDocument }) {
  return ownedRun(kube, annotations);
}

/** A clock the test moves; starts at a whole second. */
function clock(start = Date.UTC(2026, 4, 1, 12, 0, 0)) {
  let now = start;
  return {
    now: () => now,
    advance(ms: number) {
      now += ms;
    },
    set(ms: number) {
      now = ms;
    },
  };
}

/** What the controller hands back on Resume: the stored measurement (times to the second). */
function stored(result: MeasurementResult, previous?: MeasurementView): MeasurementView {
  const second = (iso: string | undefined) => (iso === undefined ? undefined : `${iso.slice(0, 19)}Z`);
  return {
    phase: result.phase,
    message: result.message,
    startedAt: second(result.startedAt) ?? previous?.startedAt,
    value: result.value,
    metadata: result.metadata,
    resumeAt: second(result.resumeAt),
  };
}

test('a config that is missing, names an unknown gate or has bad fields is an Error naming the problem', async () => {
  const provider = createGatesProvider({ kube: () => new MemoryKube() });
  const cases: [unknown, RegExp][] = [
    [undefined, /the metric has no provider.plugin\["vmzones\/gates"\] config/],
    [
      { gate: 'vmclusterHappy', zone: 'zone-a' },
      /gate: unknown gate "vmclusterHappy" \(known: vmclusterReady, vmagentQueueDrained, vmauthReloaded, zoneAnswers\)/,
    ],
    [{ gate: 'vmclusterReady', zone: 'Zone A' }, /zone: must be a zone name/],
    [
      { gate: 'vmagentQueueDrained', zone: 'zone-a', consecutiveRounds: '0', roundSpacing: 'soon' },
      /consecutiveRounds: must be at least 1; roundSpacing: invalid duration "soon"/,
    ],
    [{ gate: 'vmclusterReady', zone: 'zone-a', vmagent: 'x' }, /Unrecognized key: "vmagent"/],
    [
      { gate: 'vmagentQueueDrained', zone: 'zone-a', consecutiveRounds: String(maxConsecutiveRounds + 1) },
      new RegExp(
        `consecutiveRounds: must be at most ${maxConsecutiveRounds} \\(each round is stored in the AnalysisRun`,
      ),
    ],
  ];
  for (const [config, expected] of cases) {
    const result = await provider.run(run, metric(config));
    assert.equal(result.phase, 'Error', JSON.stringify(config));
    assert.equal(result.metadata?.[metadataKeys.failureCode], 'GateConfigInvalid');
    assert.match(result.message ?? '', expected);
  }
});

test('vmclusterReady follows the VMCluster: expanding waits, operational passes, failed fails once final', async () => {
  const kube = new MemoryKube().put(
    vmcluster('vm-zone-a', 2, { updateStatus: 'expanding', observedGeneration: 2 }),
  );
  const time = clock();
  const provider = createGatesProvider({ kube: () => kube, now: time.now });
  const config = { gate: 'vmclusterReady', vmcluster: 'vm-zone-a' };

  const first = await provider.run(run, metric(config));
  assert.equal(first.phase, 'Running');
  assert.equal(first.resumeAt, '2026-05-01T12:00:10.000Z');
  assert.match(first.message ?? '', /waiting for updateStatus operational \(now: expanding\)/);
  assert.deepEqual(JSON.parse(first.value ?? ''), {
    gate: 'vmclusterReady',
    zone: null,
    namespace: 'vm',
    vmcluster: 'vm-zone-a',
    kind: 'VMCluster',
    ready: false,
    failed: false,
    state: 'progressing',
    updateStatus: 'expanding',
    generation: 2,
    observedGeneration: 2,
    reason: null,
    deferredPods: [],
  });

  time.advance(10_000);
  kube.put(vmcluster('vm-zone-a', 2, { updateStatus: 'operational', observedGeneration: 2 }));
  const second = await provider.resume(run, metric(config), stored(first));
  assert.equal(second.phase, 'Successful');
  assert.equal(second.metadata?.[metadataKeys.readings], '2');

  // The operator writes `failed` for errors it retries (vm/operator-failure.ts): the gate waits them out for 60 s.
  kube.put(
    vmcluster('vm-zone-a', 3, { updateStatus: 'failed', observedGeneration: 3, reason: 'image not found' }),
  );
  const failing = await provider.run(run, metric(config));
  assert.equal(failing.phase, 'Running', failing.message);
  assert.match(
    failing.message ?? '',
    /image not found; the operator retries a failed reconcile; vmzones waits up to 60s/,
  );
  time.advance(30_000);
  const stillFailing = await provider.resume(run, metric(config), stored(failing));
  assert.equal(stillFailing.phase, 'Running', 'within the grace, counted from the first failed reading');
  time.advance(30_000);
  const failed = await provider.resume(run, metric(config), stored(stillFailing));
  assert.equal(failed.phase, 'Failed');
  assert.equal(failed.metadata?.[metadataKeys.failureCode], 'ZoneFailed');
  assert.match(
    failed.message ?? '',
    /image not found; the operator has reported failed for 60s/,
    "says the operator's reason",
  );

  // A failure the operator recovers from within the grace passes.
  const recovering = await provider.run(run, metric(config));
  assert.equal(recovering.phase, 'Running');
  time.advance(10_000);
  kube.put(vmcluster('vm-zone-a', 3, { updateStatus: 'operational', observedGeneration: 3 }));
  const recovered = await provider.resume(run, metric(config), stored(recovering));
  assert.equal(recovered.phase, 'Successful', recovered.message);

  // A spec the operator cannot parse fails at once: no retry changes it.
  kube.put(
    vmcluster('vm-zone-a', 4, {
      updateStatus: 'failed',
      observedGeneration: 4,
      reason: 'parsing object error for object controller="vmcluster": "unknown field"',
    }),
  );
  const rejected = await provider.run(run, metric(config));
  assert.equal(rejected.phase, 'Failed', rejected.message);
  assert.match(rejected.message ?? '', /the operator cannot parse the spec/);
});

test('vmclusterReady does not pass while a storage pod in maintenance has its change deferred (operator >= v0.75.1)', async () => {
  // Objects as the operator and Kubernetes leave them: test/unit/vm/zone-readiness.test.ts says from which sources.
  const storageLabels = (revision: string) => ({
    'app.kubernetes.io/name': 'vmstorage',
    'app.kubernetes.io/instance': 'vm-zone-a',
    'app.kubernetes.io/component': 'monitoring',
    'managed-by': 'vm-operator',
    'controller-revision-hash': `vmstorage-vm-zone-a-${revision}`,
  });
  const kube = new MemoryKube()
    .put({
      ...vmcluster('vm-zone-a', 3, { updateStatus: 'operational', observedGeneration: 3 }),
      spec: { vmstorage: { replicaCount: 2, maintenanceInsertNodeIDs: [1], maintenanceSelectNodeIDs: [1] } },
    })
    .put({
      apiVersion: 'apps/v1',
      kind: 'StatefulSet',
      metadata: { name: 'vmstorage-vm-zone-a', namespace: 'vm', generation: 5 },
      status: {
        observedGeneration: 5,
        updateRevision: 'vmstorage-vm-zone-a-b',
        currentRevision: 'vmstorage-vm-zone-a-a',
      },
    })
    .put(readyPod('vm', 'vmstorage-vm-zone-a-0', storageLabels('b'), { http: 8482 }))
    .put(readyPod('vm', 'vmstorage-vm-zone-a-1', storageLabels('a'), { http: 8482 }));
  const time = clock();
  const provider = createGatesProvider({ kube: () => kube, now: time.now });
  const config = { gate: 'vmclusterReady', vmcluster: 'vm-zone-a', timeout: '30s' };

  const first = await provider.run(run, metric(config));
  assert.equal(first.phase, 'Running');
  assert.match(
    first.message ?? '',
    /operational at generation 3, but the change is deferred on 1 of 2 vmstorage pods: vmstorage-vm-zone-a-1 \(node ID 1 is in maintenanceInsertNodeIDs and maintenanceSelectNodeIDs/,
  );
  const figures = JSON.parse(first.value ?? '');
  assert.equal(figures.ready, false);
  assert.equal(figures.state, 'progressing');
  assert.deepEqual(figures.deferredPods, ['vmstorage-vm-zone-a-1']);

  time.advance(30_000);
  const ended = await provider.resume(run, metric(config), stored(first));
  assert.equal(ended.phase, 'Failed');
  assert.equal(ended.metadata?.[metadataKeys.failureCode], 'ReadyTimeout');
  assert.match(
    ended.message ?? '',
    /^timed out after 30s: .*deferred on 1 of 2 vmstorage pods: vmstorage-vm-zone-a-1 \(node ID 1/,
  );

  kube.put(readyPod('vm', 'vmstorage-vm-zone-a-1', storageLabels('b'), { http: 8482 }));
  const passed = await provider.run(run, metric(config));
  assert.equal(passed.phase, 'Successful');
  assert.deepEqual(JSON.parse(passed.value ?? '').deferredPods, []);
});

test('zone settings come from the owning Rollout; its readyTimeout bounds the wait', async () => {
  const kube = owned(new MemoryKube()).put(
    vmcluster('vm-zone-b', 1, { updateStatus: 'expanding', observedGeneration: 1 }),
  );
  const time = clock();
  const provider = createGatesProvider({ kube: () => kube, now: time.now });
  const config = { gate: 'vmclusterReady', zone: 'zone-b' };
  const first = await provider.run(run, metric(config));
  assert.equal(first.phase, 'Running');
  assert.equal(JSON.parse(first.value ?? '').vmcluster, 'vm-zone-b');
  assert.equal(first.metadata?.[metadataKeys.deadline], '2026-05-01T12:02:00.000Z');

  time.advance(119_000);
  const near = await provider.resume(run, metric(config), stored(first));
  assert.equal(near.phase, 'Running');
  assert.equal(
    near.resumeAt,
    '2026-05-01T12:02:00.000Z',
    'the last reading is at the deadline, not after it',
  );
  time.advance(1_000);
  const late = await provider.resume(run, metric(config), stored(near, stored(first)));
  assert.equal(late.phase, 'Failed');
  assert.equal(late.metadata?.[metadataKeys.failureCode], 'ReadyTimeout');
  assert.match(late.message ?? '', /VMCluster vm\/vm-zone-b/, 'names the zone object');
});

test('no Rollout owner, a Rollout without spec or an unknown zone is an Error that says what to do', async () => {
  const provider = (kube: MemoryKube) => createGatesProvider({ kube: () => kube });
  const bare = new MemoryKube().put({
    apiVersion: 'argoproj.io/v1alpha1',
    kind: 'AnalysisRun',
    metadata: { name: 'ro-abc-3', namespace: 'vm' },
  });
  const noOwner = await provider(bare).run(run, metric({ gate: 'vmclusterReady', zone: 'zone-a' }));
  assert.equal(noOwner.phase, 'Error');
  assert.equal(noOwner.metadata?.[metadataKeys.failureCode], 'GateSetupInvalid');
  assert.match(noOwner.message ?? '', /is not owned by a Rollout.*name them in the metric config/);

  const noSpec = await provider(owned(new MemoryKube(), {})).run(
    run,
    metric({ gate: 'vmclusterReady', zone: 'zone-a' }),
  );
  assert.equal(noSpec.phase, 'Error');
  assert.match(noSpec.message ?? '', /Rollout vm\/ro: .*has no vmzones.io\/spec/);

  const unknown = await provider(owned(new MemoryKube())).run(
    run,
    metric({ gate: 'vmclusterReady', zone: 'zone-z' }),
  );
  assert.equal(unknown.phase, 'Error');
  assert.match(unknown.message ?? '', /zone "zone-z" is not in zones \(known: zone-a, zone-b\)/);
});

test('conditions judge the figures: true success passes, true failure fails, an unsupported one is an Error', async () => {
  const kube = new MemoryKube().put(
    vmcluster('vm-zone-a', 2, { updateStatus: 'expanding', observedGeneration: 2 }),
  );
  const time = clock();
  const provider = createGatesProvider({ kube: () => kube, now: time.now });
  const config = { gate: 'vmclusterReady', vmcluster: 'vm-zone-a', timeout: '30s' };

  const successOnGeneration = await provider.run(
    run,
    metric(config, { successCondition: 'result.observedGeneration >= 2' }),
  );
  assert.equal(
    successOnGeneration.phase,
    'Successful',
    'the user condition, not the built-in verdict, decides',
  );

  const waiting = await provider.run(run, metric(config, { successCondition: 'result.ready' }));
  assert.equal(waiting.phase, 'Running');
  assert.match(waiting.message ?? '', /^waiting for successCondition/);
  time.advance(30_000);
  const ended = await provider.resume(
    run,
    metric(config, { successCondition: 'result.ready' }),
    stored(waiting),
  );
  assert.equal(ended.phase, 'Failed');
  assert.equal(ended.metadata?.[metadataKeys.failureCode], 'ConditionFailed');

  const failing = await provider.run(
    run,
    metric(config, { failureCondition: "result.updateStatus == 'expanding'" }),
  );
  assert.equal(failing.phase, 'Failed');
  assert.equal(failing.metadata?.[metadataKeys.failureCode], 'ConditionFailed');

  const unsupported = await provider.run(run, metric(config, { successCondition: 'result.ready | not' }));
  assert.equal(unsupported.phase, 'Error');
  assert.equal(unsupported.metadata?.[metadataKeys.failureCode], 'ConditionInvalid');
  assert.match(unsupported.message ?? '', /could not evaluate successCondition "result.ready \| not"/);

  const missingField = await provider.run(run, metric(config, { successCondition: 'result.nope > 1' }));
  assert.equal(missingField.phase, 'Error');
});

test('Terminate ends a waiting measurement Inconclusive with its last figures, never Successful', async () => {
  const provider = createGatesProvider({ kube: () => new MemoryKube() });
  const result = await provider.terminate(run, metric({ gate: 'vmclusterReady', vmcluster: 'x' }), {
    phase: 'Running',
    message: 'waiting',
    value: '{"ready":false}',
    metadata: { [metadataKeys.state]: '{}', [metadataKeys.gate]: 'vmclusterReady' },
  });
  assert.equal(result.phase, 'Inconclusive');
  assert.equal(result.value, '{"ready":false}');
  assert.deepEqual(result.metadata, { [metadataKeys.gate]: 'vmclusterReady' });
});

test('a transient API error while waiting keeps the measurement Running on its last figures', async () => {
  const kube = new MemoryKube().put(
    vmcluster('vm-zone-a', 2, { updateStatus: 'expanding', observedGeneration: 2 }),
  );
  const time = clock();
  const provider = createGatesProvider({ kube: () => kube, now: time.now });
  const config = { gate: 'vmclusterReady', vmcluster: 'vm-zone-a' };
  const first = await provider.run(run, metric(config));
  time.advance(10_000);
  kube.failNext.set('VMCluster', new KubeError('unavailable', 'reading VMCluster vm/vm-zone-a: HTTP 503'));
  const second = await provider.resume(run, metric(config), stored(first));
  assert.equal(second.phase, 'Running');
  assert.match(second.message ?? '', /could not take a reading, retrying: .*HTTP 503/);
  assert.equal(second.value, first.value);
  assert.equal(second.resumeAt, '2026-05-01T12:00:20.000Z');

  // Past the deadline with the API server still failing: Failed, and the code says why.
  time.set(Date.parse(first.metadata?.[metadataKeys.deadline] ?? ''));
  kube.failNext.set('VMCluster', new KubeError('unavailable', 'reading VMCluster vm/vm-zone-a: HTTP 503'));
  const late = await provider.resume(run, metric(config), stored(second, stored(first)));
  assert.equal(late.phase, 'Failed');
  assert.equal(late.metadata?.[metadataKeys.failureCode], 'ApiTransient');
  // A refusal is no transient: an Error at once, with its code.
  kube.failNext.set('VMCluster', new KubeError('forbidden', 'reading VMCluster vm/vm-zone-a: HTTP 403'));
  const refused = await provider.run(run, metric(config));
  assert.equal(refused.phase, 'Error');
  assert.equal(refused.metadata?.[metadataKeys.failureCode], 'Forbidden');
});

// ---- vmagentQueueDrained ----

interface QueueFigures {
  pending: number;
  onDisk: number;
  requests: number;
  bytesSent: number;
  retries: number;
  errors: number;
  dropped?: number;
}

/** A vmagent page with two queues; `zone` figures go to queue 1 (zone-a), queue 2 stays quiet. */
function agentPage(dirs: string[], zone: QueueFigures): string {
  const lines: string[] = ['vm_app_version{version="vmagent-v1.151.0",short_version="v1.151.0"} 1'];
  dirs.forEach((dir, position) => {
    const index = position + 1;
    const f =
      index === 1 ? zone : { pending: 0, onDisk: 0, requests: 5, bytesSent: 50, retries: 0, errors: 0 };
    const path = `/vmagent-remotewrite-data/persistent-queue/${dir}`;
    const url = `${index}:secret-url`;
    lines.push(
      `vmagent_remotewrite_pending_data_bytes{path="${path}", url="${url}"} ${f.pending}`,
      `vm_persistentqueue_bytes_pending{path="${path}"} ${f.onDisk}`,
      `vmagent_remotewrite_requests_total{url="${url}", status_code="2XX"} ${f.requests}`,
      `vmagent_remotewrite_bytes_sent_total{url="${url}"} ${f.bytesSent}`,
      `vmagent_remotewrite_retries_count_total{url="${url}"} ${f.retries}`,
      `vmagent_remotewrite_errors_total{url="${url}"} ${f.errors}`,
      `vmagent_remotewrite_packets_dropped_total{url="${url}"} ${f.dropped ?? 0}`,
      `vm_persistentqueue_bytes_dropped_total{path="${path}"} 0`,
      `vm_persistentqueue_blocks_dropped_total{path="${path}"} 0`,
    );
  });
  return `${lines.join('\n')}\n`;
}

async function agentServer(): Promise<{ port: number; set(page: string): void }> {
  let page = '';
  const server = createServer((_request, response) => response.end(page));
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    set(next: string) {
      page = next;
    },
  };
}

const agentLabels = {
  'app.kubernetes.io/name': 'vmagent',
  'app.kubernetes.io/instance': 'vmagent',
  'app.kubernetes.io/component': 'monitoring',
  'managed-by': 'vm-operator',
};

async function drainWorld() {
  const dirs = [await remoteWriteQueueDirName(1, zoneAUrl), await remoteWriteQueueDirName(2, zoneBUrl)];
  const server = await agentServer();
  const kube = owned(new MemoryKube())
    .put(vmcluster('vm-zone-a', 2, { updateStatus: 'operational', observedGeneration: 2 }))
    .put({
      apiVersion: vmApi,
      kind: 'VMAgent',
      metadata: { name: 'vmagent', namespace: 'vm' },
      spec: { replicaCount: 1, remoteWrite: [{ url: zoneAUrl }, { url: zoneBUrl }] },
    })
    .put(
      readyPod(
        'vm',
        'vmagent-0',
        agentLabels,
        { http: server.port },
        { args: [`-remoteWrite.url=${zoneAUrl},${zoneBUrl}`] },
      ),
    );
  return { dirs, server, kube };
}

const flowing = (n: number): QueueFigures => ({
  pending: 0,
  onDisk: 0,
  requests: 100 + n,
  bytesSent: 10_000 + n * 100,
  retries: 3,
  errors: 0,
});

test('vmagentQueueDrained keeps its rounds in the measurement and passes after K good rounds', async () => {
  const { dirs, server, kube } = await drainWorld();
  const time = clock();
  const provider = createGatesProvider({ kube: () => kube, now: time.now });
  const config = metric({ gate: 'vmagentQueueDrained', zone: 'zone-a' });

  server.set(agentPage(dirs, { ...flowing(0), pending: 4096, onDisk: 4096 }));
  let measurement = await provider.run(run, config);
  assert.equal(measurement.phase, 'Running');
  assert.match(measurement.message ?? '', /has 4096 bytes in the on-disk queue for remote-write queue 1/);
  assert.equal(
    measurement.resumeAt,
    '2026-05-01T12:00:02.000Z',
    'the default roundSpacing is 1.5 s; between calls ResumeAt is whole seconds',
  );
  const state = JSON.parse(measurement.metadata?.[metadataKeys.state] ?? '');
  assert.equal(state.rounds.length, 1);
  assert.deepEqual(state.agents, { vmagent: { index: 1, listDigest: state.agents.vmagent.listDigest } });

  const phases: string[] = [];
  let view = stored(measurement);
  for (let round = 1; round <= 3; round++) {
    time.advance(2_000);
    server.set(agentPage(dirs, flowing(round)));
    measurement = await provider.resume(run, config, view);
    view = stored(measurement, view);
    phases.push(measurement.phase);
  }
  assert.deepEqual(phases, ['Running', 'Running', 'Successful']);
  const figures = JSON.parse(measurement.value ?? '');
  assert.equal(figures.drained, true);
  assert.equal(figures.pendingDataBytes, 0);
  assert.equal(figures.agents.vmagent.queueIndex, 1);
  assert.equal(
    measurement.metadata?.[metadataKeys.state],
    undefined,
    'a finished measurement drops its state',
  );
  assert.equal(measurement.metadata?.[metadataKeys.readings], '4');
});

test('vmagentQueueDrained on a VLCluster zone reads the VLAgent the spec names and its vlagent_ series', async () => {
  const logsA = 'http://vlinsert-logs-a.vm.svc:9481/internal/insert';
  const logsB = 'http://vlinsert-logs-b.vm.svc:9481/internal/insert';
  const logsSpec = [
    'vmauth: {vmuser: vmauth-read}',
    'vlagent: {vlagent: logs}',
    'zones:',
    '  zone-a: {vlcluster: logs-a}',
    '  zone-b: {vlcluster: logs-b}',
  ].join('\n');
  const server = await agentServer();
  const kube = owned(new MemoryKube(), { 'vmzones.io/spec': logsSpec })
    .put({
      apiVersion: 'operator.victoriametrics.com/v1',
      kind: 'VLCluster',
      metadata: { name: 'logs-a', namespace: 'vm', generation: 2 },
      status: { updateStatus: 'operational', observedGeneration: 2 },
    })
    .put({
      apiVersion: 'operator.victoriametrics.com/v1',
      kind: 'VLAgent',
      metadata: { name: 'logs', namespace: 'vm' },
      spec: { remoteWrite: [{ url: logsA }, { url: logsB }] },
    })
    .put(
      readyPod(
        'vm',
        'vlagent-logs-0',
        { ...agentLabels, 'app.kubernetes.io/name': 'vlagent', 'app.kubernetes.io/instance': 'logs' },
        { http: server.port },
        { args: [`-remoteWrite.url=${logsA},${logsB}`] },
      ),
    );
  const dirs = [await remoteWriteQueueDirName(1, logsA), await remoteWriteQueueDirName(2, logsB)];
  const vlagentPage = (round: number) => agentPage(dirs, flowing(round)).replaceAll('vmagent_', 'vlagent_');
  const time = clock();
  const provider = createGatesProvider({ kube: () => kube, now: time.now });
  const config = metric({ gate: 'vmagentQueueDrained', zone: 'zone-a', consecutiveRounds: '2' });

  // A vmagent's page is not a vlagent's: its series are not the ones a VLAgent's queue is read from.
  server.set(agentPage(dirs, flowing(0)));
  let measurement = await provider.run(run, config);
  assert.equal(measurement.phase, 'Running');
  assert.match(measurement.message ?? '', /lacks the series vlagent_remotewrite_pending_data_bytes/);
  let view = stored(measurement);
  for (let round = 1; round <= 2; round++) {
    time.advance(10_000);
    server.set(vlagentPage(round));
    measurement = await provider.resume(run, config, view);
    view = stored(measurement, view);
  }
  assert.equal(measurement.phase, 'Successful', measurement.message);
  assert.equal(JSON.parse(measurement.value ?? '').agents.logs.queueIndex, 1);

  // The VLAgent is read in operator.victoriametrics.com/v1; one that is missing is named by its kind.
  kube.objects.delete('operator.victoriametrics.com/v1|VLAgent|vm|logs');
  const missing = await provider.run(run, config);
  assert.equal(missing.phase, 'Error');
  assert.match(missing.message ?? '', /VLAgent vm\/logs/);
});

/** The drain world with `pods` vmagent pods (all served by the one page). */
async function manyPods(pods: number) {
  const world = await drainWorld();
  world.kube.put({
    apiVersion: vmApi,
    kind: 'VMAgent',
    metadata: { name: 'vmagent', namespace: 'vm' },
    spec: { replicaCount: pods, remoteWrite: [{ url: zoneAUrl }, { url: zoneBUrl }] },
  });
  for (let i = 1; i < pods; i++) {
    world.kube.put(
      readyPod(
        'vm',
        `vmagent-${i}`,
        agentLabels,
        { http: world.server.port },
        { args: [`-remoteWrite.url=${zoneAUrl},${zoneBUrl}`] },
      ),
    );
  }
  return world;
}

test('vmagentQueueDrained caps its stored readings: extra rounds go first, K rounds that cannot fit are an Error', async () => {
  // How much one pod adds to a round, measured (rounds of 1 and of 10 pods), not assumed.
  const roundSize = async (pods: number) => {
    const world = await manyPods(pods);
    world.server.set(agentPage(world.dirs, flowing(0)));
    const first = await createGatesProvider({ kube: () => world.kube, now: clock().now }).run(
      run,
      metric({ gate: 'vmagentQueueDrained', zone: 'zone-a' }),
    );
    return JSON.stringify(JSON.parse(first.metadata?.[metadataKeys.state] ?? '').rounds[0]).length;
  };
  const perPodRound = ((await roundSize(10)) - (await roundSize(1))) / 9;
  assert.ok(perPodRound > 100, `one pod adds ${perPodRound} characters to a round`);

  // K = 30 rounds of enough pods cannot fit: the first reading says so, naming the figures and what to do.
  const pods = Math.ceil(maxStoredStateChars / (perPodRound * maxConsecutiveRounds)) + 1;
  const big = await manyPods(pods);
  big.server.set(agentPage(big.dirs, flowing(0)));
  const refused = await createGatesProvider({ kube: () => big.kube, now: clock().now }).run(
    run,
    metric({ gate: 'vmagentQueueDrained', zone: 'zone-a', consecutiveRounds: String(maxConsecutiveRounds) }),
  );
  assert.equal(refused.phase, 'Error', refused.message);
  assert.match(
    refused.message ?? '',
    new RegExp(
      `consecutiveRounds: ${maxConsecutiveRounds} rounds of ${pods} vmagent pods need \\d+ KiB of stored readings, more than the 128 KiB`,
    ),
  );

  // K rounds fit, K + 2 do not: the state never passes the cap and keeps at least K rounds.
  const k = 10;
  const fitting = Math.floor(maxStoredStateChars / (perPodRound * (k + 1)));
  const world = await manyPods(fitting);
  const time = clock();
  const provider = createGatesProvider({ kube: () => world.kube, now: time.now });
  const config = metric({ gate: 'vmagentQueueDrained', zone: 'zone-a', consecutiveRounds: String(k) });
  world.server.set(agentPage(world.dirs, { ...flowing(0), pending: 4096, onDisk: 4096 }));
  let measurement = await provider.run(run, config);
  let view = stored(measurement);
  const kept: number[] = [];
  for (let round = 1; round <= k + 3; round++) {
    time.advance(10_000);
    measurement = await provider.resume(run, config, view);
    assert.equal(measurement.phase, 'Running', measurement.message);
    const state = measurement.metadata?.[metadataKeys.state] ?? '';
    assert.ok(state.length <= maxStoredStateChars, `round ${round}: ${state.length} characters stored`);
    kept.push(JSON.parse(state).rounds.length);
    view = stored(measurement, view);
  }
  assert.ok(Math.max(...kept) >= k, `at least K rounds are kept (${kept.join(', ')})`);
  assert.ok(Math.max(...kept) < k + 2, `the cap dropped the extra rounds (${kept.join(', ')})`);
});

test('vmagentQueueDrained looks again after 2 s while the zone is not ready; counted rounds stay ≥ roundSpacing apart', async () => {
  const { dirs, server, kube } = await drainWorld();
  kube.put(vmcluster('vm-zone-a', 3, { updateStatus: 'expanding', observedGeneration: 3 }));
  const time = clock();
  const provider = createGatesProvider({ kube: () => kube, now: time.now });
  const config = metric({ gate: 'vmagentQueueDrained', zone: 'zone-a', roundSpacing: '10s' });

  server.set(agentPage(dirs, flowing(0)));
  let measurement = await provider.run(run, config);
  assert.equal(measurement.phase, 'Running');
  assert.match(measurement.message ?? '', /rounds count only once the zone is ready/);
  assert.equal(measurement.resumeAt, '2026-05-01T12:00:02.000Z', 'not ready: the next look 2 s later');
  let view = stored(measurement);

  time.advance(2_000);
  kube.put(vmcluster('vm-zone-a', 3, { updateStatus: 'operational', observedGeneration: 3 }));
  server.set(agentPage(dirs, flowing(1)));
  measurement = await provider.resume(run, config, view);
  view = stored(measurement, view);
  assert.equal(measurement.phase, 'Running');
  assert.equal(
    measurement.resumeAt,
    '2026-05-01T12:00:12.000Z',
    'ready: rounds are roundSpacing apart again',
  );
  assert.equal(JSON.parse(measurement.value ?? '').consecutiveGoodRounds, 1);

  const phases: string[] = [];
  for (let round = 2; round <= 3; round++) {
    time.advance(10_000);
    server.set(agentPage(dirs, flowing(round)));
    measurement = await provider.resume(run, config, view);
    view = stored(measurement, view);
    phases.push(measurement.phase);
  }
  assert.deepEqual(phases, ['Running', 'Successful'], 'K = 3 counted rounds, 10 s apart');
  assert.match(
    measurement.message ?? '',
    /3 consecutive rounds from 2026-05-01T12:00:02.000Z to 2026-05-01T12:00:22.000Z/,
  );
});

test('vmagentQueueDrained looks again at the next whole second while vmagent still retries for the zone; a backlog keeps roundSpacing', async () => {
  const { dirs, server, kube } = await drainWorld();
  const time = clock();
  const provider = createGatesProvider({ kube: () => kube, now: time.now });
  // A whole-second roundSpacing, as ResumeAt between calls is whole seconds.
  const config = metric({ gate: 'vmagentQueueDrained', zone: 'zone-a', roundSpacing: '2s' });
  const resumeAfter = (m: MeasurementResult) => Date.parse(m.resumeAt ?? '') - time.now();

  server.set(agentPage(dirs, flowing(0)));
  let measurement = await provider.run(run, config);
  let view = stored(measurement);
  assert.equal(resumeAfter(measurement), 2_000, 'a first round: the next one a roundSpacing later');

  // The zone is back; vmagent's retry of the block it held fails once more, then goes through.
  time.advance(2_000);
  server.set(agentPage(dirs, { ...flowing(1), retries: 4, errors: 1 }));
  measurement = await provider.resume(run, config, view);
  view = stored(measurement, view);
  assert.match(measurement.message ?? '', /retries_count_total grew by 1/);
  // Between calls the controller's ResumeAt is whole seconds: 0.5 s becomes 1 s (in one call it is 0.5 s, below).
  assert.equal(
    resumeAfter(measurement),
    1_000,
    'retrying: look again at the next second, not a roundSpacing later',
  );
  time.advance(1_000);
  server.set(agentPage(dirs, { ...flowing(2), retries: 5, errors: 1 }));
  measurement = await provider.resume(run, config, view);
  view = stored(measurement, view);
  assert.equal(resumeAfter(measurement), 1_000, 'still retrying');

  // Retries stand still from here: that round is the first counted one, the next ones a roundSpacing apart.
  const phases: string[] = [];
  const spacings: number[] = [];
  for (const [step, advance] of [
    [3, 1_000],
    [4, 2_000],
    [5, 2_000],
  ] as const) {
    time.advance(advance);
    server.set(agentPage(dirs, { ...flowing(step), retries: 5, errors: 1 }));
    measurement = await provider.resume(run, config, view);
    view = stored(measurement, view);
    phases.push(measurement.phase);
    if (measurement.phase === 'Running') spacings.push(resumeAfter(measurement));
  }
  assert.deepEqual(phases, ['Running', 'Running', 'Successful']);
  assert.deepEqual(spacings, [2_000, 2_000], 'counted rounds are roundSpacing apart');
  assert.match(
    measurement.message ?? '',
    /3 consecutive rounds from 2026-05-01T12:00:04.000Z to 2026-05-01T12:00:08.000Z/,
    'the count started 1 s after the last retry, not a roundSpacing after it',
  );

  // Data pending above the limit is a backlog, not a failing send: the rounds keep their spacing.
  time.advance(2_000);
  server.set(agentPage(dirs, { ...flowing(6), retries: 5, errors: 1, pending: 4 * 1024 * 1024 }));
  const backlog = await provider.run(run, config);
  assert.match(backlog.message ?? '', /bytes pending/);
  assert.equal(resumeAfter(backlog), 2_000);
});

test('in one call: 0.5 s looks while a send waits to retry, then the K rounds it is counting, past the 5 s in-call wait', async () => {
  const { dirs, server, kube } = await drainWorld();
  const time = clock();
  const start = time.now();
  const slept: number[] = [];
  let step = 0;
  // vmagent holds one block through its backoff (one error more than retries) until its retry at 3.5 s.
  const page = () =>
    agentPage(dirs, { ...flowing(step++), errors: 7, retries: time.now() - start < 3_500 ? 6 : 7 });
  server.set(page());
  const provider = createGatesProvider({
    kube: () => kube,
    now: time.now,
    sleep: async (ms) => {
      slept.push(ms);
      time.advance(ms);
      server.set(page());
    },
  });
  const measurement = await provider.run(run, metric({ gate: 'vmagentQueueDrained', zone: 'zone-a' }));
  assert.equal(measurement.phase, 'Successful', measurement.message);
  // 0–3 s: a send waits to retry; 3.5 s: the retry counted (not good); 4 s: the first counted round, then 5.5 s, 7 s
  // (the default roundSpacing, 1.5 s).
  assert.deepEqual(slept, [500, 500, 500, 500, 500, 500, 500, 500, 1_500, 1_500]);
  assert.match(
    measurement.message ?? '',
    /3 consecutive rounds from 2026-05-01T12:00:04.000Z to 2026-05-01T12:00:07.000Z/,
  );

  // Rounds further apart than another in-call wait (6 s > 5 s) are a call each: the first call returns Running.
  slept.length = 0;
  const wide = await provider.run(
    run,
    metric({ gate: 'vmagentQueueDrained', zone: 'zone-a', consecutiveRounds: '2', roundSpacing: '6s' }),
  );
  assert.equal(wide.phase, 'Running', wide.message);
  assert.deepEqual(slept, []);
});

test('vmagentQueueDrained: retries that grow, an unreachable pod, an edited remote-write list are not drained', async () => {
  const { dirs, server, kube } = await drainWorld();
  const time = clock();
  const provider = createGatesProvider({ kube: () => kube, now: time.now });
  const config = metric({ gate: 'vmagentQueueDrained', zone: 'zone-a', consecutiveRounds: '2' });

  server.set(agentPage(dirs, flowing(0)));
  const first = await provider.run(run, config);
  time.advance(10_000);
  server.set(agentPage(dirs, { ...flowing(1), retries: 9 }));
  const retrying = await provider.resume(run, config, stored(first));
  assert.equal(retrying.phase, 'Running');
  assert.match(
    retrying.message ?? '',
    /vmagent_remotewrite_retries_count_total grew by 6 since the previous scrape/,
  );

  time.advance(10_000);
  kube.put(
    readyPod(
      'vm',
      'vmagent-1',
      agentLabels,
      { http: server.port },
      { ready: false, args: [`-remoteWrite.url=${zoneAUrl},${zoneBUrl}`] },
    ),
  );
  const unreachable = await provider.resume(run, config, stored(retrying, stored(first)));
  assert.equal(unreachable.phase, 'Running');
  assert.match(unreachable.message ?? '', /pod vm\/vmagent-1 is unreachable: pod vm\/vmagent-1 is not Ready/);
  assert.equal(
    JSON.parse(unreachable.value ?? '').pendingDataBytes,
    null,
    'an unknown pod makes the sum unknown',
  );

  time.advance(10_000);
  kube.put({
    apiVersion: vmApi,
    kind: 'VMAgent',
    metadata: { name: 'vmagent', namespace: 'vm' },
    spec: {
      replicaCount: 2,
      remoteWrite: [{ url: zoneAUrl }, { url: zoneBUrl }, { url: 'http://extra:8480/api/v1/write' }],
    },
  });
  const edited = await provider.resume(run, config, stored(unreachable, stored(first)));
  assert.equal(edited.phase, 'Running');
  assert.match(edited.message ?? '', /VMAgent vmagent: spec.remoteWrite changed since the gate started/);
});

test('vmagentQueueDrained: dropped data fails at once; a malformed page is an Error naming pod and line', async () => {
  const { dirs, server, kube } = await drainWorld();
  const time = clock();
  const provider = createGatesProvider({ kube: () => kube, now: time.now });
  const config = metric({ gate: 'vmagentQueueDrained', zone: 'zone-a' });
  server.set(agentPage(dirs, flowing(0)));
  const first = await provider.run(run, config);
  time.advance(10_000);
  server.set(agentPage(dirs, { ...flowing(1), dropped: 2 }));
  const lost = await provider.resume(run, config, stored(first));
  assert.equal(lost.phase, 'Failed');
  assert.match(
    lost.message ?? '',
    /data was dropped for remote-write queue 1: .*packets_dropped_total grew by 2/,
  );
  assert.equal(JSON.parse(lost.value ?? '').dataLost, true);

  server.set(`${agentPage(dirs, flowing(2))}vmagent_remotewrite_errors_total{url="1:secret-url"} NaNa\n`);
  const malformed = await provider.run(run, config);
  assert.equal(malformed.phase, 'Error');
  assert.match(
    malformed.message ?? '',
    /pod vm\/vmagent-0: scraping http:\/\/127.0.0.1:\d+\/metrics: metrics text line \d+ \(vmagent_remotewrite_errors_total\): invalid sample value "NaNa"/,
  );
});

test('vmagentQueueDrained: a zone that is not ready is not drained, whatever the queue says', async () => {
  const { dirs, server, kube } = await drainWorld();
  kube.put(vmcluster('vm-zone-a', 3, { updateStatus: 'expanding', observedGeneration: 3 }));
  const provider = createGatesProvider({ kube: () => kube, now: clock().now });
  server.set(agentPage(dirs, flowing(0)));
  const result = await provider.run(
    run,
    metric({ gate: 'vmagentQueueDrained', zone: 'zone-a', consecutiveRounds: 1 }),
  );
  assert.equal(result.phase, 'Running');
  assert.match(
    result.message ?? '',
    /not drained: VMCluster vm\/vm-zone-a is not ready yet.*rounds count only once the zone is ready/,
  );
  const figures = JSON.parse(result.value ?? '');
  assert.equal(figures.zoneReady, false);
  assert.equal(figures.pendingDataBytes, 0, 'the raw figures are still shown');
  assert.equal(figures.consecutiveGoodRounds, 0);
});

test("vmagentQueueDrained: a queue directory that is not the zone URL's hash is not drained", async () => {
  const { server, kube } = await drainWorld();
  const provider = createGatesProvider({ kube: () => kube, now: clock().now });
  // The process was started with the zones in the other order than the spec says.
  const swapped = [await remoteWriteQueueDirName(1, zoneBUrl), await remoteWriteQueueDirName(2, zoneAUrl)];
  server.set(agentPage(swapped, flowing(0)));
  const result = await provider.run(
    run,
    metric({ gate: 'vmagentQueueDrained', zone: 'zone-a', consecutiveRounds: 1 }),
  );
  assert.equal(result.phase, 'Running');
  assert.match(result.message ?? '', /not in a directory named 1_[0-9A-F]{16}/);
});

test('vmagentQueueDrained: spec.remoteWrite reordered while the pods still run the old args is not drained', async () => {
  const { dirs, server, kube } = await drainWorld();
  // The spec now lists zone-b first; the pod's process still has zone-a at 1, zone-b at 2 (its queues say so).
  kube.put({
    apiVersion: vmApi,
    kind: 'VMAgent',
    metadata: { name: 'vmagent', namespace: 'vm' },
    spec: { replicaCount: 1, remoteWrite: [{ url: zoneBUrl }, { url: zoneAUrl }] },
  });
  server.set(agentPage(dirs, flowing(0)));
  const provider = createGatesProvider({ kube: () => kube, now: clock().now });
  const result = await provider.run(
    run,
    metric({ gate: 'vmagentQueueDrained', zone: 'zone-a', consecutiveRounds: 1, ingestionExpected: 'false' }),
  );
  assert.equal(result.phase, 'Running', result.message);
  assert.match(
    result.message ?? '',
    /the -remoteWrite\.url order changed: the zone's URL is at position 2 in VMAgent vmagent spec\.remoteWrite but at 1 in the args the pod's process was started with/,
  );
  assert.doesNotMatch(result.message ?? '', /s3cret|@/);
});

test('vmagentQueueDrained: every agent that writes to the zone counts, each with its own queue index', async () => {
  const { dirs, server, kube } = await drainWorld();
  // A second agent lists the zones the other way round: zone-a is its queue 2.
  const second = await agentServer();
  const secondDirs = [await remoteWriteQueueDirName(1, zoneBUrl), await remoteWriteQueueDirName(2, zoneAUrl)];
  const labels = { ...agentLabels, 'app.kubernetes.io/instance': 'edge' };
  kube
    .put({
      apiVersion: vmApi,
      kind: 'VMAgent',
      metadata: { name: 'edge', namespace: 'vm' },
      spec: { remoteWrite: [{ url: zoneBUrl }, { url: zoneAUrl }] },
    })
    .put(
      readyPod(
        'vm',
        'vmagent-edge-0',
        labels,
        { http: second.port },
        { args: [`-remoteWrite.url=${zoneBUrl},${zoneAUrl}`] },
      ),
    );
  /** Queue 2 of the second agent carries zone-a's figures. */
  const secondPage = (zone: QueueFigures) => swapQueues(secondDirs, zone);
  const time = clock();
  const provider = createGatesProvider({ kube: () => kube, now: time.now });
  const config = metric({
    gate: 'vmagentQueueDrained',
    zone: 'zone-a',
    vmagents: ['vmagent', 'edge'],
    consecutiveRounds: 2,
  });

  server.set(agentPage(dirs, flowing(0)));
  second.set(secondPage({ ...flowing(0), onDisk: 900, pending: 900 }));
  let measurement = await provider.run(run, config);
  let view = stored(measurement);
  assert.equal(measurement.phase, 'Running');
  assert.match(
    measurement.message ?? '',
    /^edge: remote-write queue 2 is not drained: pod vm\/vmagent-edge-0 has 900 bytes/,
  );
  const figures = JSON.parse(measurement.value ?? '');
  assert.equal(figures.agents.vmagent.queueIndex, 1);
  assert.equal(figures.agents.edge.queueIndex, 2);
  assert.equal(figures.onDiskPendingBytes, 900, 'summed over the agents');

  for (let round = 1; round <= 2; round++) {
    time.advance(10_000);
    server.set(agentPage(dirs, flowing(round)));
    second.set(secondPage(flowing(round)));
    measurement = await provider.resume(run, config, view);
    view = stored(measurement, view);
  }
  assert.equal(measurement.phase, 'Successful', measurement.message);
  assert.equal(JSON.parse(measurement.value ?? '').podCount, 2);
});

/** A page whose queue 2 (not 1) carries `zone`'s figures, queue 1 quiet. */
function swapQueues(dirs: string[], zone: QueueFigures): string {
  const quiet: QueueFigures = { pending: 0, onDisk: 0, requests: 5, bytesSent: 50, retries: 0, errors: 0 };
  const lines: string[] = [];
  [quiet, zone].forEach((f, position) => {
    const index = position + 1;
    const path = `/vmagent-remotewrite-data/persistent-queue/${dirs[position]}`;
    const url = `${index}:secret-url`;
    lines.push(
      `vmagent_remotewrite_pending_data_bytes{path="${path}", url="${url}"} ${f.pending}`,
      `vm_persistentqueue_bytes_pending{path="${path}"} ${f.onDisk}`,
      `vmagent_remotewrite_requests_total{url="${url}", status_code="2XX"} ${f.requests}`,
      `vmagent_remotewrite_bytes_sent_total{url="${url}"} ${f.bytesSent}`,
      `vmagent_remotewrite_retries_count_total{url="${url}"} ${f.retries}`,
      `vmagent_remotewrite_errors_total{url="${url}"} ${f.errors}`,
      `vmagent_remotewrite_packets_dropped_total{url="${url}"} ${f.dropped ?? 0}`,
      `vm_persistentqueue_bytes_dropped_total{path="${path}"} 0`,
      `vm_persistentqueue_blocks_dropped_total{path="${path}"} 0`,
    );
  });
  return `${lines.join('\n')}\n`;
}

test('a gate config cannot point the plugin at another namespace unless the plugin registration allows it', async () => {
  const kube = new MemoryKube()
    .put(vmcluster('vm-zone-a', 2, { updateStatus: 'operational', observedGeneration: 2 }))
    .put({
      ...vmcluster('vm-zone-a', 2, { updateStatus: 'operational', observedGeneration: 2 }),
      metadata: { name: 'vm-zone-a', namespace: 'other', generation: 2 },
    })
    .put(secret('other', 'token', { token: 'stolen' }));
  const elsewhere = [
    { gate: 'vmclusterReady', vmcluster: 'vm-zone-a', namespace: 'other' },
    {
      gate: 'vmauthReloaded',
      vmauth: 'x',
      namespace: 'other',
      since: '2026-05-01T12:00:00Z',
      pods: { auth: { bearerToken: { name: 'token', key: 'token' } } },
    },
    {
      gate: 'vmagentQueueDrained',
      vmagent: 'x',
      vmcluster: 'vm-zone-a',
      namespace: 'other',
      pods: { auth: { bearerToken: { name: 'token', key: 'token' } } },
    },
  ];
  const strict = createGatesProvider({
    kube: () => kube,
    now: clock().now,
    allowance: { all: false, extra: [] },
  });
  for (const config of elsewhere) {
    kube.reads.length = 0;
    const result = await strict.run(run, metric(config));
    assert.equal(result.phase, 'Error', `${config.gate}: ${result.message}`);
    assert.match(
      result.message ?? '',
      /is in namespace other, outside namespace vm of AnalysisRun vm\/ro-abc-3; .*--allowed-namespaces=other/,
    );
    assert.deepEqual(
      kube.reads.filter((read) => read.includes('other')),
      [],
      `${config.gate}: nothing read in other`,
    );
  }
  const allowed = createGatesProvider({
    kube: () => kube,
    now: clock().now,
    allowance: { all: false, extra: ['other'] },
  });
  const result = await allowed.run(run, metric(elsewhere[0]));
  assert.equal(result.phase, 'Successful', result.message);
});

// ---- vmauthReloaded ----

test('vmauthReloaded: a load after an earlier reading proves itself even when stamped before `since`', async () => {
  const server = await agentServer();
  const page = (stamp: number) =>
    `vmauth_config_last_reload_successful 1\nvmauth_config_last_reload_success_timestamp_seconds ${stamp}\nprocess_start_time_seconds 1000\n`;
  const kube = new MemoryKube().put(readyPod('vm', 'vmauth-0', { app: 'vmauth' }, { http: server.port }));
  const time = clock();
  const provider = createGatesProvider({ kube: () => kube, now: time.now });
  const sinceSeconds = Date.UTC(2026, 4, 1, 12, 0, 0) / 1000 - 1;
  const config = metric({
    gate: 'vmauthReloaded',
    pods: { selector: 'app=vmauth' },
    since: new Date((sinceSeconds + 0.5) * 1000).toISOString(),
  });

  server.set(page(sinceSeconds - 30));
  const first = await provider.run(run, config);
  assert.equal(first.phase, 'Running', first.message);
  // vmauth loads the new config now; lib/fasttime stamps it with a second before `since`.
  server.set(page(sinceSeconds));
  time.advance(5_000);
  const second = await provider.resume(run, config, stored(first));
  assert.equal(second.phase, 'Successful', second.message);
  assert.equal(JSON.parse(second.value ?? '').pods[0].evidence, 'reloadAfterBaseline');

  const fresh = await provider.run(run, config);
  assert.equal(
    fresh.phase,
    'Running',
    'without an earlier reading, that stamp does not prove a load after `since`',
  );
});

test('vmauthReloaded does not pick one of several balancers: the config must name the pods and since', async () => {
  const several = specDocument.replace(
    'vmauth: {vmuser: vmauth-read}',
    'vmauth: [{vmuser: vmauth-read}, {vmuser: vmauth-local}]',
  );
  const kube = owned(new MemoryKube(), { 'vmzones.io/spec': several });
  const provider = createGatesProvider({ kube: () => kube, now: clock().now });
  const result = await provider.run(run, metric({ gate: 'vmauthReloaded' }));
  assert.equal(result.phase, 'Error');
  assert.match(
    result.message ?? '',
    /names 2 read balancers \(vmauth is a list\); this gate checks one vmauth: set pods.selector or vmauth, and since/,
  );
});

test('a gate config may place the objects it names in a registered cluster; cluster with nothing named, or unregistered, is an Error', async () => {
  const hub = new MemoryKube().put({
    ...secret('argo-rollouts', 'cluster-eu-b', {
      name: 'eu-b',
      server: 'https://eu-b.example:6443',
      config: JSON.stringify({ bearerToken: 'do-not-show' }),
    }),
    metadata: {
      name: 'cluster-eu-b',
      namespace: 'argo-rollouts',
      labels: { 'argocd.argoproj.io/secret-type': 'cluster' },
    },
  });
  const remote = new MemoryKube().put(
    vmcluster('vm-zone-b', 3, { updateStatus: 'operational', observedGeneration: 3 }),
  );
  const provider = createGatesProvider({
    kube: () => hub,
    clusters: () => clusterClients({ hub, namespace: 'argo-rollouts', connect: () => remote }),
    now: clock().now,
  });
  const there = await provider.run(
    run,
    metric({ gate: 'vmclusterReady', vmcluster: 'vm-zone-b', cluster: 'eu-b' }),
  );
  assert.equal(there.phase, 'Successful', there.message);
  assert.equal(JSON.parse(there.value ?? '{}').cluster, 'eu-b');
  const here = await provider.run(run, metric({ gate: 'vmclusterReady', vmcluster: 'vm-zone-b' }));
  assert.equal(here.phase, 'Error', 'without cluster: the hub, where vm-zone-b does not exist');

  const nothingNamed = await provider.run(
    run,
    metric({ gate: 'vmclusterReady', zone: 'zone-b', cluster: 'eu-b' }),
  );
  assert.equal(nothingNamed.phase, 'Error');
  assert.match(
    nothingNamed.message ?? '',
    /cluster: applies to the objects the config names \(vmcluster, vmsingle, vlcluster\)/,
  );
  const unknown = await provider.run(
    run,
    metric({ gate: 'vmclusterReady', vmcluster: 'vm-zone-b', cluster: 'eu-x' }),
  );
  assert.equal(unknown.phase, 'Error');
  assert.match(unknown.message ?? '', /eu-x/);
  assert.doesNotMatch(`${unknown.message}${there.message}${there.value}`, /do-not-show/);
});

test('vmclusterReady reads a VMSingle named in the config, and the message names its kind', async () => {
  const kube = new MemoryKube().put({
    apiVersion: vmApi,
    kind: 'VMSingle',
    metadata: { name: 'vm-b', namespace: 'vm', generation: 2 },
    status: { updateStatus: 'operational', observedGeneration: 2 },
  });
  const provider = createGatesProvider({ kube: () => kube, now: clock().now });
  const result = await provider.run(run, metric({ gate: 'vmclusterReady', vmsingle: 'vm-b' }));
  assert.equal(result.phase, 'Successful');
  assert.equal(result.message, 'VMSingle vm/vm-b is operational at generation 2');
  assert.equal((JSON.parse(result.value ?? '') as { kind: string }).kind, 'VMSingle');
});
