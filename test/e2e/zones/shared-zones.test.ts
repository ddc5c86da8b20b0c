// Issue 35's scenarios 1, 2 and 9 end to end (docs/architecture.md "A zone is its object"): zones shared by
// several Rollouts, on one sandbox of four zones behind the real VMUser vmauth-read, with the real API server's
// RBAC, the real VictoriaMetrics operator and the real Argo Rollouts controller running the built plugin.
//
// 2. Two Rollouts name different VMClusters `zone-a` (vm-zone-a and vm-zone-c) behind the one VMUser: the second's
//    drain waits on the budget while the first's zone is out (the records are keyed by the object, not the name),
//    and its restoreReads never puts the first's zone back.
// 1. A ServiceAccount that may only patch VMClusters in its own namespace (team-a) writes, as itself, a handoff on a
//    scratch VMCluster there that names zone `zone-b` and itself as zone-b's backend, while a walk holds the real
//    vm-zone-b drained; the reconciler (with --allowed-namespaces sharing vm and team-a) leaves vm-zone-b drained,
//    its lease the walk's, and says why on the scratch object (a Warning) — never in another namespace.
// 9. Two Rollouts over the same four zones, waves [a, b], [c, d] and [c, d], [a, b], budget maxZonesOut 2, applied
//    together: both finish, one after the other (a walk that finds a zone held by the other waits for it), no more
//    than 2 zones out of reads at any time, no read through vmauth fails.
//
// 2 and 1 drive the step plugin and the reconciler in this process (on Rollouts parked at a pause, so that the
// controller's own plugin leaves their zones alone); 9 is the controller's. Run `npm run build` first.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { silentLogger } from '../../../plugin/goplugin/index.ts';
import type { KubeObjects } from '../../../plugin/kube/objects.ts';
import type { RolloutView, StepResult } from '../../../plugin/rollouts/types.ts';
import { ZoneReconciler } from '../../../plugin/zones/reconciler/reconciler.ts';
import { createZoneStepPlugin } from '../../../plugin/zones/step-plugin.ts';
import { type Sandbox, startSandbox } from '../../sandbox/helper.ts';
import { readUser, vmauthName, vmuserName } from '../../sandbox/manifests.ts';
import { leftoversIn, specValue } from '../reliability/support.ts';
import {
  cluster,
  eventually,
  forgerOf,
  ns,
  type OutOfReads,
  parkedRollout,
  rolloutCanProgress,
  rolloutObject,
  rolloutStanding,
  rolloutState,
  routedZones,
  type SpecDocument,
  sandboxKube,
  startReadProber,
  startRoutingWatcher,
  stepsFor,
  vmclusterAnnotator,
  vmzonesAnnotations,
  zoneSpec,
} from '../step/harness.ts';

const team = 'team-a';
const forger = forgerOf(team);
const vmApi = 'operator.victoriametrics.com/v1beta1';
const zones = ['zone-a', 'zone-b', 'zone-c', 'zone-d'].map((zone) => ({ zone, vmcluster: `vm-${zone}` }));
const allZones = Object.fromEntries(zones.map((z) => [z.zone, { vmcluster: z.vmcluster }]));
const figures: Record<string, string | number> = {};
const started = Date.now();

let sandbox: Sandbox;
let kube: KubeObjects;

before(async () => {
  // The operator reconciles only the zones' namespace: team-a's scratch VMCluster is an object to annotate.
  sandbox = await startSandbox({
    zones: 4,
    podRestartSeconds: 2,
    plugin: true,
    operatorWatchNamespaces: [ns],
  });
  kube = sandboxKube(sandbox);
  figures['sandbox start (s)'] = Math.round((Date.now() - started) / 1000);
});

after(async () => {
  figures['file wall time (s)'] = Math.round((Date.now() - started) / 1000);
  console.log(`shared-zones figures: ${JSON.stringify(figures)}`);
  if (sandbox) await sandbox.stop();
});

/** The VMClusters the VMUser routes reads to now, by name (a zone is its object: zone-x's is vm-zone-x). */
async function routedObjects(): Promise<string[]> {
  return (await routedZones(kube, zoneSpec({}, { zones: allZones }))).map((zone) => `vm-${zone}`).sort();
}

/** The step plugin in this process (its own reconciler off), as the controller would call it. */
function inProcess(view: RolloutView) {
  const plugin = createZoneStepPlugin({ kube, reconciler: false, logger: silentLogger, inCallWaitMs: 5_000 });
  const call = (zone: string, action: string, previous?: StepResult) =>
    plugin.run(view, { pluginName: 'vmzones/step', config: { zone, action }, status: previous?.status });
  /** Runs the action again while it says Running, up to `limitMs`, each Run given the status before it. */
  const run = async (zone: string, action: string, limitMs = 60_000): Promise<StepResult> => {
    const until = Date.now() + limitMs;
    let result = await call(zone, action);
    while (result.phase === 'Running' && Date.now() < until) {
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      result = await call(zone, action, result);
    }
    return result;
  };
  return { call, run };
}

