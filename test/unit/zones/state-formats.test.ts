// The annotation formats vmzones writes, pinned as literal JSON text: a change of a field name, of its order, of
// a time's precision or of a default shows here as a diff, not only as a writer and a reader that drifted together
// (state.test.ts tests them against each other). And the records earlier builds wrote, as they wrote them (taken
// from the writers in git history: 4b11d32 wrote no `v`, a lease without zone or reads, a handoff naming one
// balancer as an object, a drain record without `servedBefore` and no reload baseline), must still be read and
// finished by this build. The steps and the reconciler run on the tests' clock (test/unit/fake-clock.ts), so every
// time below is exact: the walk starts at 2030-01-01T00:00:00Z and the balancer write waits 2 s for the reload
// stamp (plugin/vm/read-routing.ts).

import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { createGatesProvider } from '../../../plugin/gates/provider.ts';
import { hubOnly } from '../../../plugin/kube/cluster-registry.ts';
import type { RolloutView } from '../../../plugin/rollouts/types.ts';
import { drainRecordFor, readRouting } from '../../../plugin/vm/read-routing.ts';
import { zoneState } from '../../../plugin/zones/state/zone-annotations.ts';
import { readBalancerConfigs } from '../../../plugin/zones/step/target.ts';
import { FakeClock } from '../fake-clock.ts';
import { MemoryKube, readyPod, secret } from '../kube/memory-kube.ts';
import {
  ns,
  readsJson,
  rolloutObject,
  specDocument,
  startVmauthFixture,
  threeZones,
  untilSettled,
  zonePlugins,
} from './memory-cluster.ts';

/** A walk of zone-a by Rollout vm/walk (revision rev-r over stable rev-s) on a fresh fake clock. */
async function walk() {
  const clock = new FakeClock();
  const vmauth = await startVmauthFixture(clock);
  const kube = threeZones(vmauth.port);
  kube.put(rolloutObject('walk', { currentPodHash: 'rev-r', stableRS: 'rev-s', currentStepIndex: 0 }));
  const { plugin, reconciler } = zonePlugins(kube, hubOnly(kube), { clock });
  const step = async (action: string, operation: 'run' | 'abort' = 'run') => {
    const rollout = kube.getStored('Rollout', 'walk', 'argoproj.io/v1alpha1') as unknown as RolloutView;
    const result = await plugin[operation](rollout, {
      pluginName: 'vmzones/step',
      config: { zone: 'zone-a', action },
      status: undefined,
    });
    assert.equal(result.phase, 'Successful', result.message);
  };
  const annotations = (kind: string, name: string) => kube.getStored(kind, name).metadata.annotations ?? {};
  return { kube, reconciler, step, annotations, close: () => vmauth.close() };
}

test('drainReads writes the lease and maintenance mark on the VMCluster and the drain record, change time and reload baseline on the VMUser, as this JSON', async () => {
  const w = await walk();
  try {
    await w.step('drainReads');
    const cluster = w.annotations('VMCluster', 'vm-zone-a');
    assert.equal(
      cluster['vmzones.io/lease'],
      '{"v":1,"rollout":"vm/walk","uid":"uid-walk","revision":"rev-r","zone":"zone-a","object":{"kind":"VMCluster","namespace":"vm","name":"vm-zone-a","uid":"uid-vm-zone-a"},"since":"2030-01-01T00:00:00Z",' +
        // The zone's intent, stored once (state/zone-intent.ts): what is wanted, who moves next.
        `"wants":"drained","nextMove":"step","reads":${readsJson},"drainGracePeriod":"0s","vmagents":["vmagent"]}`,
    );
    assert.equal(
      cluster['vmzones.io/maintenance'],
      '{"v":1,"zone":"zone-a","since":"2030-01-01T00:00:00Z","reason":"drainReads by Rollout vm/walk (revision rev-r)"}',
    );
    const balancer = w.annotations('VMUser', 'vmauth-read');
    assert.equal(balancer['vmzones.io/reads-changed-at'], '2030-01-01T00:00:02.000Z');
    assert.equal(
      balancer['vmzones.io/reload-baseline'],
      '{"v":1,"at":"2030-01-01T00:00:02.000Z","pods":{"vm/vmauth-0":{"stamp":1893456000,"start":null}}}',
    );
    assert.equal(
      balancer['vmzones.io/drained'],
      // Keyed by the zone object's identity (cluster/kind/namespace/name) and naming its uid, lease holder and budget.
      '{"/VMCluster/vm/vm-zone-a":{"vmcluster":"vm/vm-zone-a","zone":"zone-a","uid":"uid-vm-zone-a",' +
        '"holder":{"rollout":"vm/walk","uid":"uid-walk"},"budget":{"maxZonesOut":1,"minZonesServing":1},' +
        '"by":"drainReads by Rollout vm/walk (revision rev-r)","at":"2030-01-01T00:00:02.000Z",' +
        '"removed":[{"op":"targetRef","index":0,"targetRef":{"crd":{"kind":"VMCluster/vmselect","name":"vm-zone-a","namespace":"vm"}}}],' +
        '"servedBefore":{"content":"79ef64f6b8175d64","pods":{"vm/vmauth-0":{"stamp":1893456000,"start":null}}}}}',
    );
  } finally {
    await w.close();
  }
});

