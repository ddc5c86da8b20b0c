// Waits for one object to change (plugin/kube/watch-cache.ts changeOf, watched-objects.ts): what wakes a step's
// in-call wait instead of polling the API server (docs/scale.md).

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { WatchCache } from '../../../plugin/kube/watch-cache.ts';
import { watchedObjects } from '../../../plugin/kube/watched-objects.ts';
import { MemoryKube } from './memory-kube.ts';
import { cluster, kind, kubeConfig, lister, ScriptedWatch } from './scripted-watch.ts';

const settled = async <T>(promise: Promise<T>): Promise<boolean> => {
  let done = false;
  void promise.then(() => {
    done = true;
  });
  await new Promise((resolve) => setImmediate(resolve));
  return done;
};

async function started(items = [cluster('a', '5'), cluster('b', '6')]) {
  const watch = new ScriptedWatch();
  const { list } = lister([{ rv: '10', items }]);
  const cache = new WatchCache({ kubeConfig: kubeConfig(), kind, namespace: 'vm', list, watch });
  const synced = cache.start();
  const w = await watch.opens(1);
  await synced;
  return { cache, w };
}

test('changeOf resolves on an event for that object only, and not while the copy holds what the caller read', async () => {
  const { cache, w } = await started();
  const change = cache.changeOf('vm', 'a', '5');
  assert.equal(await settled(change.changed), false, 'the copy holds a at 5, as the caller read it');
  w.send('MODIFIED', cluster('b', '11'));
  assert.equal(await settled(change.changed), false, 'another object changed');
  w.send('MODIFIED', cluster('a', '12'));
  assert.equal(await settled(change.changed), true);
  assert.equal(cache.waiting, 0, 'a resolved wait leaves no listener behind');
  await cache.stop();
});

test('changeOf resolves at once when the copy holds another version than the caller read, and on a delete', async () => {
  const { cache, w } = await started();
  assert.equal(await settled(cache.changeOf('vm', 'a', '4').changed), true, 'the copy is at 5');
  const gone = cache.changeOf('vm', 'b', '6');
  w.send('DELETED', cluster('b', '13'));
  assert.equal(await settled(gone.changed), true);
  const cancelled = cache.changeOf('vm', 'a', '5');
  cancelled.cancel();
  assert.equal(cache.waiting, 0, 'a cancelled wait leaves no listener behind');
  await cache.stop();
});

test('metadata-only caches keep no spec and answer no reads; changeOf is undefined where no fresh cache watches', async () => {
  const watch = new ScriptedWatch();
  const vmuser = { apiVersion: 'operator.victoriametrics.com/v1beta1', kind: 'VMUser', plural: 'vmusers' };
  const secretUser = {
    apiVersion: vmuser.apiVersion,
    kind: vmuser.kind,
    metadata: { name: 'reader', namespace: 'vm', resourceVersion: '7' },
    spec: { password: 'not-to-be-kept' },
  };
  const live = new MemoryKube().put(secretUser);
  const { list } = lister([{ rv: '10', items: [secretUser] }]);
  const view = watchedObjects(live, {
    kubeConfig: kubeConfig(),
    kinds: [],
    changeKinds: [vmuser],
    namespaces: ['vm'],
    cache: (k, n, metadataOnly) =>
      new WatchCache({ kubeConfig: kubeConfig(), kind: k, namespace: n, list, watch, metadataOnly }),
  });
  const ref = { apiVersion: vmuser.apiVersion, kind: 'VMUser', namespace: 'vm', name: 'reader' };
  assert.equal(view.changeOf(ref, '7'), undefined, 'not listed yet: the caller polls');
  const synced = view.start();
  const w = await watch.opens(1);
  await synced;
  const cached = view.caches[0]?.get('vm', 'reader');
  assert.equal(cached?.spec, undefined, 'no spec (no password) in a metadata-only cache');
  assert.equal(cached?.metadata.resourceVersion, '7');
  live.reads.length = 0;
  assert.equal(
    (await view.kube.get(ref)).spec?.password,
    'not-to-be-kept',
    'reads still go to the API server',
  );
  assert.equal(live.reads.length, 1);
  const change = view.changeOf(ref, '7');
  assert.ok(change);
  assert.equal(view.changeOf({ ...ref, namespace: 'other' }, '7'), undefined, 'a namespace no cache covers');
  w.send('MODIFIED', { ...secretUser, metadata: { ...secretUser.metadata, resourceVersion: '8' } });
  assert.equal(await settled(change.changed), true);
  await view.stop();
});
