// Waiters share a read only when it began after their wait began, and only within one poll (issue 38: the zones
// of a wave waiting on one balancer).

import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ClusterRegistration } from '../../../plugin/kube/cluster-registration.ts';
import { KubeError, type KubeObjects } from '../../../plugin/kube/objects.ts';
import { readsSharedAfter, SharedReads, sharedReadWindowMs } from '../../../plugin/kube/shared-reads.ts';
import { FakeClock } from '../fake-clock.ts';
import { MemoryKube, secret } from '../kube/memory-kube.ts';

const ref = { apiVersion: 'v1', kind: 'Secret', namespace: 'vm', name: 'balancer' };

function setup() {
  const clock = new FakeClock();
  const shared = new SharedReads({ now: () => clock.now().getTime() });
  const kube = new MemoryKube().put(secret('vm', 'balancer', { config: 'v1' }));
  const gets = () => kube.reads.filter((read) => read === 'Secret vm/balancer').length;
  const configOf = async (view: KubeObjects) =>
    Buffer.from(((await view.get(ref)).data as { config: string }).config, 'base64').toString();
  return { clock, shared, kube, gets, configOf };
}

test('waiters whose waits began before a read share it within one poll', async () => {
  const { clock, shared, kube, gets, configOf } = setup();
  const waitsBegan = clock.now().getTime();
  const zones = Array.from({ length: 8 }, () => readsSharedAfter(kube, waitsBegan, shared));
  assert.deepEqual(await Promise.all(zones.map(configOf)), Array(8).fill('v1'));
  assert.equal(gets(), 1, 'eight waiters, one GET');
  clock.advance(sharedReadWindowMs);
  await configOf(zones[0] as KubeObjects);
  assert.equal(gets(), 1, 'still within the window');
  clock.advance(1);
  await Promise.all(zones.map(configOf));
  assert.equal(gets(), 2, 'past the window: read again, once');
});

test('a waiter whose wait began after a read began does not take it: it may not show its change', async () => {
  const { clock, shared, kube, gets, configOf } = setup();
  const early = readsSharedAfter(kube, clock.now().getTime(), shared);
  assert.equal(await configOf(early), 'v1');
  clock.advance(10);
  // Another zone writes, reads its write back, and begins to wait: the read above is older than its wait.
  kube.put(secret('vm', 'balancer', { config: 'v2' }));
  const late = readsSharedAfter(kube, clock.now().getTime(), shared);
  assert.equal(await configOf(late), 'v2');
  assert.equal(gets(), 2);
  // The earlier waiter may take the later read (it began after the earlier wait too).
  assert.equal(await configOf(early), 'v2');
  assert.equal(gets(), 2);
});

test('lists are shared per selector, each caller gets its own copy, a failed read is not shared', async () => {
  const { clock, shared, kube } = setup();
  kube.put({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'vmauth-0', namespace: 'vm', labels: { app: 'vmauth' } },
  });
  const lists = () => kube.reads.filter((read) => read.startsWith('list Pod')).length;
  const a = readsSharedAfter(kube, clock.now().getTime(), shared);
  const b = readsSharedAfter(kube, clock.now().getTime(), shared);
  const first = await a.list('v1', 'Pod', 'vm', 'app=vmauth');
  (first[0] as { metadata: { name?: string } }).metadata.name = 'changed by a';
  const second = await b.list('v1', 'Pod', 'vm', 'app=vmauth');
  assert.equal(second[0]?.metadata.name, 'vmauth-0');
  assert.equal(lists(), 1);
  await b.list('v1', 'Pod', 'vm', 'app=other');
  assert.equal(lists(), 2, 'another selector is another list');

  kube.failNext.set('Secret', new KubeError('unavailable', 'reading Secret vm/balancer: HTTP 503'));
  await assert.rejects(a.get(ref), /HTTP 503/);
  assert.equal((await b.get(ref)).metadata.name, 'balancer', 'the next waiter reads again');
});

test('the same name in another cluster is another read', async () => {
  const { clock, shared, kube, gets } = setup();
  const zone = new MemoryKube().put(secret('vm', 'balancer', { config: 'zone' }));
  const inZone: KubeObjects = {
    get: (r) => zone.get(r),
    list: (...args) => zone.list(...args),
    mergePatch: (...args) => zone.mergePatch(...args),
    create: (object) => zone.create(object),
    registration: { name: 'zone-b', server: 'https://zone-b.example:6443' } as ClusterRegistration,
  };
  const at = clock.now().getTime();
  await readsSharedAfter(kube, at, shared).get(ref);
  const fromZone = await readsSharedAfter(inZone, at, shared).get(ref);
  assert.equal(Buffer.from((fromZone.data as { config: string }).config, 'base64').toString(), 'zone');
  assert.equal(gets(), 1);
  assert.equal(zone.reads.length, 1);
});