test('apply writes the rollback record, and Abort the handoff and the requested rollback, as this JSON', async () => {
  const w = await walk();
  try {
    await w.step('drainReads');
    await w.step('apply');
    const rollback = (phase: string, requested: string) =>
      `{"v":1,"rollout":"vm/walk","uid":"uid-walk","revision":"rev-r","zone":"zone-a","object":{"kind":"VMCluster","namespace":"vm","name":"vm-zone-a","uid":"uid-vm-zone-a"},"phase":"${phase}","appliedAt":"2030-01-01T00:00:02Z","generation":2,` +
      '"changes":[{"path":["clusterVersion"],"before":"v1.151.0-cluster","after":"v1.152.0-cluster"}],"stableRevision":"rev-s",' +
      `"reads":${readsJson},"drainGracePeriod":"0s","vmagents":["vmagent"]${requested}}`;
    assert.equal(w.annotations('VMCluster', 'vm-zone-a')['vmzones.io/rollback'], rollback('applied', ''));
    const lease = (intent: string) =>
      '{"v":1,"rollout":"vm/walk","uid":"uid-walk","revision":"rev-r","zone":"zone-a","object":{"kind":"VMCluster","namespace":"vm","name":"vm-zone-a","uid":"uid-vm-zone-a"},"since":"2030-01-01T00:00:00Z",' +
      `${intent},"reads":${readsJson},"drainGracePeriod":"0s","vmagents":["vmagent"]}`;
    // apply stores what is wanted now in the lease, in the same write as the rollback record.
    assert.equal(
      w.annotations('VMCluster', 'vm-zone-a')['vmzones.io/lease'],
      lease('"wants":"changed","nextMove":"step"'),
    );

    await w.step('apply', 'abort');
    const cluster = w.kube.getStored('VMCluster', 'vm-zone-a');
    assert.equal(
      cluster.metadata.annotations?.['vmzones.io/rollback'],
      rollback('requested', ',"requestedAt":"2030-01-01T00:00:02Z"'),
    );
    assert.equal(
      cluster.metadata.annotations?.['vmzones.io/handoff'],
      '{"v":1,"zone":"zone-a",' +
        // The zone object the record was written on: a record copied onto another object is refused.
        '"object":{"kind":"VMCluster","namespace":"vm","name":"vm-zone-a","uid":"uid-vm-zone-a"},' +
        '"holder":{"rollout":"vm/walk","uid":"uid-walk","revision":"rev-r"},"requestedAt":"2030-01-01T00:00:02Z",' +
        `"by":"Abort of apply by Rollout vm/walk (revision rev-r)","rollback":true,"reads":${readsJson},"drainGracePeriod":"0s","vmagents":["vmagent"]}`,
    );
    // The hand-over moves the next move to the reconciler in the lease: one value says who moves next.
    assert.equal(
      cluster.metadata.annotations?.['vmzones.io/lease'],
      lease('"wants":"rolledBack","nextMove":"reconciler"'),
    );
    assert.deepEqual(cluster.metadata.labels, {
      'vmzones.io/maintenance': 'true',
      'vmzones.io/pending': 'true',
    });
  } finally {
    await w.close();
  }
});

/** What the build of 4b11d32 wrote after an Abort of zone-a's apply: no `v`, a lease without zone or reads, the
 *  handoff's balancer as an object, a drain record without servedBefore, no reload baseline. */
