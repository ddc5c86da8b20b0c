// A wave moves as one (issue 38): the zones of a wave step take turns only for their writes to what they share (a
// drain's admission and balancer write, one zone after the other against the routing the previous one left), then
// wait at once; a zone failed in its turn stops the wave there; the step process's API calls to one cluster are
// bounded. On fake zone calls (wave.ts) and the in-memory API with the fake clock (the step plugin).

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setImmediate } from 'node:timers/promises';
import type { KubeObject, KubeObjects } from '../../../plugin/kube/objects.ts';
import type { StepResult } from '../../../plugin/rollouts/types.ts';
import { layerDrainBlocker, readLayer, restoreLayer } from '../../../plugin/vm/read-layer.ts';
import { renderSteps } from '../../../plugin/zones/render.ts';
import { parseSpecDocument } from '../../../plugin/zones/spec.ts';
import { CallLimiter, limitedObjects } from '../../../plugin/zones/step/api-limiter.ts';
import { readBalancerConfigs } from '../../../plugin/zones/step/target.ts';
import { overWave, zoneTurnsOf } from '../../../plugin/zones/step/wave.ts';
import { FakeClock } from '../fake-clock.ts';
import { MemoryKube } from '../kube/memory-kube.ts';
import {
  ns,
  rolloutObject,
  specDocument,
  stepPluginOf,
  useVmauthFixture,
  zonesBehindOneVMUser,
} from './memory-cluster.ts';

const clock = new FakeClock();
const vmauth = useVmauthFixture(clock);

const waitingForVmauth: StepResult = { phase: 'Running', status: { state: 'waitingForVmauth' } };
const drained: StepResult = { phase: 'Successful', message: 'drained', status: { state: 'drained' } };

/** Fake zone calls that log `turn <zone>`, `wait <zone>` and `done <zone>` (a wait yields to the others first). */
function loggedCalls(turnResult: (zone: string) => StepResult) {
  const log: string[] = [];
  const each = async (zone: string, turn: boolean) => {
    if (turn) {
      log.push(`turn ${zone}`);
      return turnResult(zone);
    }
    log.push(`wait ${zone}`);
    for (let i = 0; i < 3; i++) await setImmediate();
    log.push(`done ${zone}`);
    return drained;
  };
  return { log, each };
}

test('a wave takes turns for its writes, one zone after another, then every zone waits at once', async () => {
  const { log, each } = loggedCalls(() => waitingForVmauth);
  const result = await overWave(
    ['a', 'b', 'c'],
    'drainReads',
    { stopAtFailure: true, together: zoneTurnsOf('drainReads') },
    each,
  );
  assert.equal(result.phase, 'Successful', result.message);
  assert.deepEqual(log, [
    'turn a',
    'turn b',
    'turn c',
    'wait a',
    'wait b',
    'wait c',
    'done a',
    'done b',
    'done c',
  ]);
});

test('zones whose previous call left them only waiting skip their turn; a zone still blocked gets its turn again', async () => {
  const { log, each } = loggedCalls(() => ({ phase: 'Running', status: { state: 'waitingForOtherZones' } }));
  const previous = {
    zones: {
      a: { phase: 'Running', state: 'grace' },
      b: { phase: 'Running', state: 'waitingForOtherZones' },
    },
  };
  const result = await overWave(
    ['a', 'b'],
    'drainReads',
    { stopAtFailure: true, together: zoneTurnsOf('drainReads') },
    each,
    previous,
  );
  // b's turn found it blocked again: it writes next time, so it does not wait beside a.
  assert.deepEqual(log, ['turn b', 'wait a', 'done a']);
  assert.equal(result.phase, 'Running');
  assert.match(result.message ?? '', /waiting for b/);
});

test('apply needs no turn: every zone of the wave is changed and awaited at once', async () => {
  const { log, each } = loggedCalls(() => waitingForVmauth);
  await overWave(['a', 'b'], 'apply', { stopAtFailure: true, together: zoneTurnsOf('apply') }, each);
  assert.deepEqual(log, ['wait a', 'wait b', 'done a', 'done b']);
});

