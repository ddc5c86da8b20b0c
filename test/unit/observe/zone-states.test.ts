// Zone states from Kubernetes objects alone: each state of docs/observe.md's mapping, and what is not a zone.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { deriveZoneStates, type ZoneRow } from '../../../plugin/observe/zone-states.ts';
import { maintenanceAnnotation } from '../../../plugin/zones/state/zone-annotations.ts';
import { rollout, step, vmcluster, who } from './zone-fixtures.ts';

function zoneA(rows: ZoneRow[]): ZoneRow {
  const row = rows.find((r) => r.zone === 'zone-a');
  assert.ok(row, `no zone-a row in ${JSON.stringify(rows)}`);
  return row;
}

test('a zone named by a Rollout and without annotations is serving, not in maintenance', () => {
  const { zones, problems } = deriveZoneStates({
    rollouts: [rollout()],
    zoneObjects: [vmcluster('zone-a'), vmcluster('zone-b')],
  });
  assert.deepEqual(problems, []);
  assert.deepEqual(
    zones.map((z) => [z.namespace, z.vmcluster, z.zone, z.rollout, z.state, z.maintenance]),
    [
      ['vm', 'vm-zone-a', 'zone-a', 'vm/walk', 'serving', false],
      ['vm', 'vm-zone-b', 'zone-b', 'vm/walk', 'serving', false],
    ],
  );
});

test('drained: leased and in maintenance, no change applied yet', () => {
  const row = zoneA(
    deriveZoneStates({ rollouts: [rollout()], zoneObjects: [vmcluster('zone-a', { drained: true })] }).zones,
  );
  assert.equal(row.state, 'drained');
  assert.equal(row.maintenance, true);
  assert.equal(row.since, '2026-12-01T10:00:00Z');
  assert.equal(row.lease?.rollout, who.rollout);
});

test('applying while the VMCluster has not reached the applied generation, waiting-gate once it has', () => {
  const applying = vmcluster('zone-a', {
    drained: true,
    applied: { generation: 2 },
    generation: 2,
    observedGeneration: 1,
  });
  assert.equal(
    zoneA(deriveZoneStates({ rollouts: [rollout()], zoneObjects: [applying] }).zones).state,
    'applying',
  );
  const expanding = vmcluster('zone-a', { drained: true, applied: {}, operational: false });
  assert.equal(
    zoneA(deriveZoneStates({ rollouts: [rollout()], zoneObjects: [expanding] }).zones).state,
    'applying',
  );
  const ready = vmcluster('zone-a', { drained: true, applied: { generation: 2 }, generation: 2 });
  const row = zoneA(deriveZoneStates({ rollouts: [rollout()], zoneObjects: [ready] }).zones);
  assert.equal(row.state, 'waiting-gate');
  assert.equal(row.since, '2026-12-01T10:01:00Z');
  assert.equal(row.maintenance, true);
});

test("restoring while the holder Rollout's current step is restoreReads of that zone", () => {
  const ready = vmcluster('zone-a', { drained: true, applied: {} });
  const steps = [step('zone-a', 'drainReads'), step('zone-a', 'apply'), {}, step('zone-a', 'restoreReads')];
  const atRestore = rollout({ steps, currentStepIndex: 3 });
  assert.equal(
    zoneA(deriveZoneStates({ rollouts: [atRestore], zoneObjects: [ready] }).zones).state,
    'restoring',
  );
  const atGate = rollout({ steps, currentStepIndex: 2 });
  assert.equal(
    zoneA(deriveZoneStates({ rollouts: [atGate], zoneObjects: [ready] }).zones).state,
    'waiting-gate',
  );
  // The same step of another zone says nothing about zone-a.
  const other = rollout({ steps: [step('zone-b', 'restoreReads')], currentStepIndex: 0 });
  assert.equal(
    zoneA(deriveZoneStates({ rollouts: [other], zoneObjects: [ready] }).zones).state,
    'waiting-gate',
  );
});

test('rolling-back while a handed-over rollback is requested or reverted but not operational; restoring after', () => {
  const requested = vmcluster('zone-a', {
    drained: true,
    applied: { phase: 'requested', requestedAt: '2026-12-01T10:05:01Z' },
    handoff: {},
  });
  const row = zoneA(deriveZoneStates({ rollouts: [rollout()], zoneObjects: [requested] }).zones);
  assert.equal(row.state, 'rolling-back');
  assert.equal(row.since, '2026-12-01T10:05:01Z');
  assert.equal(row.maintenance, true);
  const reverting = vmcluster('zone-a', { applied: { phase: 'reverted' }, handoff: {}, operational: false });
  assert.equal(
    zoneA(deriveZoneStates({ rollouts: [rollout()], zoneObjects: [reverting] }).zones).state,
    'rolling-back',
  );
  const reverted = vmcluster('zone-a', { applied: { phase: 'reverted' }, handoff: {} });
  assert.equal(
    zoneA(deriveZoneStates({ rollouts: [rollout()], zoneObjects: [reverted] }).zones).state,
    'restoring',
  );
  const terminated = vmcluster('zone-a', { drained: true, handoff: { rollback: false, by: 'Terminate' } });
  const restoring = zoneA(deriveZoneStates({ rollouts: [rollout()], zoneObjects: [terminated] }).zones);
  assert.equal(restoring.state, 'restoring');
  assert.equal(restoring.maintenance, true);
});

test('a zone that only its annotations name is still listed; a VMCluster without vmzones annotations is not', () => {
  const { zones } = deriveZoneStates({
    rollouts: [],
    zoneObjects: [vmcluster('zone-a', { drained: true }), vmcluster('zone-c')],
  });
  assert.deepEqual(
    zones.map((z) => [z.vmcluster, z.zone, z.rollout, z.state]),
    [['vm-zone-a', 'zone-a', 'vm/walk', 'drained']],
  );
});

test('a malformed maintenance annotation is unknown and still counts as maintenance; a missing VMCluster is unknown', () => {
  const broken = vmcluster('zone-a', { annotations: { [maintenanceAnnotation]: '{not json' } });
  const { zones } = deriveZoneStates({ rollouts: [rollout()], zoneObjects: [broken] });
  const row = zoneA(zones);
  assert.equal(row.state, 'unknown');
  assert.equal(row.maintenance, true);
  assert.match(row.reason ?? '', /vmzones\.io\/maintenance is not JSON/);
  const missing = zones.find((z) => z.zone === 'zone-b');
  assert.equal(missing?.state, 'unknown');
  assert.equal(missing?.maintenance, false);
  assert.match(missing?.reason ?? '', /VMCluster vm\/vm-zone-b does not exist/);
});

test('a Rollout whose spec document is invalid is a problem naming it, and its zones are not invented', () => {
  const bad = rollout();
  (
    bad.spec as { template: { metadata: { annotations: Record<string, string> } } }
  ).template.metadata.annotations['vmzones.io/spec'] = 'zones: {}';
  const { zones, problems } = deriveZoneStates({ rollouts: [bad], zoneObjects: [vmcluster('zone-a')] });
  assert.deepEqual(zones, []);
  assert.equal(problems.length, 1);
  assert.match(problems[0] ?? '', /^Rollout vm\/walk: its vmzones.io\/spec cannot be read/);
});
