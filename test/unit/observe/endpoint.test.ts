// The observe endpoint over HTTP, in this process, with zone states listed from the in-memory Kubernetes double:
// what /metrics and /status say, that scrapes within the TTL share one listing, and that a failed listing
// leaves the zone metrics out instead of repeating an old answer.
import assert from 'node:assert/strict';
import type { Server } from 'node:http';
import { after, test } from 'node:test';
import { KubeError } from '../../../plugin/kube/objects.ts';
import { countedKube } from '../../../plugin/observe/kube-metrics.ts';
import { createMetrics, registerZoneMetrics } from '../../../plugin/observe/metrics.ts';
import { createObserveApp, listen } from '../../../plugin/observe/server.ts';
import { ZoneSnapshots } from '../../../plugin/observe/zone-snapshot.ts';
import { specAnnotation } from '../../../plugin/zones/spec.ts';
import { MemoryKube } from '../kube/memory-kube.ts';
import { rollout, vmcluster } from './zone-fixtures.ts';

const servers: Server[] = [];
after(() => {
  for (const server of servers) server.close();
});

async function serve(kube: MemoryKube, now: { ms: number }) {
  const metrics = createMetrics('step');
  const counted = countedKube(() => kube, metrics);
  const zones = new ZoneSnapshots(counted, { ttlMs: 10_000, now: () => now.ms });
  registerZoneMetrics(metrics.registry, zones);
  const app = await createObserveApp({ role: 'step', metrics, zones, startedAt: new Date() });
  const { server, port } = await listen(app, '127.0.0.1', 0);
  servers.push(server);
  const get = async (path: string) => {
    const response = await fetch(`http://127.0.0.1:${port}${path}`);
    return {
      status: response.status,
      type: response.headers.get('content-type') ?? '',
      text: await response.text(),
    };
  };
  return { get };
}

