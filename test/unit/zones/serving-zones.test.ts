// Before a drain, the zones that keep serving are current (issue 37 item 2; plugin/zones/moves/serving-zones.ts):
// drainReads on the in-memory API and the fake clock, with the queue-check port standing in for the queue gate's
// reading (its own verdict is tested in test/unit/gates/) and each zone's vmstorage pod a local /metrics page.

import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import type { StepResult } from '../../../plugin/rollouts/types.ts';
import { zoneComponentSelector } from '../../../plugin/vm/queries-in-flight.ts';
import type { ZoneQueueCheck, ZoneQueueRequest } from '../../../plugin/zones/moves/queue-check.ts';
import { zoneState } from '../../../plugin/zones/state/zone-annotations.ts';
import { FakeClock } from '../fake-clock.ts';
import { type MemoryKube, readyPod } from '../kube/memory-kube.ts';
import {
  ns,
  rolloutObject,
  routedObjects,
  specDocument,
  stepPluginOf,
  threeZones,
  useVmauthFixture,
} from './memory-cluster.ts';

const clock = new FakeClock();
const vmauth = useVmauthFixture(clock);

/** Each zone's vmstorage /metrics page, its `vm_storage_is_read_only` set by the test. */
const readOnly = new Map<string, number>();
const storagePorts = new Map<string, number>();
const servers: Server[] = [];
before(async () => {
  for (const zone of ['zone-a', 'zone-b', 'zone-c']) {
    const server = createServer((_request, response) => {
      response.end(
        `vm_app_version{version="vmstorage"} 1\nvm_storage_is_read_only ${readOnly.get(zone) ?? 0}\n`,
      );
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    servers.push(server);
    storagePorts.set(zone, (server.address() as AddressInfo).port);
  }
});
after(() => Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve)))));

/** Stands in for the queue gate's reading: a zone in `backedUp` is not drained, any other one is once `rounds`
 *  readings were carried from one to the next (the gate's rule counts rounds, its state carries them); every
 *  reading is recorded with the state it was handed. */
function queueCheckFor(
  backedUp: Set<string>,
  readings: (ZoneQueueRequest & { previous: unknown })[],
  rounds: { needed: number },
): ZoneQueueCheck {
  return async (_clients, request, previous) => {
    readings.push({ ...request, previous });
    const round = ((previous as { round?: number } | undefined)?.round ?? 0) + 1;
    if (backedUp.has(request.vmcluster)) {
      return {
        verdict: 'wait',
        message: `remote-write queue 2 is not drained: pod vm/vmagent-0 has 52817 bytes in the on-disk queue for remote-write queue 2`,
        state: { round: 0 },
        nextReadingInMs: 500,
      };
    }
    return round >= rounds.needed
      ? { verdict: 'pass', message: 'remote-write queue drained', state: { round } }
      : {
          verdict: 'wait',
          message: `remote-write queue 2 looks drained in ${round} of the ${rounds.needed} consecutive rounds`,
          state: { round },
          nextReadingInMs: 1_500,
          evidenceDueInMs: (rounds.needed - round) * 1_500,
        };
  };
}

/** The zone's vmstorage pod with the operator's labels, at its /metrics stand-in. */
function storagePod(zone: string, options: { ready?: boolean; phase?: string } = {}) {
  const labels = Object.fromEntries(
    zoneComponentSelector('vmstorage', `vm-${zone}`)
      .split(',')
      .map((pair) => pair.split('=') as [string, string]),
  );
  return readyPod(ns, `vmstorage-vm-${zone}-0`, labels, { http: storagePorts.get(zone) ?? 0 }, options);
}

function setup(spec = specDocument()) {
  const kube = threeZones(vmauth.port);
  for (const zone of ['zone-a', 'zone-b', 'zone-c']) kube.put(storagePod(zone));
  kube.put(rolloutObject('walk', { currentPodHash: 'rev-r', stableRS: 'rev-s', currentStepIndex: 0 }, spec));
  const backedUp = new Set<string>();
  const readings: (ZoneQueueRequest & { previous: unknown })[] = [];
  const rounds = { needed: 1 };
  const { call, run } = stepPluginOf(kube, clock, {
    options: { servingZones: true, queueCheck: queueCheckFor(backedUp, readings, rounds) },
  });
  /** drainReads of `zone`, once, given the status of the call before it (as the controller does). */
  const drain = (zone: string | readonly string[], previous?: StepResult) =>
    call('run', zone, 'drainReads', previous);
  /** drainReads until it is no longer Running (a few calls). */
  const drainToEnd = (zone: string | readonly string[]) => run(zone, 'drainReads');
  return { kube, backedUp, readings, rounds, drain, drainToEnd };
}