const olderRecords = {
  lease: '{"rollout":"vm/walk","uid":"uid-walk","revision":"rev-r","since":"2029-12-31T23:50:00Z"}',
  maintenance:
    '{"zone":"zone-a","since":"2029-12-31T23:50:00Z","reason":"drainReads by Rollout vm/walk (revision rev-r)"}',
  rollback:
    '{"rollout":"vm/walk","uid":"uid-walk","revision":"rev-r","zone":"zone-a","phase":"requested","appliedAt":"2029-12-31T23:51:00Z","generation":2,' +
    '"changes":[{"path":["clusterVersion"],"before":"v1.151.0-cluster","after":"v1.152.0-cluster"}],"requestedAt":"2029-12-31T23:52:00Z"}',
  handoff:
    '{"zone":"zone-a","holder":{"rollout":"vm/walk","uid":"uid-walk","revision":"rev-r"},"requestedAt":"2029-12-31T23:52:00Z",' +
    `"by":"Abort of apply by Rollout vm/walk (revision rev-r)","rollback":true,"reads":${readsJson},"drainGracePeriod":"0s"}`,
  drained:
    '{"zone-a":{"vmcluster":"vm/vm-zone-a","by":"drainReads by Rollout vm/walk (revision rev-r)","at":"2029-12-31T23:50:01.000Z",' +
    '"removed":[{"op":"targetRef","index":0,"targetRef":{"crd":{"kind":"VMCluster/vmselect","name":"vm-zone-a","namespace":"vm"}}}]}}',
  readsChangedAt: '2029-12-31T23:50:01.000Z',
};

test('records written by an earlier build are read, and the reconciler finishes the zone from them', async () => {
  const w = await walk();
  try {
    const cluster = w.kube.getStored('VMCluster', 'vm-zone-a');
    w.kube.put({
      ...cluster,
      apiVersion: 'operator.victoriametrics.com/v1beta1',
      kind: 'VMCluster',
      metadata: {
        ...cluster.metadata,
        generation: 2,
        labels: { 'vmzones.io/maintenance': 'true', 'vmzones.io/pending': 'true' },
        annotations: {
          'vmzones.io/lease': olderRecords.lease,
          'vmzones.io/maintenance': olderRecords.maintenance,
          'vmzones.io/rollback': olderRecords.rollback,
          'vmzones.io/handoff': olderRecords.handoff,
        },
      },
      spec: { ...cluster.spec, clusterVersion: 'v1.152.0-cluster' },
      status: { updateStatus: 'operational', observedGeneration: 2 },
    });
    const vmuser = w.kube.getStored('VMUser', 'vmauth-read');
    w.kube.put({
      ...vmuser,
      apiVersion: 'operator.victoriametrics.com/v1beta1',
      kind: 'VMUser',
      metadata: {
        ...vmuser.metadata,
        annotations: {
          'vmzones.io/drained': olderRecords.drained,
          'vmzones.io/reads-changed-at': olderRecords.readsChangedAt,
        },
      },
      spec: {
        targetRefs: ['zone-b', 'zone-c'].map((z) => ({
          crd: { kind: 'VMCluster/vmselect', name: `vm-${z}`, namespace: ns },
        })),
      },
    });
    w.kube.setStatus('Rollout', 'walk', { abort: true });

    const state = zoneState(w.kube.getStored('VMCluster', 'vm-zone-a'));
    assert.deepEqual(state.lease, {
      rollout: 'vm/walk',
      uid: 'uid-walk',
      revision: 'rev-r',
      since: '2029-12-31T23:50:00Z',
    });
    assert.equal(state.maintenance?.reason, 'drainReads by Rollout vm/walk (revision rev-r)');
    assert.equal(state.rollback?.phase, 'requested');
    assert.equal(state.rollback?.reads, undefined);
    assert.deepEqual(state.handoff?.reads, JSON.parse(readsJson));
    const [config] = readBalancerConfigs(JSON.parse(specDocument()) as never, ns);
    assert.ok(config !== undefined);
    const routing = await readRouting(w.kube, config);
    assert.deepEqual(routing.routed, ['zone-b', 'zone-c']);
    assert.equal(drainRecordFor(routing, config, 'zone-a')?.servedBefore, undefined);
    assert.equal(routing.baseline, undefined);
    assert.equal(routing.changedAt?.toISOString(), '2029-12-31T23:50:01.000Z');

    const progress = await untilSettled(w.reconciler);
    assert.deepEqual(progress, { 'vm/vm-zone-a': 'done' });
    const after = w.kube.getStored('VMCluster', 'vm-zone-a');
    assert.equal(
      after.spec?.clusterVersion,
      'v1.151.0-cluster',
      'rolled back from the older rollback record',
    );
    assert.deepEqual(after.metadata.annotations ?? {}, {}, 'released: no vmzones record left');
    assert.deepEqual((await readRouting(w.kube, config)).routed, ['zone-a', 'zone-b', 'zone-c']);
  } finally {
    await w.close();
  }
});

