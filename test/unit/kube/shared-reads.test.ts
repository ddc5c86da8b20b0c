// A waiter takes a read made by another only when it began after the waiter's previous poll ended (issue 38: the
// zones of a wave waiting on one balancer share their polls' reads, none older than its own would be).

import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ClusterRegistration } from '../../../plugin/kube/cluster-registration.ts';
import { KubeError, type KubeObjects } from '../../../plugin/kube/objects.ts';
import { readsSharedAfter, SharedReads } from '../../../plugin/kube/shared-reads.ts';
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
  /** A waiter polling through `shared`: each poll takes reads begun after its previous poll ended. */
  const waiter = () => {
    let mark = shared.mark();
    return async () => {
      const config = await configOf(readsSharedAfter(kube, mark, shared));
      mark = shared.mark();
      return config;
    };
  };
  return { clock, shared, kube, gets, configOf, waiter };
}

test('the waiters of a wave share one read per poll', async () => {
  const { gets, waiter } = setup();
  const zones = Array.from({ length: 8 }, waiter);
  assert.deepEqual(await Promise.all(zones.map((poll) => poll())), Array(8).fill('v1'));
  assert.equal(gets(), 1, 'eight waiters, one GET');
  assert.deepEqual(await Promise.all(zones.map((poll) => poll())), Array(8).fill('v1'));
  assert.equal(gets(), 2, 'their next polls: one more GET');
});

test("a waiter's next poll never takes its own previous read: it reads again", async () => {
  const { kube, gets, waiter } = setup();
  const poll = waiter();
  assert.equal(await poll(), 'v1');
  kube.put(secret('vm', 'balancer', { config: 'v2' }));
  assert.equal(await poll(), 'v2');
  assert.equal(gets(), 2);
});

test('a read begun before a waiter began to wait (before its write) is not taken', async () => {
  const { shared, kube, gets, configOf, waiter } = setup();
  const early = readsSharedAfter(kube, shared.mark(), shared);
  assert.equal(await configOf(early), 'v1');
  // Another zone writes, reads its write back and begins to wait: the read above began before.
  kube.put(secret('vm', 'balancer', { config: 'v2' }));
  const late = waiter();
  assert.equal(await late(), 'v2');
  assert.equal(gets(), 2);
});

test('lists are shared per selector, each caller gets its own copy, a failed read is not shared', async () => {
  const { shared, kube } = setup();
  kube.put({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'vmauth-0', namespace: 'vm', labels: { app: 'vmauth' } },
  });
  const lists = () => kube.reads.filter((read) => read.startsWith('list Pod')).length;
  const mark = shared.mark();
  const a = readsSharedAfter(kube, mark, shared);
  const b = readsSharedAfter(kube, mark, shared);
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

test('an answer is kept for waiters no longer than the window (memory), and per cluster', async () => {
  const { clock, shared, kube, gets } = setup();
  const mark = shared.mark();
  await readsSharedAfter(kube, mark, shared).get(ref);
  clock.advance(5_001);
  await readsSharedAfter(kube, mark, shared).get(ref);
  assert.equal(gets(), 2);

  const zone = new MemoryKube().put(secret('vm', 'balancer', { config: 'zone' }));
  const inZone: KubeObjects = {
    get: (r) => zone.get(r),
    list: (...args) => zone.list(...args),
    mergePatch: (...args) => zone.mergePatch(...args),
    create: (object) => zone.create(object),
    registration: { name: 'zone-b', server: 'https://zone-b.example:6443' } as ClusterRegistration,
  };
  const fromZone = await readsSharedAfter(inZone, mark, shared).get(ref);
  assert.equal(Buffer.from((fromZone.data as { config: string }).config, 'base64').toString(), 'zone');
  assert.equal(zone.reads.length, 1);
});