/** Zone objects that still carry vmzones state other than a rollback record. */
function leftovers(): Promise<string[]> {
  return leftoversIn(
    Object.fromEntries(zones.map((z) => [z.zone, kube])),
    kube,
    zoneSpec({}, { zones: allZones }),
    zones,
  );
}

test('scenario 2: two Rollouts that name different VMClusters zone-a behind one VMUser neither share a record nor pass the budget together', async () => {
  const hotSpec = zoneSpec(
    {},
    { zones: { 'zone-a': { vmcluster: 'vm-zone-a' }, 'zone-b': { vmcluster: 'vm-zone-b' } } },
  );
  const coldSpec = zoneSpec(
    {},
    { zones: { 'zone-a': { vmcluster: 'vm-zone-c' }, 'zone-b': { vmcluster: 'vm-zone-b' } } },
  );
  const hot = inProcess(await parkedRollout(sandbox, kube, 'hot', 'zone-a', hotSpec));
  const cold = inProcess(await parkedRollout(sandbox, kube, 'cold', 'zone-a', coldSpec));
  const drained = await hot.run('zone-a', 'drainReads');
  assert.equal(drained.phase, 'Successful', drained.message);
  assert.deepEqual(await routedObjects(), ['vm-zone-b', 'vm-zone-c', 'vm-zone-d']);
  // cold's zone-a is another object: its drain is a second zone out, which the budget (one out) refuses for now.
  const refused = await cold.call('zone-a', 'drainReads');
  assert.equal(refused.phase, 'Running', refused.message);
  assert.match(refused.message ?? '', /not drained yet/);
  assert.deepEqual(
    await routedObjects(),
    ['vm-zone-b', 'vm-zone-c', 'vm-zone-d'],
    "cold's zone-a stays in reads",
  );
  assert.equal(
    vmzonesAnnotations(await cluster(kube, 'vm-zone-c'))['vmzones.io/lease'],
    undefined,
    'no lease for a refused drain',
  );
  // cold's restoreReads has nothing of its own to put back, and never puts hot's zone-a back.
  const restoredByCold = await cold.call('zone-a', 'restoreReads');
  assert.notEqual(restoredByCold.phase, 'Running', restoredByCold.message);
  assert.deepEqual(
    await routedObjects(),
    ['vm-zone-b', 'vm-zone-c', 'vm-zone-d'],
    "hot's zone-a stays out of reads",
  );
  const user = await kube.get({ apiVersion: vmApi, kind: 'VMUser', namespace: ns, name: vmuserName });
  const records = JSON.parse(user.metadata.annotations?.['vmzones.io/drained'] ?? '{}') as Record<
    string,
    { vmcluster?: string }
  >;
  assert.deepEqual(
    Object.values(records).map((r) => r.vmcluster),
    [`${ns}/vm-zone-a`],
    'one drain record, naming the object hot drained',
  );
  // hot puts its zone back; then cold's drain is admitted, and its restore puts back its own object.
  assert.equal((await hot.run('zone-a', 'restoreReads')).phase, 'Successful');
  const coldDrained = await cold.run('zone-a', 'drainReads');
  assert.equal(coldDrained.phase, 'Successful', coldDrained.message);
  assert.deepEqual(await routedObjects(), ['vm-zone-a', 'vm-zone-b', 'vm-zone-d']);
  assert.equal((await cold.run('zone-a', 'restoreReads')).phase, 'Successful');
  assert.deepEqual(
    await routedObjects(),
    zones.map((z) => z.vmcluster),
  );
  assert.deepEqual(await leftovers(), []);
});