test('a drain record that an earlier build kept in a Secret annotation is still read', async () => {
  const kube = new MemoryKube();
  const config = {
    ref: { kind: 'Secret' as const, namespace: ns, name: 'vmauth-config', key: 'auth.yml' },
    pods: [{ namespace: ns, labelSelector: 'app=vmauth', port: 'http' }],
    zones: (
      JSON.parse(readsJson) as {
        zones: { zone: string; namespace: string; vmcluster: string; hosts: string[] }[];
      }
    ).zones,
    reloadEvidence: 'required' as const,
  };
  const stored = secret(ns, 'vmauth-config', {
    'auth.yml':
      'unauthorized_user:\n  url_prefix:\n    - http://vmselect-vm-zone-b.vm.svc:8481/select/0/prometheus\n    - http://vmselect-vm-zone-c.vm.svc:8481/select/0/prometheus\n',
  });
  kube.put({
    ...stored,
    metadata: {
      ...stored.metadata,
      annotations: {
        'vmzones.io/drained':
          '{"zone-a":{"vmcluster":"vm/vm-zone-a","by":"drainReads by Rollout vm/walk (revision rev-r)","at":"2029-12-31T23:50:01.000Z",' +
          '"removed":[{"path":["unauthorized_user","url_prefix"],"index":0,"url":"http://vmselect-vm-zone-a.vm.svc:8481/select/0/prometheus",' +
          '"style":"block","text":"    - http://vmselect-vm-zone-a.vm.svc:8481/select/0/prometheus\\n"}]}}',
      },
    },
  });
  const routing = await readRouting(kube, config);
  assert.deepEqual(routing.routed, ['zone-b', 'zone-c']);
  assert.equal(
    drainRecordFor(routing, config, 'zone-a')?.by,
    'drainReads by Rollout vm/walk (revision rev-r)',
  );
});

/** The vmagent page of the gate test: zone-a's queue (1) holds 4096 bytes on disk, zone-b's (2) is empty. */
const vmagentPage = [
  'vm_app_version{version="vmagent-v1.151.0",short_version="v1.151.0"} 1',
  'vmagent_remotewrite_pending_data_bytes{path="/vmagent-remotewrite-data/persistent-queue/1_9222259EFD462BAE", url="1:secret-url"} 4096',
  'vm_persistentqueue_bytes_pending{path="/vmagent-remotewrite-data/persistent-queue/1_9222259EFD462BAE"} 4096',
  'vmagent_remotewrite_requests_total{url="1:secret-url", status_code="2XX"} 100',
  'vmagent_remotewrite_bytes_sent_total{url="1:secret-url"} 10000',
  'vmagent_remotewrite_retries_count_total{url="1:secret-url"} 3',
  'vmagent_remotewrite_errors_total{url="1:secret-url"} 0',
  'vmagent_remotewrite_packets_dropped_total{url="1:secret-url"} 0',
  'vm_persistentqueue_bytes_dropped_total{path="/vmagent-remotewrite-data/persistent-queue/1_9222259EFD462BAE"} 0',
  'vm_persistentqueue_blocks_dropped_total{path="/vmagent-remotewrite-data/persistent-queue/1_9222259EFD462BAE"} 0',
  'vm_persistentqueue_bytes_pending{path="/vmagent-remotewrite-data/persistent-queue/2_29ACE66218BD2C9C"} 0',
  'vmagent_remotewrite_pending_data_bytes{path="/vmagent-remotewrite-data/persistent-queue/2_29ACE66218BD2C9C", url="2:secret-url"} 0',
  'vmagent_remotewrite_requests_total{url="2:secret-url", status_code="2XX"} 5',
  '',
].join('\n');

