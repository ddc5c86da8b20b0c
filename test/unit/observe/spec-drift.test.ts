// "Drifted from the stable spec": a serving zone whose object does not carry what the Rollout's stable revision
// says, because no step of that revision ran for it (a Rollout created over running zones, `promote --full` past
// the zone, a Rollout deleted and created again). One decision (plugin/observe/zone-states.ts, over
// plugin/zones/spec-drift.ts) read by `vmzones status` (table and JSON), /status and the metric
// vmzones_zone_drifted. Objects live in the in-memory API double; the oracle is the objects' fields, set here.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { stringify } from 'yaml';
import { readStatus } from '../../../plugin/cli/status.ts';
import { formatStatusTable } from '../../../plugin/cli/status-table.ts';
import type { KubeObject } from '../../../plugin/kube/objects.ts';
import { createMetrics, registerZoneMetrics } from '../../../plugin/observe/metrics.ts';
import { ZoneSnapshots } from '../../../plugin/observe/zone-snapshot.ts';
import { renderSteps } from '../../../plugin/zones/render.ts';
import { parseSpecDocument } from '../../../plugin/zones/spec.ts';
import { MemoryKube } from '../kube/memory-kube.ts';

type ApiObject = KubeObject & { apiVersion: string; kind: string };

const specDocument = {
  namespace: 'vm',
  overrideSpec: { clusterVersion: 'v1.110.0', vmselect: { extraArgs: { 'search.maxQueryLen': null } } },
  vmauth: { vmuser: 'vmauth-read' },
  vmagent: { vmagent: 'vmagent' },
  zones: { 'zone-a': { vmcluster: 'vm-zone-a' }, 'zone-b': { vmcluster: 'vm-zone-b' } },
};
const steps = renderSteps(parseSpecDocument(stringify(specDocument)), { pauseBetweenZones: 'none' });

interface RolloutAt {
  currentPodHash: string;
  stableRS: string;
  currentStepIndex: number;
  phase: string;
  abort?: boolean;
  observedGeneration?: number;
}

function rollout(at: RolloutAt): ApiObject {
  return {
    apiVersion: 'argoproj.io/v1alpha1',
    kind: 'Rollout',
    metadata: { name: 'walk', namespace: 'vm', uid: 'uid-walk', generation: 1 },
    spec: {
      template: { metadata: { annotations: { 'vmzones.io/spec': stringify(specDocument) } } },
      strategy: { canary: { steps } },
    },
    status: { observedGeneration: at.observedGeneration ?? 1, canary: { stepPluginStatuses: [] }, ...at },
  };
}

/** The Rollout's first revision: Healthy at once, its steps never ran (the controller runs none for it). */
const firstRevision: RolloutAt = {
  currentPodHash: 'rev1',
  stableRS: 'rev1',
  currentStepIndex: steps.length,
  phase: 'Healthy',
};

function vmcluster(name: string, spec: Record<string, unknown>, annotations: Record<string, string> = {}) {
  return {
    apiVersion: 'operator.victoriametrics.com/v1beta1',
    kind: 'VMCluster',
    metadata: { name, namespace: 'vm', generation: 2, annotations },
    spec,
    status: { updateStatus: 'operational', observedGeneration: 2 },
  };
}

const carried = { clusterVersion: 'v1.110.0', vmselect: { replicaCount: 2 } };
const older = {
  clusterVersion: 'v1.102.0',
  vmselect: { replicaCount: 2, extraArgs: { 'search.maxQueryLen': '1MB' } },
};

function cluster(
  rolloutAt: RolloutAt,
  zoneA: Record<string, unknown>,
  zoneB: Record<string, unknown>,
): MemoryKube {
  return new MemoryKube()
    .put(rollout(rolloutAt))
    .put(vmcluster('vm-zone-a', zoneA))
    .put(vmcluster('vm-zone-b', zoneB))
    .put({
      apiVersion: 'operator.victoriametrics.com/v1beta1',
      kind: 'VMUser',
      metadata: { name: 'vmauth-read', namespace: 'vm' },
      spec: { targetRefs: [] },
    });
}

function sample(page: string, name: string, zone: string): number | undefined {
  const line = page.split('\n').find((l) => l.startsWith(`${name}{`) && l.includes(`zone="${zone}"`));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
}

async function driftedMetric(kube: MemoryKube): Promise<Record<string, number | undefined>> {
  const metrics = createMetrics('step');
  registerZoneMetrics(metrics.registry, new ZoneSnapshots(() => kube));
  const page = await metrics.registry.metrics();
  return {
    'zone-a': sample(page, 'vmzones_zone_drifted', 'zone-a'),
    'zone-b': sample(page, 'vmzones_zone_drifted', 'zone-b'),
  };
}