function sample(page: string, name: string, labels: Record<string, string>): number | undefined {
  for (const line of page.split('\n')) {
    if (!line.startsWith(`${name}{`)) continue;
    const all = Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`));
    if (all) return Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return undefined;
}

test('/metrics exports maintenance and state per zone from Kubernetes, with the role and process metrics', async () => {
  const kube = new MemoryKube()
    .put(rollout())
    .put(vmcluster('zone-a', { drained: true }))
    .put(vmcluster('zone-b'));
  const { get } = await serve(kube, { ms: Date.now() });
  const page = await get('/metrics');
  assert.equal(page.status, 200);
  assert.match(page.type, /^text\/plain; version=0\.0\.4/);
  const a = { namespace: 'vm', vmcluster: 'vm-zone-a', zone: 'zone-a', rollout: 'vm/walk', role: 'step' };
  const b = { ...a, vmcluster: 'vm-zone-b', zone: 'zone-b' };
  assert.equal(sample(page.text, 'vmzones_zone_maintenance', a), 1);
  assert.equal(sample(page.text, 'vmzones_zone_maintenance', b), 0);
  assert.equal(sample(page.text, 'vmzones_zone_state', { ...a, state: 'drained' }), 1);
  assert.equal(sample(page.text, 'vmzones_zone_state', { ...a, state: 'serving' }), 0);
  assert.equal(sample(page.text, 'vmzones_zone_state', { ...b, state: 'serving' }), 1);
  assert.equal(
    sample(page.text, 'vmzones_zone_state_since_timestamp_seconds', a),
    Date.parse('2026-12-01T10:00:00Z') / 1000,
  );
  assert.equal(sample(page.text, 'vmzones_zone_state_since_timestamp_seconds', b), undefined);
  assert.match(page.text, /\nvmzones_zone_snapshot_success\{role="step"\} 1\n/);
  assert.match(page.text, /\nprocess_resident_memory_bytes\{role="step"\} \d+/);
  assert.equal(
    sample(page.text, 'vmzones_kube_api_requests_total', { verb: 'list', resource: 'VMCluster' }),
    1,
  );
});

test('every zone kind is listed: a VMSingle zone is exported with its kind; a kind without CRD is no problem, one that may not be listed is named', async () => {
  const object = rollout({ zones: ['zone-a', 'zone-b'] });
  const template = object.spec as { template: { metadata: { annotations: Record<string, string> } } };
  const annotations = template.template.metadata.annotations;
  annotations[specAnnotation] = (annotations[specAnnotation] ?? '').replace(
    'zone-b: {vmcluster: vm-zone-b}',
    'zone-b: {vmsingle: vm-zone-b}',
  );
  const kube = new MemoryKube()
    .put(object)
    .put(vmcluster('zone-a'))
    .put({ ...vmcluster('zone-b', { drained: true }), kind: 'VMSingle' });
  kube.failNext.set(
    'VLCluster',
    new KubeError('notFound', 'the server could not find the requested resource', 404),
  );
  const { get } = await serve(kube, { ms: Date.now() });
  const page = await get('/metrics');
  const b = { kind: 'VMSingle', vmcluster: 'vm-zone-b', zone: 'zone-b' };
  assert.equal(sample(page.text, 'vmzones_zone_maintenance', b), 1);
  assert.equal(sample(page.text, 'vmzones_zone_state', { ...b, state: 'drained' }), 1);
  assert.equal(sample(page.text, 'vmzones_zone_maintenance', { kind: 'VMCluster', zone: 'zone-a' }), 0);
  assert.match(page.text, /\nvmzones_zone_snapshot_success\{role="step"\} 1\n/);
  for (const kind of ['Rollout', 'VMCluster', 'VMSingle', 'VLCluster'])
    assert.equal(kube.reads.filter((r) => r.startsWith(`list ${kind} `)).length, 1, kind);
  const healthy = JSON.parse((await get('/status')).text) as { problems: string[] };
  assert.deepEqual(healthy.problems, [], 'a zone kind whose CRD is not installed holds no zones');

  const denied = new MemoryKube().put(object).put(vmcluster('zone-a'));
  denied.failNext.set(
    'VMSingle',
    new KubeError('forbidden', 'listing VMSingle in all namespaces: HTTP 403', 403),
  );
  const other = await serve(denied, { ms: Date.now() });
  const partial = await other.get('/metrics');
  assert.match(partial.text, /\nvmzones_zone_snapshot_success\{role="step"\} 1\n/);
  assert.equal(sample(partial.text, 'vmzones_zone_maintenance', { kind: 'VMCluster', zone: 'zone-a' }), 0);
  const body = JSON.parse((await other.get('/status')).text) as {
    problems: string[];
    zones: { zone: string; state: string; reason: string }[];
  };
  assert.ok(
    body.problems.some((p) => p.startsWith('listing vmsingles: ') && p.includes('HTTP 403')),
    body.problems.join('; '),
  );
  assert.equal(body.zones.find((z) => z.zone === 'zone-b')?.state, 'unknown');
});

test('zones in registered clusters are listed there per watched namespace and labelled with their cluster; one that cannot be listed is unknown, named, out of maintenance', async () => {
  const object = rollout({ zones: ['zone-a', 'zone-b', 'zone-c'] });
  const template = object.spec as { template: { metadata: { annotations: Record<string, string> } } };
  template.template.metadata.annotations[specAnnotation] = [
    'vmauth: {vmuser: vmauth-read}',
    'vmagent: {vmagent: vmagent}',
    'zones:',
    '  zone-a: {vmcluster: vm-zone-a}',
    '  zone-b: {vmcluster: vm-zone-b, cluster: eu-b}',
    '  zone-c: {vmcluster: vm-zone-c, cluster: eu-c}',
  ].join('\n');
  // The hub also holds a VMCluster named vm-zone-b, without vmzones annotations: not zone-b (whose object lives in
  // eu-b), so not a zone at all.
  const hub = new MemoryKube().put(object).put(vmcluster('zone-a')).put(vmcluster('zone-b'));
  const euB = new MemoryKube().put(vmcluster('zone-b', { drained: true }));
  const listed: string[] = [];
  const recordingB = {
    ...euB,
    get: euB.get.bind(euB),
    mergePatch: euB.mergePatch.bind(euB),
    create: euB.create.bind(euB),
    list: (apiVersion: string, kind: string, namespace: string, selector?: string) => {
      listed.push(`${kind} in ${namespace === '' ? '(all)' : namespace}`);
      return euB.list(apiVersion, kind, namespace, selector);
    },
  };
  const metrics = createMetrics('step');
  const zones = new ZoneSnapshots(() => hub, {
    clusters: () => ({
      names: async () => ['eu-b', 'eu-c'],
      client: async (name) => {
        if (name === 'eu-b') return recordingB;
        throw new KubeError('unavailable', 'listing: connect ECONNREFUSED 10.0.0.3:6443');
      },
    }),
    namespaces: ['vm'],
  });
  registerZoneMetrics(metrics.registry, zones);
  const snapshot = await zones.get();
  assert.ok(snapshot.ok);
  assert.deepEqual(
    snapshot.zones.map((z) => [z.cluster, z.vmcluster, z.zone, z.state, z.maintenance]),
    [
      [undefined, 'vm-zone-a', 'zone-a', 'serving', false],
      ['eu-b', 'vm-zone-b', 'zone-b', 'drained', true],
      ['eu-c', 'vm-zone-c', 'zone-c', 'unknown', false],
    ],
  );
  assert.match(snapshot.zones[2]?.reason ?? '', /^cluster eu-c cannot be listed: .*ECONNREFUSED/);
  assert.ok(snapshot.problems.some((p) => p.startsWith('cluster eu-c: ')));
  assert.ok(listed.length > 0 && listed.every((l) => l.endsWith(' in vm')), listed.join(', '));
  const page = await metrics.registry.metrics();
  const b = { zone_cluster: 'eu-b', vmcluster: 'vm-zone-b', zone: 'zone-b' };
  assert.equal(sample(page, 'vmzones_zone_maintenance', b), 1);
  const zoneBSeries = page
    .split('\n')
    .filter((l) => l.startsWith('vmzones_zone_maintenance{') && l.includes('vmcluster="vm-zone-b"'));
  assert.equal(zoneBSeries.length, 1, `only eu-b's vm-zone-b, not the hub's: ${zoneBSeries.join(' | ')}`);
  assert.doesNotMatch(
    page.split('\n').find((l) => l.includes('vmcluster="vm-zone-a"')) ?? '',
    /zone_cluster/,
    "a zone in the controller's cluster carries no zone_cluster label",
  );
  assert.equal(sample(page, 'vmzones_zone_maintenance', { zone_cluster: 'eu-c', zone: 'zone-c' }), 0);
});

test('scrapes within the TTL share one listing; after it a new listing sees the change', async () => {
  const kube = new MemoryKube()
    .put(rollout())
    .put(vmcluster('zone-a', { drained: true }))
    .put(vmcluster('zone-b'));
  const now = { ms: Date.now() };
  const { get } = await serve(kube, now);
  await Promise.all([get('/metrics'), get('/metrics'), get('/status')]);
  assert.equal(kube.reads.filter((r) => r.startsWith('list VMCluster')).length, 1);
  kube.put(vmcluster('zone-a'));
  const cached = await get('/metrics');
  assert.equal(sample(cached.text, 'vmzones_zone_maintenance', { zone: 'zone-a' }), 1);
  now.ms += 10_000;
  const fresh = await get('/metrics');
  assert.equal(sample(fresh.text, 'vmzones_zone_maintenance', { zone: 'zone-a' }), 0);
  assert.equal(kube.reads.filter((r) => r.startsWith('list VMCluster')).length, 2);
});

test('a failed listing drops the zone series, says so, and counts the API error by kind', async () => {
  const kube = new MemoryKube().put(rollout()).put(vmcluster('zone-a', { drained: true }));
  const now = { ms: Date.now() };
  const { get } = await serve(kube, now);
  assert.equal(sample((await get('/metrics')).text, 'vmzones_zone_maintenance', { zone: 'zone-a' }), 1);
  now.ms += 10_000;
  kube.failNext.set(
    'VMCluster',
    new KubeError('forbidden', 'listing VMCluster in all namespaces: HTTP 403', 403),
  );
  const page = await get('/metrics');
  assert.equal(sample(page.text, 'vmzones_zone_maintenance', { zone: 'zone-a' }), undefined);
  assert.match(page.text, /\nvmzones_zone_snapshot_success\{role="step"\} 0\n/);
  assert.equal(
    sample(page.text, 'vmzones_kube_api_errors_total', {
      verb: 'list',
      resource: 'VMCluster',
      kind: 'forbidden',
    }),
    1,
  );
  const status = await get('/status');
  assert.equal(status.status, 503);
  const body = JSON.parse(status.text) as { kubernetes: { ok: boolean; error: string }; zones: unknown };
  assert.equal(body.kubernetes.ok, false);
  assert.match(body.kubernetes.error, /HTTP 403/);
  assert.equal(body.zones, null);
});

test('/status lists every zone with its state, lease and VMCluster status; /healthz answers; others are 404', async () => {
  const kube = new MemoryKube()
    .put(rollout())
    .put(
      vmcluster('zone-a', {
        drained: true,
        applied: { generation: 2 },
        generation: 2,
        observedGeneration: 1,
      }),
    )
    .put(vmcluster('zone-b'));
  const { get } = await serve(kube, { ms: Date.now() });
  const status = await get('/status');
  assert.equal(status.status, 200);
  const body = JSON.parse(status.text) as {
    role: string;
    zones: Record<string, unknown>[];
    problems: string[];
  };
  assert.equal(body.role, 'step');
  assert.deepEqual(body.problems, []);
  assert.deepEqual(
    body.zones.map((z) => [z.zone, z.state, z.maintenance]),
    [
      ['zone-a', 'applying', true],
      ['zone-b', 'serving', false],
    ],
  );
  assert.deepEqual(body.zones[0]?.vmclusterStatus, {
    state: 'progressing',
    generation: 2,
    observedGeneration: 1,
    updateStatus: 'operational',
  });
  assert.equal((body.zones[0]?.lease as { rollout: string } | undefined)?.rollout, 'vm/walk');
  assert.deepEqual(await get('/healthz'), { status: 200, type: 'text/plain; charset=utf-8', text: 'ok\n' });
  assert.equal((await get('/nope')).status, 404);
});