function leased(kube: MemoryKube, zone: string): boolean {
  return zoneState(kube.getStored('VMCluster', `vm-${zone}`)).lease !== undefined;
}

test("drainReads waits while zone-b's vmagent queue is backed up, naming zone-b, and goes on once it drains", async () => {
  readOnly.clear();
  const { kube, backedUp, readings, drain, drainToEnd } = setup();
  backedUp.add('vm-zone-b');
  const before = kube.patches.length;
  const waiting = await drain('zone-a');
  assert.equal(waiting.phase, 'Running', waiting.message);
  assert.match(
    waiting.message ?? '',
    /zone zone-a: not drained yet: draining zone zone-a would move its reads to zone zone-b, which is behind: the remote-write queue of VMAgent vmagent toward it is not drained: remote-write queue 2 is not drained: .*52817 bytes in the on-disk queue/,
  );
  assert.doesNotMatch(waiting.message ?? '', /zone zone-c, which is behind/, 'zone-c is current');
  assert.equal((waiting.status as { state?: string }).state, 'waitingForServingZones');
  assert.equal(kube.patches.length, before, 'nothing written while it waits: not leased, not drained');
  assert.deepEqual(routedObjects(kube), ['vm-zone-a', 'vm-zone-b', 'vm-zone-c']);
  // A backed-up queue does not clear within the call: one reading per drain attempt.
  const ofB = readings.filter((r) => r.vmcluster === 'vm-zone-b');
  assert.equal(ofB.length, 1, 'one reading of zone-b in the call');
  assert.deepEqual(ofB[0], {
    namespace: ns,
    vmcluster: 'vm-zone-b',
    kind: 'VMCluster',
    vmagents: ['vmagent'],
    previous: undefined,
  });
  assert.ok(!readings.some((r) => r.vmcluster === 'vm-zone-a'), 'the zone being drained is not asked about');

  backedUp.delete('vm-zone-b');
  clock.advance(10_000);
  const result = await drainToEnd('zone-a');
  assert.equal(result.phase, 'Successful', result.message);
  assert.deepEqual(routedObjects(kube), ['vm-zone-b', 'vm-zone-c']);
  assert.ok(leased(kube, 'zone-a'));
});

test('a zone whose rounds are still counting is not named beside a zone that is behind', async () => {
  readOnly.clear();
  const { backedUp, rounds, drain } = setup();
  backedUp.add('vm-zone-b');
  rounds.needed = 5; // zone-c's evidence is due in 6 s, past the call's 4 s
  const waiting = await drain('zone-a');
  assert.equal(waiting.phase, 'Running');
  assert.match(waiting.message ?? '', /would move its reads to zone zone-b, which is behind: /);
  assert.doesNotMatch(waiting.message ?? '', /zone zone-c/, 'zone-c is only short of rounds');
});