test('scenario 1: an RBAC-limited user forges a handoff on a scratch object naming zone-b; the walk’s zone-b stays drained and the refusal is said on the scratch object', async () => {
  await sandbox.kubectl.apply([
    ...vmclusterAnnotator(team),
    {
      apiVersion: vmApi,
      kind: 'VMCluster',
      metadata: { name: 'scratch', namespace: team },
      spec: { retentionPeriod: '1', vmstorage: { replicaCount: 1 } },
    },
  ]);
  // The scratch object looks operational (no operator watches team-a): what a VMCluster of the forger's would be.
  await sandbox.kubectl.run([
    'patch',
    'vmcluster',
    'scratch',
    '-n',
    team,
    '--subresource=status',
    '--type=merge',
    '-p',
    JSON.stringify({ status: { updateStatus: 'operational', observedGeneration: 1 } }),
  ]);
  const asForger = (args: string[]) => sandbox.kubectl.run([`--as=${forger}`, ...args]);
  assert.equal((await asForger(['auth', 'can-i', 'patch', 'vmclusters', '-n', team])).trim(), 'yes');
  await assert.rejects(
    asForger(['auth', 'can-i', 'patch', 'vmclusters', '-n', ns]),
    'the forger may not patch the zones',
  );

  // The walk holds the real vm-zone-b drained.
  const walkSpec = zoneSpec({}, { zones: allZones });
  const walk = inProcess(await parkedRollout(sandbox, kube, 'walk', 'zone-b', walkSpec));
  assert.equal((await walk.run('zone-b', 'drainReads')).phase, 'Successful');
  const heldBefore = vmzonesAnnotations(await cluster(kube, 'vm-zone-b'));
  assert.ok(heldBefore['vmzones.io/lease'], 'the walk leases vm-zone-b');

  // The forger's handoff: zone `zone-b`, whose backend in its reads is the scratch object itself.
  const hosts = (name: string, namespace: string) => [
    `vmselect-${name}.${namespace}.svc`,
    `vmselect-${name}.${namespace}.svc.cluster.local`,
  ];
  const handoff = {
    v: 1,
    zone: 'zone-b',
    holder: { rollout: `${team}/ghost`, uid: 'uid-ghost', revision: 'r1' },
    requestedAt: new Date(Date.now() - 60_000).toISOString().replace(/\.\d+Z$/, 'Z'),
    by: 'a forger',
    rollback: false,
    reads: {
      ref: { kind: 'VMUser', namespace: ns, name: vmuserName },
      zones: zones.map((z) =>
        z.zone === 'zone-b'
          ? { zone: z.zone, namespace: team, vmcluster: 'scratch', hosts: hosts('scratch', team) }
          : { zone: z.zone, namespace: ns, vmcluster: z.vmcluster, hosts: hosts(z.vmcluster, ns) },
      ),
      reloadEvidence: 'required',
    },
    drainGracePeriod: '0s',
    vmagents: ['vmagent'],
  };
  await asForger([
    'patch',
    'vmcluster',
    'scratch',
    '-n',
    team,
    '--type=merge',
    '-p',
    JSON.stringify({
      metadata: {
        annotations: { 'vmzones.io/handoff': JSON.stringify(handoff) },
        labels: { 'vmzones.io/pending': 'true' },
      },
    }),
  ]);

  // The reconciler of a plugin that shares vm and team-a (--allowed-namespaces=vm,team-a), several passes.
  const reconciler = new ZoneReconciler({
    kube,
    logger: silentLogger,
    allowance: { all: false, extra: [ns, team] },
  });
  for (let pass = 0; pass < 5; pass++) await reconciler.tick();

  assert.deepEqual(
    await routedObjects(),
    ['vm-zone-a', 'vm-zone-c', 'vm-zone-d'],
    'vm-zone-b stays out of reads',
  );
  const heldAfter = vmzonesAnnotations(await cluster(kube, 'vm-zone-b'));
  assert.equal(
    heldAfter['vmzones.io/lease'],
    heldBefore['vmzones.io/lease'],
    "vm-zone-b's lease is still the walk's",
  );
  assert.equal(heldAfter['vmzones.io/maintenance'], heldBefore['vmzones.io/maintenance']);
  const events = await sandbox.kubectl.getJson<{
    items: {
      reason?: string;
      type?: string;
      note?: string;
      regarding?: { name?: string; namespace?: string };
      metadata: { namespace?: string; labels?: Record<string, string> };
    }[];
  }>(['events.v1.events.k8s.io', '-A']);
  const onScratch = events.items.filter((e) => e.regarding?.name === 'scratch' && e.type === 'Warning');
  figures['scenario 1 warnings on the scratch object'] = onScratch
    .map((e) => `${e.reason}: ${(e.note ?? '').slice(0, 160)}`)
    .join(' | ');
  assert.ok(onScratch.length >= 1, 'a Warning on the scratch object says why it was not finished');
  assert.ok(
    onScratch.every((e) => e.metadata.namespace === team),
    'in the scratch object’s namespace',
  );
  assert.ok(
    onScratch.every((e) => e.metadata.labels?.['vmzones.io/failure-code'] !== undefined),
    'each with its failure code',
  );
  const forged = events.items.filter((e) => (e.note ?? '').includes('a forger'));
  assert.deepEqual(
    forged.map((e) => `${e.metadata.namespace}/${e.reason}`),
    [],
    "no event carries the record's own words",
  );

  // The walk finishes zone-b as its own: put back, released.
  assert.equal((await walk.run('zone-b', 'restoreReads')).phase, 'Successful');
  assert.deepEqual(
    await routedObjects(),
    zones.map((z) => z.vmcluster),
  );
  await sandbox.kubectl.run(['delete', 'vmcluster', 'scratch', '-n', team, '--wait=false']);
  assert.deepEqual(await leftovers(), []);
});

