import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { KubeObject } from '../../../plugin/kube/objects.ts';
import { describePod, listSelectedPods } from '../../../plugin/vm/pods.ts';
import {
  explicitZoneQueue,
  remoteWriteUrlsFromPod,
  VmagentSpecError,
  zoneQueueOf,
} from '../../../plugin/vm/vmagent.ts';
import { zoneKinds } from '../../../plugin/vm/zone-kinds.ts';
import { MemoryKube, readyPod } from '../kube/memory-kube.ts';

function vmagent(urls: string[], spec: Record<string, unknown> = {}): KubeObject {
  return {
    metadata: { name: 'agent', namespace: 'vm' },
    spec: { remoteWrite: urls.map((url) => ({ url })), ...spec },
  };
}

const zoneA = 'http://vminsert-vm-zone-a.vm.svc:8480/insert/0/prometheus/api/v1/write';
const zoneB = 'http://vminsert-vm-zone-b.vm.svc.cluster.local:8480/insert/0/prometheus/api/v1/write';

test("finds the zone's queue by the vminsert Service its URL points at, 1-based", () => {
  const agent = vmagent([zoneA, zoneB, 'http://vminsert-vm-zone-c:8480/insert/0/prometheus']);
  assert.deepEqual(zoneQueueOf(agent, 'vm-zone-a', 'vm'), { index: 1, url: zoneA });
  assert.deepEqual(zoneQueueOf(agent, 'vm-zone-b', 'vm'), { index: 2, url: zoneB });
  assert.equal(
    zoneQueueOf(agent, 'vm-zone-c', 'vm').index,
    3,
    'a bare service name is in the agent namespace',
  );
});

test('a zone in another cluster is found by its vminsertHosts, not by a Service name', () => {
  const remote = 'http://127.0.0.2:18480/insert/0/prometheus/api/v1/write';
  const agent = vmagent([zoneA, remote, 'http://vminsert-vm-zone-b.vm.svc:8480/insert/0/prometheus']);
  assert.deepEqual(zoneQueueOf(agent, 'vm-zone-b', 'vm', zoneKinds.vmcluster, ['127.0.0.2']), {
    index: 2,
    url: remote,
  });
  assert.deepEqual(
    zoneQueueOf(agent, 'vm-zone-b', 'vm', zoneKinds.vmcluster, ['VMINSERT-B.example.com', '127.0.0.2']).index,
    2,
    'any of the hosts, case-insensitively',
  );
  assert.throws(
    () => zoneQueueOf(agent, 'vm-zone-b', 'vm', zoneKinds.vmcluster, ['127.0.0.3']),
    (error) =>
      error instanceof VmagentSpecError &&
      error.message.includes(
        'no spec.remoteWrite URL points at 127.0.0.3 (the vminsertHosts of VMCluster vm/vm-zone-b)',
      ),
  );
  assert.throws(
    () =>
      zoneQueueOf(vmagent([remote, `${remote}?x=1`]), 'vm-zone-b', 'vm', zoneKinds.vmcluster, ['127.0.0.2']),
    /2 spec.remoteWrite URLs point at 127.0.0.2/,
  );
});

test('a zone no URL points at, or several do, is an error listing the URLs without passwords', () => {
  const agent = vmagent([`http://user:hunter2@vminsert-vm-zone-a.other.svc:8480/x`, zoneB]);
  assert.throws(
    () => zoneQueueOf(agent, 'vm-zone-a', 'vm'),
    (error) =>
      error instanceof VmagentSpecError &&
      /no spec.remoteWrite URL points at vminsert-vm-zone-a.vm/.test(error.message) &&
      error.message.includes('1: http://***@vminsert-vm-zone-a.other.svc:8480/x') &&
      !error.message.includes('hunter2'),
  );
  assert.throws(
    () => zoneQueueOf(vmagent([zoneA, `${zoneA}?x=1`]), 'vm-zone-a', 'vm'),
    /2 spec.remoteWrite URLs/,
  );
  assert.throws(() => zoneQueueOf(vmagent([]), 'vm-zone-a', 'vm'), {
    code: 'VmagentSpecInvalid',
    message: /spec\.remoteWrite/,
  });
});