test('a Rollout created over running zones: the zone without its spec is drifted in status, /status and the metric', async () => {
  const kube = cluster(firstRevision, older, carried);
  const status = await readStatus(kube, 'vm', 'walk');
  const [a, b] = status.zones;
  assert.equal(a?.state, 'serving', 'drift is no state of the walk: the zone serves reads');
  assert.deepEqual(a?.drift, {
    rollout: 'vm/walk',
    revision: 'rev1',
    fields: ['spec.clusterVersion', 'spec.vmselect.extraArgs.search.maxQueryLen'],
  });
  assert.equal(b?.drift, undefined, 'zone-b carries the spec');
  const table = formatStatusTable(status, { now: new Date('2026-12-01T10:00:00Z') });
  assert.match(
    table,
    /^-- +zone-a .*serving .*drifted from the stable spec of Rollout vm\/walk \(revision rev1\): spec\.clusterVersion, spec\.vmselect\.extraArgs\.search\.maxQueryLen not as its spec document says; .*a new revision walks the zone/m,
  );
  assert.doesNotMatch(table.split('\n').find((l) => l.includes('zone-b')) ?? '', /drifted/);

  const snapshot = await new ZoneSnapshots(() => kube).get();
  assert.ok(snapshot.ok);
  assert.deepEqual(
    snapshot.zones.map((z) => [z.zone, z.maintenance, z.drift?.fields.length ?? 0]),
    [
      ['zone-a', false, 2],
      ['zone-b', false, 0],
    ],
  );
  assert.deepEqual(await driftedMetric(kube), { 'zone-a': 1, 'zone-b': 0 });
});

test('promote --full past zone-b: zone-b, whose steps never ran, is drifted; zone-a, walked, is not', async () => {
  const kube = cluster(
    { currentPodHash: 'rev2', stableRS: 'rev2', currentStepIndex: steps.length, phase: 'Healthy' },
    carried,
    older,
  );
  const status = await readStatus(kube, 'vm', 'walk');
  assert.deepEqual(
    status.zones.map((z) => [z.zone, z.drift?.fields]),
    [
      ['zone-a', undefined],
      ['zone-b', ['spec.clusterVersion', 'spec.vmselect.extraArgs.search.maxQueryLen']],
    ],
  );
  assert.deepEqual(await driftedMetric(kube), { 'zone-a': 0, 'zone-b': 1 });
});

test('mid-walk, aborted, or a spec the controller has not seen yet: no zone is judged against the new revision', async () => {
  const unsettled: RolloutAt[] = [
    { currentPodHash: 'rev2', stableRS: 'rev1', currentStepIndex: 2, phase: 'Progressing' },
    { currentPodHash: 'rev2', stableRS: 'rev1', currentStepIndex: 0, phase: 'Degraded', abort: true },
    { ...firstRevision, observedGeneration: 0 },
  ];
  for (const at of unsettled) {
    const kube = cluster(at, older, older);
    const status = await readStatus(kube, 'vm', 'walk');
    assert.deepEqual(
      status.zones.map((z) => z.drift),
      [undefined, undefined],
      JSON.stringify(at),
    );
    assert.deepEqual(await driftedMetric(kube), { 'zone-a': 0, 'zone-b': 0 }, JSON.stringify(at));
  }
});

test('a zone in maintenance (held by a walk) is never called drifted, whatever its spec', async () => {
  const held = {
    'vmzones.io/lease': JSON.stringify({
      v: 1,
      rollout: 'vm/walk',
      uid: 'uid-walk',
      revision: 'rev1',
      since: '2026-12-01T10:00:00Z',
      zone: 'zone-a',
    }),
    'vmzones.io/maintenance': JSON.stringify({
      v: 1,
      zone: 'zone-a',
      since: '2026-12-01T10:00:00Z',
      reason: 'Rollout vm/walk (revision rev1) walks zone zone-a',
    }),
  };
  const kube = cluster(firstRevision, older, older);
  kube.put(vmcluster('vm-zone-a', older, held));
  const status = await readStatus(kube, 'vm', 'walk');
  assert.equal(status.zones[0]?.state, 'drained');
  assert.equal(status.zones[0]?.drift, undefined);
  assert.deepEqual(status.zones[1]?.drift?.fields, [
    'spec.clusterVersion',
    'spec.vmselect.extraArgs.search.maxQueryLen',
  ]);
});
