// The undo recorded by an apply over an unfinished (superseded) walk: the earlier walk's "before" values, for
// the fields both change and for those only the earlier one changed, unless someone else changed them since.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { rollbackChanges } from '../../../plugin/zones/moves/superseded-changes.ts';
import type { RollbackRecord } from '../../../plugin/zones/state/zone-annotations.ts';

const who = { rollout: 'vm/walk', uid: 'uid-walk', revision: 'rev-2' };
const earlier: RollbackRecord = {
  rollout: 'vm/walk',
  uid: 'uid-walk',
  revision: 'rev-1',
  zone: 'zone-a',
  phase: 'applied',
  appliedAt: '2026-12-01T00:00:00Z',
  generation: 2,
  stableRevision: 'rev-s',
  changes: [
    { path: ['clusterVersion'], before: 'v1', after: 'v2' },
    { path: ['retentionPeriod'], before: '1', after: '2' },
    { path: ['vmselect', 'extraArgs'], after: { a: '1' } },
  ],
};

test('fields both walks change keep the stable value; fields only the earlier one changed are carried', () => {
  const spec = { clusterVersion: 'v2', retentionPeriod: '2', vmselect: { extraArgs: { a: '1' } } };
  const changes = rollbackChanges(
    [{ path: ['clusterVersion'], before: 'v2', after: 'v3' }],
    spec,
    earlier,
    who,
    'rev-s',
  );
  assert.deepEqual(changes, [
    { path: ['clusterVersion'], before: 'v1', after: 'v3' },
    { path: ['retentionPeriod'], before: '1', after: '2' },
    { path: ['vmselect', 'extraArgs'], after: { a: '1' } },
  ]);
});

test('a field someone else changed since the earlier walk is not carried, nor one a fresh change covers in part', () => {
  const spec = { clusterVersion: 'v2', retentionPeriod: '9', vmselect: { extraArgs: { a: '1' } } };
  const changes = rollbackChanges(
    [
      { path: ['clusterVersion'], before: 'v2', after: 'v3' },
      { path: ['vmselect', 'extraArgs', 'b'], before: undefined, after: '2' },
    ],
    spec,
    earlier,
    who,
    'rev-s',
  );
  assert.deepEqual(changes, [
    { path: ['clusterVersion'], before: 'v1', after: 'v3' },
    { path: ['vmselect', 'extraArgs', 'b'], after: '2' },
  ]);
});

test('a new walk that puts the stable value back has nothing to undo there', () => {
  const spec = { clusterVersion: 'v2', retentionPeriod: '1' };
  const changes = rollbackChanges(
    [{ path: ['clusterVersion'], before: 'v2', after: 'v1' }],
    spec,
    earlier,
    who,
    'rev-s',
  );
  assert.deepEqual(changes, []);
});

test('not chained: the earlier walk became stable, was rolled back, or belongs to another Rollout', () => {
  const fresh = [{ path: ['clusterVersion'], before: 'v2', after: 'v3' }];
  const spec = { clusterVersion: 'v2' };
  assert.deepEqual(rollbackChanges(fresh, spec, earlier, who, 'rev-1'), fresh);
  assert.deepEqual(rollbackChanges(fresh, spec, { ...earlier, phase: 'reverted' }, who, 'rev-s'), fresh);
  assert.deepEqual(rollbackChanges(fresh, spec, { ...earlier, uid: 'other' }, who, 'rev-s'), fresh);
  assert.deepEqual(
    rollbackChanges(fresh, spec, { ...earlier, stableRevision: undefined }, who, 'rev-s'),
    fresh,
  );
});