test('an explicit remoteWriteUrl or remoteWriteIndex must name an entry that exists', () => {
  const agent = vmagent([zoneA, zoneB]);
  assert.deepEqual(explicitZoneQueue(agent, { remoteWriteIndex: 2 }), { index: 2, url: zoneB });
  assert.deepEqual(explicitZoneQueue(agent, { remoteWriteUrl: zoneB }), { index: 2, url: zoneB });
  assert.throws(
    () => explicitZoneQueue(agent, { remoteWriteIndex: 3 }),
    /beyond its 2 spec.remoteWrite entries/,
  );
  assert.throws(
    () => explicitZoneQueue(agent, { remoteWriteIndex: 1, remoteWriteUrl: zoneB }),
    /not the configured/,
  );
});

test("reads the remote-write URLs a pod's process was started with: one comma-joined flag or repeated flags", () => {
  const pod = (args: string[]) => readyPod('vm', 'p', {}, { http: 8429 }, { args });
  assert.deepEqual(
    remoteWriteUrlsFromPod(pod(['-httpListenAddr=:8429', `-remoteWrite.url=${zoneA},${zoneB}`])),
    [zoneA, zoneB],
  );
  assert.deepEqual(remoteWriteUrlsFromPod(pod([`--remoteWrite.url=${zoneA}`, '-remoteWrite.url', zoneB])), [
    zoneA,
    zoneB,
  ]);
  assert.equal(remoteWriteUrlsFromPod(pod(['-httpListenAddr=:8429'])), undefined);
  assert.equal(
    remoteWriteUrlsFromPod(pod([`-remoteWrite.url="${zoneA}"`])),
    undefined,
    'quoting is not guessed',
  );
});

test('pods: not Ready, no IP or no such port are reported with the reason; finished pods are left out', async () => {
  const labels = { app: 'agent' };
  const kube = new MemoryKube()
    .put(readyPod('vm', 'b-ready', labels, { http: 8429 }))
    .put(readyPod('vm', 'a-starting', labels, { http: 8429 }, { ready: false, phase: 'Pending' }))
    .put(readyPod('vm', 'c-noport', labels, { metrics: 9000 }))
    .put(readyPod('vm', 'd-evicted', labels, { http: 8429 }, { phase: 'Failed', ready: false }))
    .put(readyPod('vm', 'other', { app: 'else' }, { http: 8429 }));
  const { active, finished } = await listSelectedPods(kube, 'vm', 'app=agent');
  assert.deepEqual(finished, ['vm/d-evicted']);
  const described = active.map((object) => describePod(object, 'http'));
  assert.deepEqual(
    described.map((pod) => [pod.key, pod.address ?? pod.problem]),
    [
      ['vm/a-starting', 'pod vm/a-starting is not Ready (phase Pending)'],
      ['vm/b-ready', '127.0.0.1:8429'],
      ['vm/c-noport', 'pod vm/c-noport has no container port named "http"'],
    ],
  );
  assert.equal(
    describePod(readyPod('vm', 'v6', labels, { http: 1 }, { ip: 'fd00::1' }), 'http').address,
    '[fd00::1]:1',
  );
  await assert.rejects(listSelectedPods(kube, 'vm', ' '), { code: 'PodSelectionInvalid' });
});

test('the queue of a VMSingle zone is the URL of its vmsingle Service', () => {
  const single = 'http://vmsingle-vm-b.vm.svc:8428/api/v1/write';
  const agent = vmagent([zoneA, single]);
  assert.deepEqual(zoneQueueOf(agent, 'vm-b', 'vm', zoneKinds.vmsingle), { index: 2, url: single });
  assert.throws(
    () => zoneQueueOf(agent, 'vm-zone-a', 'vm', zoneKinds.vmsingle),
    /vmsingle-vm-zone-a\.vm \(the write Service of VMSingle vm\/vm-zone-a\)/,
  );
});