test('a zone failed in its turn stops the wave there, names it, and keeps the previous status of the zones not run', async () => {
  const { log, each } = loggedCalls((zone) =>
    zone === 'b'
      ? { phase: 'Failed', message: 'b refused', status: { code: 'LastServingZone' } }
      : waitingForVmauth,
  );
  const previous = {
    zones: { c: { phase: 'Running', state: 'waitingForOtherZones', waitingSince: 'then' } },
  };
  const result = await overWave(
    ['a', 'b', 'c'],
    'drainReads',
    { stopAtFailure: true, together: zoneTurnsOf('drainReads') },
    each,
    previous,
  );
  assert.deepEqual(log, ['turn a', 'turn b']);
  assert.equal(result.phase, 'Failed');
  assert.equal(result.status?.code, 'LastServingZone');
  assert.match(result.message ?? '', /wave a, b, c: b failed: b refused \(not run: c\)/);
  const zones = result.status?.zones as Record<string, unknown>;
  assert.deepEqual(zones.c, previous.zones.c);
});

test('without `together` (Abort, Terminate) each zone runs whole in turn', async () => {
  const { log, each } = loggedCalls(() => waitingForVmauth);
  await overWave(['a', 'b'], 'restoreReads', { stopAtFailure: false }, each);
  assert.deepEqual(log, ['wait a', 'done a', 'wait b', 'done b']);
});

test('the call limiter runs at most its limit of calls at once, the rest in the order they came', async () => {
  const limiter = new CallLimiter(2);
  let most = 0;
  const order: number[] = [];
  await Promise.all(
    [0, 1, 2, 3, 4].map((i) =>
      limiter.run(async () => {
        most = Math.max(most, limiter.running);
        await setImmediate();
        order.push(i);
      }),
    ),
  );
  assert.equal(most, 2);
  assert.deepEqual(order, [0, 1, 2, 3, 4]);
  assert.equal(limiter.running, 0);
  // A failed call gives its place back.
  await assert.rejects(limiter.run(() => Promise.reject(new Error('refused'))));
  assert.equal(limiter.running, 0);
  const kube = new MemoryKube();
  const limited = limitedObjects(kube, limiter);
  await assert.rejects(limited.get({ apiVersion: 'v1', kind: 'Secret', namespace: ns, name: 'none' }));
  assert.equal(limiter.running, 0);
});

/** `names`, each an operational VMCluster behind VMUser vmauth-read, with a Rollout walking them in one wave. */
function oneWave(names: readonly string[], graceSeconds: number): MemoryKube {
  const kube = zonesBehindOneVMUser(vmauth.port, names);
  const doc = JSON.parse(specDocument()) as Record<string, unknown> & { vmauth: Record<string, unknown> };
  doc.zones = Object.fromEntries(names.map((z) => [z, { vmcluster: `vm-${z}` }]));
  doc.vmauth.drainGracePeriod = `${graceSeconds}s`;
  const spec = JSON.stringify({
    ...doc,
    waves: [names.slice(0, -1), names.slice(-1)],
    disruptionBudget: { maxZonesOut: names.length - 1 },
  });
  const object = rolloutObject('walk', { currentPodHash: 'r2', stableRS: 'r1', currentStepIndex: 0 }, spec);
  object.spec.strategy.canary.steps = renderSteps(parseSpecDocument(spec), {
    pauseBetweenZones: 'none',
    healthTemplate: '',
  }) as typeof object.spec.strategy.canary.steps;
  kube.put(object);
  return kube;
}

