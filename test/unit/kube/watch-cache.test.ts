// The watch cache (plugin/kube/watch-cache.ts) and the view over it (watched-objects.ts), driven by a scripted
// watch: a subclass of client-node's Watch that records each watch request and lets the test send its events and
// end it, as the API server would (ADDED/MODIFIED/DELETED/BOOKMARK lines, 410 Gone, a dropped connection).

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { KubeError, type KubeObject, type KubeObjects } from '../../../plugin/kube/objects.ts';
import { WatchCache } from '../../../plugin/kube/watch-cache.ts';
import { watchedObjects } from '../../../plugin/kube/watched-objects.ts';
import { cluster, kind, kubeConfig, lister, ScriptedWatch } from './scripted-watch.ts';

const names = (objects: KubeObject[]) => objects.map((o) => o.metadata.name).sort();

test('lists, then watches from the list resourceVersion with bookmarks, and applies events in order', async () => {
  const watch = new ScriptedWatch();
  const { list, calls } = lister([{ rv: '10', items: [cluster('a', '5'), cluster('b', '6')] }]);
  const cache = new WatchCache({ kubeConfig: kubeConfig(), kind, namespace: 'vm', list, watch });
  assert.equal(cache.fresh, false);
  const synced = cache.start();
  const w = await watch.opens(1);
  await synced;
  assert.equal(calls.count, 1);
  assert.equal(w.path, '/apis/operator.victoriametrics.com/v1beta1/namespaces/vm/vmclusters');
  assert.equal(w.params.resourceVersion, '10');
  assert.equal(w.params.allowWatchBookmarks, true);
  assert.equal(cache.fresh, true);
  assert.deepEqual(names(cache.list('vm')), ['a', 'b']);

  // In order: a changed twice (the later one wins), b deleted, c added then changed.
  w.send('MODIFIED', cluster('a', '11', { annotations: { step: 'one' } }));
  w.send('DELETED', cluster('b', '12'));
  w.send('ADDED', cluster('c', '13'));
  w.send('MODIFIED', cluster('a', '14', { annotations: { step: 'two' } }));
  w.send('MODIFIED', cluster('c', '15', { labels: { x: 'y' } }));
  assert.deepEqual(names(cache.list('vm')), ['a', 'c']);
  assert.equal(cache.get('vm', 'a')?.metadata.annotations?.step, 'two');
  assert.equal(cache.get('vm', 'c')?.metadata.labels?.x, 'y');
  assert.equal(cache.get('vm', 'b'), undefined);

  // A bookmark moves the resourceVersion on; a server-side close resumes from it without a list.
  w.send('BOOKMARK', { metadata: { resourceVersion: '40' } });
  w.end(null);
  const resumed = await watch.opens(2);
  assert.equal(resumed.params.resourceVersion, '40');
  assert.equal(calls.count, 1, 'a watch that ended normally resumes without listing again');
  await cache.stop();
});

test('410 Gone relists: objects deleted meanwhile go, the watch resumes from the new list', async () => {
  for (const how of ['on connect', 'in the stream'] as const) {
    const watch = new ScriptedWatch();
    const { list, calls } = lister([
      { rv: '10', items: [cluster('a', '5'), cluster('b', '6')] },
      { rv: '90', items: [cluster('a', '80'), cluster('d', '85')] },
    ]);
    const cache = new WatchCache({ kubeConfig: kubeConfig(), kind, namespace: 'vm', list, watch });
    await cache.start();
    const w = await watch.opens(1);
    if (how === 'on connect') {
      w.end(Object.assign(new Error('Gone'), { statusCode: 410 }));
    } else {
      w.send('ERROR', { kind: 'Status', code: 410, reason: 'Expired', metadata: {} });
      w.end(null);
    }
    const after = await watch.opens(2);
    assert.equal(calls.count, 2, `${how}: listed again`);
    assert.equal(after.params.resourceVersion, '90', `${how}: watches from the new list`);
    assert.deepEqual(names(cache.list('vm')), ['a', 'd'], `${how}: b is gone, d is in`);
    assert.equal(cache.get('vm', 'a')?.metadata.resourceVersion, '80');
    assert.equal(cache.fresh, true);
    await cache.stop();
  }
});