test('drainReads waits while a vmstorage pod of a serving zone is read-only, naming the pod, and goes on once it is writable', async () => {
  readOnly.clear();
  readOnly.set('zone-c', 1);
  const { kube, drain, drainToEnd } = setup();
  const waiting = await drain('zone-a');
  assert.equal(waiting.phase, 'Running', waiting.message);
  assert.match(
    waiting.message ?? '',
    /would move its reads to zone zone-c, which is behind: vmstorage vm\/vmstorage-vm-zone-c-0 is read-only \(vm_storage_is_read_only 1/,
  );
  assert.ok(!leased(kube, 'zone-a'));
  readOnly.set('zone-c', 0);
  clock.advance(6_000); // past the 5 s a reading is shared for
  const result = await drainToEnd('zone-a');
  assert.equal(result.phase, 'Successful', result.message);
});

test('a serving zone whose storage gives no reading is no proof: the drain waits and says why', async () => {
  readOnly.clear();
  const { kube, drain } = setup();
  kube.put(storagePod('zone-b', { ready: false }));
  const waiting = await drain('zone-a');
  assert.equal(waiting.phase, 'Running');
  assert.match(
    waiting.message ?? '',
    /zone zone-b, which is behind: no reading of vm_storage_is_read_only: pod vm\/vmstorage-vm-zone-b-0 is not Ready/,
  );
});

test('a zone without storage pods (its storage is not pods, as in the simulated sandbox) has no storage to read: the queue decides', async () => {
  readOnly.clear();
  const { kube, backedUp, drain, drainToEnd } = setup();
  kube.put(storagePod('zone-b', { phase: 'Succeeded' }));
  kube.put(storagePod('zone-c', { phase: 'Succeeded' }));
  backedUp.add('vm-zone-b');
  const waiting = await drain('zone-a');
  assert.equal(waiting.phase, 'Running');
  assert.match(
    waiting.message ?? '',
    /zone zone-b, which is behind: the remote-write queue of VMAgent vmagent/,
  );
  assert.doesNotMatch(waiting.message ?? '', /vmstorage/);
  backedUp.delete('vm-zone-b');
  clock.advance(6_000);
  const result = await drainToEnd('zone-a');
  assert.equal(result.phase, 'Successful', result.message);
});

test('a zone that stays behind fails the drain at readyTimeout with ServingZoneBehind, naming zone-b; it serves reads as before', async () => {
  readOnly.clear();
  const { kube, backedUp, drain } = setup();
  backedUp.add('vm-zone-b');
  const first = await drain('zone-a');
  assert.equal(first.phase, 'Running');
  clock.advance(14 * 60_000);
  const still = await drain('zone-a', first);
  assert.equal(still.phase, 'Running', 'within readyTimeout (15m) it still waits');
  clock.advance(61_000);
  const late = await drain('zone-a', still);
  assert.equal(late.phase, 'Failed');
  assert.equal((late.status as { code?: string }).code, 'ServingZoneBehind');
  assert.match(
    late.message ?? '',
    /zone zone-a: not drained within readyTimeout \(waited since .*, readyTimeout 15m\): draining zone zone-a would move its reads to zone zone-b, which is behind: .*It serves reads as before/,
  );
  assert.deepEqual(routedObjects(kube), ['vm-zone-a', 'vm-zone-b', 'vm-zone-c']);
  assert.ok(!leased(kube, 'zone-a'));
});

test('a wave takes one reading of each zone that keeps serving, shared by its zones; the wave itself is not asked about', async () => {
  readOnly.clear();
  const spec = JSON.stringify({ ...JSON.parse(specDocument()), disruptionBudget: { maxZonesOut: 2 } });
  const { kube, readings, drainToEnd } = setup(spec);
  const result = await drainToEnd(['zone-a', 'zone-b']);
  assert.equal(result.phase, 'Successful', result.message);
  assert.deepEqual(routedObjects(kube), ['vm-zone-c']);
  assert.deepEqual(
    readings.map((r) => r.vmcluster),
    ['vm-zone-c'],
    'one reading of zone-c for the whole wave; none of zone-a or zone-b',
  );
});

test("the queue rule's rounds fit in one call: read again 1.5 s apart, each handed the rounds before it, then drained", async () => {
  readOnly.clear();
  const { kube, readings, rounds, drain, drainToEnd } = setup();
  rounds.needed = 3;
  const slept = clock.slept.length;
  const first = await drain('zone-a');
  assert.ok(leased(kube, 'zone-a'), `admitted in the first call: ${first.message}`);
  const result = await drainToEnd('zone-a');
  assert.equal(result.phase, 'Successful', result.message);
  const ofB = readings.filter((r) => r.vmcluster === 'vm-zone-b');
  assert.deepEqual(
    ofB.map((r) => r.previous),
    [undefined, { round: 1 }, { round: 2 }],
    "three readings, each carrying the last one's rounds",
  );
  assert.deepEqual(
    clock.slept.slice(slept, slept + 2),
    [1_500, 1_500],
    "read again at the rule's round spacing",
  );
});

test('rounds are carried to the next reading for 10 s only: after a longer gap the reading starts fresh rounds', async () => {
  readOnly.clear();
  const { kube, readings, rounds, drain, drainToEnd } = setup();
  rounds.needed = 4;
  const ofB = () => readings.filter((r) => r.vmcluster === 'vm-zone-b').map((r) => r.previous);
  const first = await drain('zone-a');
  assert.equal(first.phase, 'Running');
  assert.match(first.message ?? '', /looks drained in 1 of the 4 consecutive rounds/);
  assert.deepEqual(ofB(), [undefined], 'due in 4.5 s, more than the call may wait: read once');
  // 11 s on: the round is history, the reading starts over.
  clock.advance(11_000);
  const second = await drain('zone-a', first);
  assert.match(second.message ?? '', /looks drained in 1 of the 4 consecutive rounds/);
  assert.deepEqual(ofB(), [undefined, undefined], 'not carried after 11 s');
  assert.ok(!leased(kube, 'zone-a'));
  // 9 s on: carried; the rounds still missing are due within the call.
  clock.advance(9_000);
  const result = await drainToEnd('zone-a');
  assert.equal(result.phase, 'Successful', result.message);
  assert.deepEqual(
    ofB(),
    [undefined, undefined, { round: 1 }, { round: 2 }, { round: 3 }],
    "the third call went on from the second call's round",
  );
});