test('a drain wave writes every zone out of the balancer before any zone’s grace period is waited, and each ends drained', async () => {
  const zones = ['zone-a', 'zone-b', 'zone-c', 'zone-d'];
  const kube = oneWave(zones, 2);
  const wave = zones.slice(0, 3);
  const result = await stepPluginOf(kube, clock, { inCallWaitMs: 5_000 }).run(wave, 'drainReads');
  assert.equal(result.phase, 'Successful', result.message);
  const writes = kube.reads.flatMap((call, i) => (call.startsWith('patch VMUser') ? [i] : []));
  const drainedEvents = kube.created.filter(
    (o) => o.reason === 'ZoneDrained' && (o.regarding as { kind?: string } | undefined)?.kind === 'VMCluster',
  );
  assert.equal(writes.length, 3, kube.reads.filter((c) => c.startsWith('patch')).join('\n'));
  assert.equal(drainedEvents.length, 3);
  // Each zone's grace started from its own drain; the three graces overlapped (the calls were not one after another).
  const statuses = result.status?.zones as Record<
    string,
    { drainedAt: string; graceUntil: string; state: string }
  >;
  const graces = wave.map((z) => statuses[z]);
  for (const g of graces) assert.equal(g?.state, 'drained');
  const latestDrain = Math.max(...graces.map((g) => Date.parse(g?.drainedAt ?? '')));
  const firstGraceEnd = Math.min(...graces.map((g) => Date.parse(g?.graceUntil ?? '')));
  assert.ok(
    latestDrain < firstGraceEnd,
    `every zone drained (${latestDrain}) before the first grace ended (${firstGraceEnd})`,
  );
});

test('the drain budget reads the other zones from the watched copies when the step process has them, not from the API server', async () => {
  const zones = ['zone-a', 'zone-b', 'zone-c', 'zone-d'];
  const kube = oneWave(zones, 0);
  const reads = readBalancerConfigs(parseSpecDocument(rolloutSpec(kube)), ns);
  const layer = await readLayer(
    { kube, clusters: { client: async () => kube, registration: async () => undefined } },
    reads,
  );
  // The watched copy of zone-d is behind: it still shows zone-d expanding.
  const watched = new MemoryKube();
  for (const zone of zones)
    watched.put(
      kube.getStored('VMCluster', `vm-${zone}`) as KubeObject & { apiVersion: string; kind: string },
    );
  const behind = watched.getStored('VMCluster', 'vm-zone-d');
  watched.put({
    ...behind,
    apiVersion: behind.apiVersion ?? '',
    kind: 'VMCluster',
    status: { updateStatus: 'expanding' },
  });
  const clusters = {
    client: async (): Promise<KubeObjects> => {
      throw new Error('the budget read the API server');
    },
    zoneObjects: async () => watched,
  };
  const blocker = await layerDrainBlocker(clusters, layer, 'zone-a', { maxZonesOut: 3, minZonesServing: 1 }, [
    'zone-a',
    'zone-b',
    'zone-c',
  ]);
  assert.match(blocker ?? '', /zone zone-d serves reads through VMUser vm\/vmauth-read but is not healthy/);
  assert.deepEqual(watched.reads, [`VMCluster ${ns}/vm-zone-d`]);
});

test('the zones of a wave restored at once each write the balancer after the other, none refused for the other’s write', async () => {
  const zones = ['zone-a', 'zone-b', 'zone-c', 'zone-d'];
  const kube = oneWave(zones, 0);
  const wave = zones.slice(0, 3);
  assert.equal((await stepPluginOf(kube, clock).run(wave, 'drainReads')).phase, 'Successful');
  const reads = readBalancerConfigs(parseSpecDocument(rolloutSpec(kube)), ns);
  const layer = await readLayer(
    { kube, clusters: { client: async () => kube, registration: async () => undefined } },
    reads,
  );
  const restored = await Promise.all(
    wave.map((zone) =>
      restoreLayer(layer, zone, clock, kube.getStored('VMCluster', `vm-${zone}`).metadata.uid),
    ),
  );
  assert.deepEqual(
    restored.map((written) => written.length),
    [1, 1, 1],
  );
  const after = await readLayer(
    { kube, clusters: { client: async () => kube, registration: async () => undefined } },
    reads,
  );
  assert.deepEqual([...(after.balancers[0]?.routing.routed ?? [])].sort(), zones);
});

/** The spec document of the Rollout oneWave put (its pod template's annotation). */
function rolloutSpec(kube: MemoryKube): string {
  const rollout = kube.getStored('Rollout', 'walk', 'argoproj.io/v1alpha1') as unknown as {
    spec: { template: { metadata: { annotations: Record<string, string> } } };
  };
  return rollout.spec.template.metadata.annotations['vmzones.io/spec'] ?? '';
}
