// The vmzones annotations on a VMCluster: read strictly, never silently ignored.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { KubeObject } from '../../../plugin/kube/objects.ts';
import { maintenanceOf } from '../../../plugin/zones/state/maintenance.ts';
import {
  changeRecords,
  fieldChanges,
  leaseAnnotation,
  maintenanceAnnotation,
  rollbackAnnotation,
  StateError,
  sameRevision,
  sameRollout,
  timestamp,
  zoneState,
} from '../../../plugin/zones/state/zone-annotations.ts';
import { changedSummary } from '../../../plugin/zones/step/apply.ts';

function cluster(annotations: Record<string, string>): KubeObject {
  return { metadata: { name: 'vm-zone-a', namespace: 'vm', annotations } };
}

const who = { rollout: 'vm/r', uid: 'u1', revision: 'h1' };

test('absent annotations read as undefined', () => {
  assert.deepEqual(zoneState(cluster({})), {
    lease: undefined,
    maintenance: undefined,
    rollback: undefined,
    handoff: undefined,
  });
});

test('a lease round-trips and identifies its holder by uid and revision', () => {
  const state = zoneState(
    cluster({ [leaseAnnotation]: JSON.stringify({ ...who, since: '2026-01-01T00:00:00Z' }) }),
  );
  assert.equal(sameRollout(state.lease, who), true);
  assert.equal(sameRevision(state.lease, who), true);
  assert.equal(sameRevision(state.lease, { ...who, revision: 'h2' }), false);
  assert.equal(
    sameRollout(state.lease, { ...who, uid: 'u2' }),
    false,
    'a recreated Rollout is another holder',
  );
});

test('a malformed annotation is a StateError naming the VMCluster and the annotation', () => {
  assert.throws(
    () => zoneState(cluster({ [leaseAnnotation]: 'someone' })),
    (err: unknown) =>
      err instanceof StateError &&
      /VMCluster vm\/vm-zone-a: annotation vmzones\.io\/lease is not JSON/.test(err.message),
  );
  assert.throws(
    () => zoneState(cluster({ [rollbackAnnotation]: JSON.stringify({ ...who, phase: 'maybe' }) })),
    /annotation vmzones\.io\/rollback is not what vmzones writes/,
  );
});

test('field changes survive the annotation, absent values included', () => {
  const changes = [
    { path: ['clusterVersion'], before: 'v1', after: 'v2' },
    { path: ['vmstorage', 'extraArgs'], before: undefined, after: { a: '1' } },
    { path: ['retentionPeriod'], before: '1', after: undefined },
  ];
  const record = {
    ...who,
    zone: 'zone-a',
    phase: 'applied' as const,
    appliedAt: '2026-01-01T00:00:00Z',
    generation: 2,
    changes: changeRecords(changes),
  };
  const state = zoneState(cluster({ [rollbackAnnotation]: JSON.stringify(record) }));
  assert.ok(state.rollback);
  assert.deepEqual(fieldChanges(state.rollback), changes);
});

test('maintenance is derived from the annotations of the listed VMClusters', () => {
  const inMaintenance = cluster({
    [maintenanceAnnotation]: JSON.stringify({
      zone: 'zone-a',
      since: '2026-01-01T00:00:00Z',
      reason: 'drainReads',
    }),
  });
  const broken: KubeObject = {
    metadata: {
      name: 'vm-zone-b',
      namespace: 'vm',
      labels: { 'vmzones.io/zone': 'zone-b' },
      annotations: { [maintenanceAnnotation]: 'x' },
    },
  };
  const zones = maintenanceOf([cluster({}), broken, inMaintenance]);
  assert.deepEqual(zones[0], {
    zone: 'zone-a',
    vmcluster: 'vm-zone-a',
    namespace: 'vm',
    since: '2026-01-01T00:00:00Z',
    reason: 'drainReads',
  });
  assert.equal(zones[1]?.zone, 'zone-b', 'a malformed annotation still counts as maintenance');
  assert.match(zones[1]?.reason ?? '', /not JSON/);
  assert.equal(zones.length, 2);
});

test('timestamps are RFC 3339 to the second', () => {
  assert.equal(timestamp(new Date('2026-05-01T10:20:30.456Z')), '2026-05-01T10:20:30Z');
});

test('the changed summary says how each field changed, never its value', () => {
  assert.deepEqual(
    changedSummary([
      { path: ['clusterVersion'], before: 'v1', after: 'v2' },
      { path: ['vmstorage', 'extraArgs'], before: undefined, after: { a: '1' } },
      { path: ['retentionPeriod'], before: '1', after: undefined },
    ]),
    {
      'spec.clusterVersion': 'changed',
      'spec.vmstorage.extraArgs': 'set',
      'spec.retentionPeriod': 'removed',
    },
  );
  const big = Array.from({ length: 200 }, (_, i) => ({ path: [`x${i}`], before: 'a', after: 'b' }));
  assert.deepEqual(
    changedSummary(big),
    big.map((c) => `spec.${c.path[0]}`),
    'only names when there are too many fields for the status',
  );
});