test('a failed watch or list is retried with a growing wait, and the cache is not fresh meanwhile', async () => {
  const watch = new ScriptedWatch();
  let failLists = 0;
  const { list: good, calls } = lister([{ rv: '10', items: [cluster('a', '5')] }]);
  const list = async () => {
    if (failLists > 0) {
      failLists--;
      throw new Error('connection refused');
    }
    return good();
  };
  const waits: number[] = [];
  let release: (() => void) | undefined;
  const delay = (ms: number) => {
    waits.push(ms);
    return new Promise<void>((r) => {
      release = r;
    });
  };
  const problems: string[] = [];
  const cache = new WatchCache({
    kubeConfig: kubeConfig(),
    kind,
    namespace: '',
    list,
    watch,
    delay,
    onProblem: (m) => problems.push(m),
  });
  await cache.start();
  const w = await watch.opens(1);
  assert.equal(w.path, '/apis/operator.victoriametrics.com/v1beta1/vmclusters');
  w.end(Object.assign(new Error('Internal Server Error'), { statusCode: 500 }));
  assert.equal(cache.fresh, false, 'not fresh while the failure is retried');
  assert.deepEqual(waits, [1000]);
  assert.match(
    problems[0] ?? '',
    /watching VMCluster in all namespaces failed \(Internal Server Error\); retrying in 1 s/,
  );
  release?.();
  const again = await watch.opens(2);
  assert.equal(again.params.resourceVersion, '10', 'resumes from the last resourceVersion');
  assert.equal(cache.fresh, true);

  // A watch that delivers an event (a bookmark) resets the wait. Then a 410 relists, and the relist fails twice:
  // 1 s, then 2 s.
  again.send('BOOKMARK', { metadata: { resourceVersion: '20' } });
  failLists = 2;
  again.end(Object.assign(new Error('Gone'), { statusCode: 410 }));
  await new Promise((r) => setImmediate(r));
  assert.equal(cache.fresh, false);
  release?.();
  await new Promise((r) => setImmediate(r));
  release?.();
  await watch.opens(3);
  assert.deepEqual(waits, [1000, 1000, 2000]);
  assert.equal(calls.count, 2);
  assert.equal(cache.fresh, true);
  await cache.stop();
});

test('stored objects lose managedFields and the last-applied annotation', async () => {
  const watch = new ScriptedWatch();
  const heavy = cluster('a', '5', {
    annotations: { 'kubectl.kubernetes.io/last-applied-configuration': '{"big":1}', keep: 'me' },
  });
  (heavy.metadata as Record<string, unknown>).managedFields = [{ manager: 'kubectl' }];
  const { list } = lister([{ rv: '10', items: [heavy] }]);
  const cache = new WatchCache({ kubeConfig: kubeConfig(), kind, namespace: 'vm', list, watch });
  await cache.start();
  const stored = cache.get('vm', 'a');
  assert.deepEqual(stored?.metadata.annotations, { keep: 'me' });
  assert.equal('managedFields' in (stored?.metadata ?? {}), false);
  assert.ok(
    (heavy.metadata as Record<string, unknown>).managedFields,
    'the listed object itself is unchanged',
  );
  await cache.stop();
});

test('the view answers from a fresh cache, from the API server otherwise, and never shares its objects', async () => {
  const watch = new ScriptedWatch();
  const { list } = lister([{ rv: '10', items: [cluster('a', '5')] }]);
  const liveCalls: string[] = [];
  const live: KubeObjects = {
    get: async (ref) => {
      liveCalls.push(`get ${ref.kind} ${ref.namespace}/${ref.name}`);
      return cluster(ref.name, '99');
    },
    list: async (_a, k, n, selector) => {
      liveCalls.push(`list ${k} ${n}${selector ? ` ${selector}` : ''}`);
      return [];
    },
    mergePatch: async (ref) => {
      liveCalls.push(`patch ${ref.name}`);
      return cluster(ref.name, '100');
    },
    create: async (o) => o,
  };
  const view = watchedObjects(live, {
    kubeConfig: kubeConfig(),
    kinds: [kind],
    namespaces: ['vm'],
    cache: (k, n) => new WatchCache({ kubeConfig: kubeConfig(), kind: k, namespace: n, list, watch }),
  });
  const ref = { apiVersion: kind.apiVersion, kind: kind.kind, namespace: 'vm', name: 'a' };
  await view.kube.get(ref); // before start: not fresh, so live
  await view.start();
  const fromCache = await view.kube.get(ref);
  assert.equal(fromCache.metadata.resourceVersion, '5');
  fromCache.metadata.name = 'changed by the caller';
  assert.equal((await view.kube.get(ref)).metadata.name, 'a');
  await assert.rejects(
    view.kube.get({ ...ref, name: 'nope' }),
    (e) => e instanceof KubeError && e.kind === 'notFound',
  );
  assert.deepEqual(names(await view.kube.list(kind.apiVersion, kind.kind, 'vm')), ['a']);
  await view.kube.list(kind.apiVersion, kind.kind, 'other'); // not watched
  await view.kube.list(kind.apiVersion, kind.kind, 'vm', 'x=y'); // a selector the cache does not apply
  await view.kube.get({ ...ref, kind: 'VMUser' }); // not watched
  await view.kube.mergePatch(ref, {});
  assert.deepEqual(liveCalls, [
    'get VMCluster vm/a',
    'list VMCluster other',
    'list VMCluster vm x=y',
    'get VMUser vm/a',
    'patch a',
  ]);
  await view.stop();
});
