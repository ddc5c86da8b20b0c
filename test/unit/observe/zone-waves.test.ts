// The `wave` of a zone in the zone metrics and /status rows (docs/observe.md, "Metrics reference"): the zone's wave in
// the walk of the Rollout the row names, where that Rollout's spec document walks in waves; absent otherwise, so the
// series of a walk one zone at a time stay as they were.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createMetrics, registerZoneMetrics } from '../../../plugin/observe/metrics.ts';
import { ZoneSnapshots } from '../../../plugin/observe/zone-snapshot.ts';
import { deriveZoneStates } from '../../../plugin/observe/zone-states.ts';
import { specAnnotation } from '../../../plugin/zones/spec.ts';
import { MemoryKube } from '../kube/memory-kube.ts';
import { rollout, vmcluster } from './zone-fixtures.ts';

const zones = ['zone-a', 'zone-b', 'zone-c'];

/** The fixture Rollout over three zones, its spec document extended with `extra` YAML lines. */
function rolloutWith(extra: string[], name = 'walk') {
  const object = rollout({ zones });
  object.metadata.name = name;
  const annotations = (object.spec as { template: { metadata: { annotations: Record<string, string> } } })
    .template.metadata.annotations;
  annotations[specAnnotation] = [annotations[specAnnotation], ...extra].join('\n');
  return object;
}

const waveOfEach = (rollouts: object[], objects = zones.map((z) => vmcluster(z))) =>
  deriveZoneStates({ rollouts, zoneObjects: objects }).zones.map((z) => [z.zone, z.wave]);

test('a zone of a spec with waves carries its wave, 1 first', () => {
  assert.deepEqual(waveOfEach([rolloutWith(['waves: [[zone-c], [zone-a, zone-b]]'])]), [
    ['zone-a', 2],
    ['zone-b', 2],
    ['zone-c', 1],
  ]);
});

test('maxParallelZones cuts the order into waves, and a zone carries the wave it falls in', () => {
  assert.deepEqual(waveOfEach([rolloutWith(['maxParallelZones: 2', 'order: [zone-b, zone-c, zone-a]'])]), [
    ['zone-a', 2],
    ['zone-b', 1],
    ['zone-c', 1],
  ]);
});

test('a spec without waves gives no wave: the walk is one zone at a time, as it always was', () => {
  assert.deepEqual(waveOfEach([rolloutWith([])]), [
    ['zone-a', undefined],
    ['zone-b', undefined],
    ['zone-c', undefined],
  ]);
});

test("the wave is the one of the Rollout the row names: the lease holder's, not another Rollout's", () => {
  // Rollout "other" sorts first and walks zone-a in wave 3; the holder "walk" walks it first.
  const other = rolloutWith(['waves: [[zone-b], [zone-c], [zone-a]]'], 'a-other');
  const holder = rolloutWith(['waves: [[zone-a], [zone-b, zone-c]]']);
  const held = [vmcluster('zone-a', { drained: true }), vmcluster('zone-b'), vmcluster('zone-c')];
  const rows = deriveZoneStates({ rollouts: [other, holder], zoneObjects: held }).zones;
  assert.deepEqual(
    rows.map((z) => [z.zone, z.rollout, z.wave]),
    [
      ['zone-a', 'vm/walk', 1],
      ['zone-b', 'vm/a-other', 1],
      ['zone-c', 'vm/a-other', 2],
    ],
  );
});

test('the zone metrics carry wave="N" for a zone of a walk in waves, and no wave label otherwise', async () => {
  const page = async (spec: ReturnType<typeof rolloutWith>) => {
    const kube = new MemoryKube().put(spec);
    for (const zone of zones) kube.put(vmcluster(zone, { drained: zone === 'zone-b' }));
    const metrics = createMetrics('step');
    registerZoneMetrics(metrics.registry, new ZoneSnapshots(() => kube));
    return (await metrics.registry.metrics()).split('\n');
  };
  const lines = (all: string[], name: string) => all.filter((l) => l.startsWith(`${name}{`));

  const inWaves = await page(rolloutWith(['waves: [[zone-a], [zone-b, zone-c]]']));
  for (const name of [
    'vmzones_zone_maintenance',
    'vmzones_zone_state',
    'vmzones_zone_drifted',
    'vmzones_zone_state_since_timestamp_seconds',
  ]) {
    const found = lines(inWaves, name);
    assert.ok(found.length > 0, `${name} has series`);
    for (const line of found) {
      const wave = line.includes('zone="zone-a"') ? '1' : '2';
      assert.ok(line.includes(`,wave="${wave}"`), `${name} of its zone carries wave ${wave}: ${line}`);
    }
  }
  assert.ok(
    inWaves.includes(
      'vmzones_zone_maintenance{namespace="vm",kind="VMCluster",vmcluster="vm-zone-b",zone="zone-b",rollout="vm/walk",wave="2",role="step"} 1',
    ),
    lines(inWaves, 'vmzones_zone_maintenance').join('\n'),
  );
  assert.match(
    inWaves.find((l) => l.startsWith('# HELP vmzones_zone_state ')) ?? '',
    /wave: its wave in the Rollout's walk/,
  );

  const oneByOne = await page(rolloutWith([]));
  const series = lines(oneByOne, 'vmzones_zone_state');
  assert.equal(series.length, 3 * 7, 'seven states per zone');
  assert.deepEqual(
    series.filter((l) => l.includes('wave=')),
    [],
    'no wave label without waves',
  );
});