test('the vmagentQueueDrained gate keeps its readings in the measurement metadata as this JSON', async () => {
  const zoneA = 'http://vminsert-vm-zone-a.vm.svc:8480/insert/0/prometheus/api/v1/write';
  const zoneB = 'http://vminsert-vm-zone-b.vm.svc:8480/insert/0/prometheus/api/v1/write';
  const server = createServer((_request, response) => response.end(vmagentPage));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const port = (server.address() as AddressInfo).port;
    const vmApi = 'operator.victoriametrics.com/v1beta1';
    const kube = new MemoryKube()
      .put({
        apiVersion: 'argoproj.io/v1alpha1',
        kind: 'AnalysisRun',
        metadata: {
          name: 'walk-abc-3',
          namespace: ns,
          ownerReferences: [
            {
              apiVersion: 'argoproj.io/v1alpha1',
              kind: 'Rollout',
              name: 'walk',
              uid: 'uid-walk',
              controller: true,
            },
          ],
        },
      })
      .put(rolloutObject('walk', { currentPodHash: 'rev-r', stableRS: 'rev-s' }))
      .put({
        apiVersion: vmApi,
        kind: 'VMCluster',
        metadata: { name: 'vm-zone-a', namespace: ns, generation: 2 },
        status: { updateStatus: 'operational', observedGeneration: 2 },
      })
      .put({
        apiVersion: vmApi,
        kind: 'VMAgent',
        metadata: { name: 'vmagent', namespace: ns },
        spec: { replicaCount: 1, remoteWrite: [{ url: zoneA }, { url: zoneB }] },
      })
      .put(
        readyPod(
          ns,
          'vmagent-0',
          {
            'app.kubernetes.io/name': 'vmagent',
            'app.kubernetes.io/instance': 'vmagent',
            'app.kubernetes.io/component': 'monitoring',
            'managed-by': 'vm-operator',
          },
          { http: port },
          { args: [`-remoteWrite.url=${zoneA},${zoneB}`] },
        ),
      );
    const provider = createGatesProvider({ kube: () => kube, now: () => Date.parse('2030-01-01T00:00:00Z') });
    const run = { metadata: { name: 'walk-abc-3', namespace: ns }, spec: {}, status: {} };
    const metric = {
      name: 'queue',
      provider: { plugin: { 'vmzones/gates': { gate: 'vmagentQueueDrained', zone: 'zone-a' } } },
    };
    const measurement = await provider.run(run, metric);
    assert.equal(measurement.phase, 'Running', measurement.message);
    assert.deepEqual(measurement.metadata, {
      'vmzones.io/started-at': '2030-01-01T00:00:00.000Z',
      'vmzones.io/readings': '1',
      'vmzones.io/gate': 'vmagentQueueDrained',
      'vmzones.io/deadline': '2030-01-01T00:30:00.000Z',
      'vmzones.io/state':
        '{"v":1,"agents":{"vmagent":{"index":1,"listDigest":"a0bfde57e9d2318e"}},' +
        '"baselineDirs":{"vm/vmagent-0":["1_9222259EFD462BAE","2_29ACE66218BD2C9C"]},"zoneReadySince":1893456000000,' +
        '"rounds":[{"at":1893456000000,"zoneReady":true,"agents":{"vmagent":[{"pod":"vm/vmagent-0","ok":true,"queue":{' +
        '"figures":{"pendingDataBytes":4096,"onDiskPendingBytes":4096,"requests":100,"bytesSent":10000,"retries":3,"errors":0,"packetsDropped":0,"onDiskBytesDropped":0,"onDiskBlocksDropped":0},' +
        '"queuePaths":["/vmagent-remotewrite-data/persistent-queue/1_9222259EFD462BAE"],"missing":[],"problems":[],' +
        '"allQueueDirNames":["1_9222259EFD462BAE","2_29ACE66218BD2C9C"]}}]}}]}',
    });
    // The reader takes that text back as the controller stores it (times to the second) and adds the next round.
    const next = await provider.resume(run, metric, {
      phase: 'Running',
      startedAt: '2030-01-01T00:00:00Z',
      metadata: measurement.metadata,
    });
    assert.equal(next.phase, 'Running', next.message);
    assert.equal(next.metadata?.['vmzones.io/readings'], '2');
    assert.equal(JSON.parse(next.metadata?.['vmzones.io/state'] ?? '{}').rounds.length, 2);
  } finally {
    await new Promise((resolve) => server.close(resolve));
  }
});
