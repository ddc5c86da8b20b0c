import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  composeMergePatches,
  diffMergePatch,
  type JsonObject,
  mergePatch,
  revertPatch,
} from '../../../plugin/zones/state/merge-patch.ts';

test('mergePatch follows the RFC 7396 examples', () => {
  // Appendix A of RFC 7396, a selection.
  assert.deepEqual(mergePatch({ a: 'b' }, { a: 'c' }), { a: 'c' });
  assert.deepEqual(mergePatch({ a: 'b' }, { b: 'c' }), { a: 'b', b: 'c' });
  assert.deepEqual(mergePatch({ a: 'b' }, { a: null }), {});
  assert.deepEqual(mergePatch({ a: 'b', b: 'c' }, { a: null }), { b: 'c' });
  assert.deepEqual(mergePatch({ a: ['b'] }, { a: 'c' }), { a: 'c' });
  assert.deepEqual(mergePatch({ a: 'c' }, { a: ['b'] }), { a: ['b'] });
  assert.deepEqual(mergePatch({ a: { b: 'c' } }, { a: { b: 'd', c: null } }), { a: { b: 'd' } });
  assert.deepEqual(mergePatch({ a: [{ b: 'c' }] }, { a: [1] }), { a: [1] });
  assert.deepEqual(mergePatch(['a', 'b'], ['c', 'd']), ['c', 'd']);
  assert.deepEqual(mergePatch({ a: 'b' }, ['c']), ['c']);
  assert.deepEqual(mergePatch({ a: 'foo' }, null), null);
  assert.deepEqual(mergePatch({ e: null }, { a: 1 }), { e: null, a: 1 });
  assert.deepEqual(mergePatch([1, 2], { a: 'b', c: null }), { a: 'b' });
  assert.deepEqual(mergePatch({}, { a: { bb: { ccc: null } } }), { a: { bb: {} } });
});

test('mergePatch does not modify its inputs', () => {
  const target: JsonObject = { a: { b: 1 } };
  const patch: JsonObject = { a: { c: 2 } };
  mergePatch(target, patch);
  assert.deepEqual(target, { a: { b: 1 } });
  assert.deepEqual(patch, { a: { c: 2 } });
});

test('composeMergePatches equals applying both patches in turn, nulls included', () => {
  const target: JsonObject = {
    clusterVersion: 'v1',
    vmstorage: { replicaCount: 2, resources: { cpu: '1' } },
  };
  const global: JsonObject = { clusterVersion: 'v2', vmstorage: { resources: { cpu: '2' } } };
  const zone: JsonObject = { vmstorage: { resources: null, replicaCount: 4 } };
  const composed = composeMergePatches(global, zone);
  assert.deepEqual(composed, { clusterVersion: 'v2', vmstorage: { resources: null, replicaCount: 4 } });
  assert.deepEqual(mergePatch(target, composed), mergePatch(mergePatch(target, global), zone));
});

test('diffMergePatch records only real changes, with values before and after', () => {
  const target: JsonObject = {
    clusterVersion: 'v1',
    vmstorage: { replicaCount: 2, extraArgs: { a: '1' } },
    keep: 1,
  };
  const patch: JsonObject = {
    clusterVersion: 'v2',
    vmstorage: { replicaCount: 2, extraArgs: null, storage: { size: '10Gi' } },
    absent: null,
  };
  assert.deepEqual(diffMergePatch(target, patch), [
    { path: ['clusterVersion'], before: 'v1', after: 'v2' },
    { path: ['vmstorage', 'extraArgs'], before: { a: '1' }, after: undefined },
    { path: ['vmstorage', 'storage'], before: undefined, after: { size: '10Gi' } },
  ]);
});

test('revertPatch undoes a patch exactly', () => {
  const cases: [JsonObject, JsonObject][] = [
    [
      { a: 1, b: { c: [1, 2], d: 'x' } },
      { a: 2, b: { c: [3], d: null, e: { f: 1 } } },
    ],
    [{ a: 'scalar' }, { a: { now: 'object' } }],
    [{}, { x: { y: { z: 1 } } }],
    [{ vmselect: { replicaCount: 2 } }, { vmselect: { replicaCount: 2 } }],
  ];
  for (const [target, patch] of cases) {
    const changed = mergePatch(target, patch);
    const undo = revertPatch(diffMergePatch(target, patch));
    assert.deepEqual(mergePatch(changed, undo), target, JSON.stringify({ target, patch }));
  }
});