test('scenario 9: two Rollouts over the same four zones in opposite wave orders, budget 2, applied together: both finish, never more than 2 zones out, no read fails', async () => {
  const specOf = (wavesOrder: string[][], value: string | undefined): SpecDocument =>
    zoneSpec(value === undefined ? {} : { vmstorage: { extraArgs: { 'search.latencyOffset': value } } }, {
      zones: allZones,
      waves: wavesOrder,
      disruptionBudget: { maxZonesOut: 2 },
      readyTimeout: '4m',
    });
  const walks = [
    {
      name: 'east',
      waves: [
        ['zone-a', 'zone-b'],
        ['zone-c', 'zone-d'],
      ],
      value: '7s',
    },
    {
      name: 'west',
      waves: [
        ['zone-c', 'zone-d'],
        ['zone-a', 'zone-b'],
      ],
      value: '8s',
    },
  ];
  await sandbox.kubectl.apply(
    walks.map((w) => rolloutObject(w.name, specOf(w.waves, undefined), [{ pause: {} }])),
  );
  const firstRevision: Record<string, string | undefined> = {};
  for (const w of walks) {
    await eventually(
      `${w.name}: first revision Healthy`,
      async () => ((await rolloutState(kube, w.name)).status.phase === 'Healthy' ? true : undefined),
      { unless: rolloutCanProgress(kube, w.name) },
    );
    firstRevision[w.name] = (await rolloutState(kube, w.name)).status.currentPodHash;
  }
  const reads = startReadProber(sandbox.endpoint('VMAuth', vmauthName).url, readUser);
  const watcher = startRoutingWatcher(kube, zones, 300, zoneSpec({}, { zones: allZones }));
  const appliedAt = Date.now();
  // Both second revisions in one apply: they start their first waves at once.
  await sandbox.kubectl.apply(
    walks.map((w) =>
      rolloutObject(w.name, specOf(w.waves, w.value), stepsFor(specOf(w.waves, w.value), 'none')),
    ),
  );
  const finished: Record<string, number> = {};
  try {
    await eventually(
      'both walks Healthy',
      async () => {
        for (const w of walks) {
          const s = await rolloutState(kube, w.name);
          const newRevision = s.status.currentPodHash !== firstRevision[w.name];
          const walked = (s.status.currentStepIndex ?? 0) >= 6;
          if (
            newRevision &&
            walked &&
            s.status.phase === 'Healthy' &&
            s.status.currentPodHash === s.status.stableRS &&
            finished[w.name] === undefined
          ) {
            finished[w.name] = Math.round((Date.now() - appliedAt) / 1000);
          }
        }
        return Object.keys(finished).length === walks.length ? true : undefined;
      },
      {
        timeoutMs: 5 * 60_000,
        intervalMs: 1_000,
        // An aborted walk cannot finish any more: the wait fails at once, saying where each walk stands.
        unless: async () => {
          const states = await Promise.all(
            walks.map(async (w) => ({ w, s: await rolloutState(kube, w.name) })),
          );
          return states.some(({ s }) => s.status.abort === true)
            ? states.map(({ w, s }) => rolloutStanding(s, w.name)).join('; ')
            : undefined;
        },
      },
    );
  } finally {
    const read = await reads.stop();
    const seen = await watcher.stop();
    const mostOut = Math.max(0, ...seen.outOfReads.map((o: OutOfReads) => o.zones.length));
    figures['scenario 9 Healthy after (s)'] = JSON.stringify(finished);
    figures['scenario 9 reads failed/sent'] = `${read.failed}/${read.sent}`;
    figures['scenario 9 most zones out at once'] = mostOut;
    figures['scenario 9 out of reads'] = seen.outOfReads
      .map((o) => `+${Math.round((o.at - appliedAt) / 100) / 10}s [${o.zones.join(',')}]`)
      .join(' ');
    assert.equal(read.failed, 0, `reads failed: ${read.failures.join('; ')}`);
    assert.deepEqual(seen.violations, [], 'no zone routed while not ready');
    assert.ok(
      mostOut <= 2,
      `never more than the budget's 2 zones out: ${figures['scenario 9 out of reads']}`,
    );
  }
  // Each zone carries the change of the walk that reached it last; both walked every zone.
  const values = await Promise.all(zones.map((z) => specValue(kube, z.vmcluster)));
  assert.ok(
    values.every((v) => v === '7s' || v === '8s'),
    `every zone changed: ${values.join(', ')}`,
  );
  assert.deepEqual(
    await routedObjects(),
    zones.map((z) => z.vmcluster),
  );
  assert.deepEqual(await leftovers(), []);
});
