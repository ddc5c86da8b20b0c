// The vmzones/step plugin on the sandbox: the real Argo Rollouts controller (v1.10.1) execs the built plugin
// (dist/vmzones.mjs) against a real API server, real vmauth/vmagent and one real VictoriaMetrics process per zone.
// Run `npm run build` first. One sandbox (3 zones) for the whole file. Each test works on Rollouts of its own
// and leaves every zone serving and released, so none needs another's state; the one check that reads what other
// tests did (RBAC against the recorded calls) is a subtest of the group that records them.

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseAllDocuments } from 'yaml';
import { silentLogger } from '../../../plugin/goplugin/index.ts';
import { kubeconfigConnection } from '../../../plugin/kube/kube-config.ts';
import type { KubeObjects } from '../../../plugin/kube/objects.ts';
import { WatchCache } from '../../../plugin/kube/watch-cache.ts';
import { watchedObjects } from '../../../plugin/kube/watched-objects.ts';
import type { StepResult } from '../../../plugin/rollouts/types.ts';
import { vmApiVersion } from '../../../plugin/vm/vmcluster.ts';
import { reconcilerWatchedKinds, ZoneReconciler } from '../../../plugin/zones/reconciler/reconciler.ts';
import { maintenanceOf } from '../../../plugin/zones/state/maintenance.ts';
import { inCallWatchedKinds } from '../../../plugin/zones/step/deps.ts';
import { createZoneStepPlugin } from '../../../plugin/zones/step-plugin.ts';
import { WaitError } from '../../sandbox/eventually.ts';
import { type Sandbox, startSandbox } from '../../sandbox/helper.ts';
import { kubeconfigArgs } from '../../sandbox/kubectl.ts';
import { readUser, vmauthName } from '../../sandbox/manifests.ts';
import {
  cluster,
  crashController,
  eventually,
  latencyOffset,
  ns,
  parkedRollout,
  pluginStatuses,
  type RolloutState,
  rolloutCanProgress,
  rolloutObject,
  rolloutState,
  rolloutView,
  routedZones,
  runStatus,
  sandboxKube,
  startReadProber,
  startRoutingWatcher,
  stepsFor,
  vmuser,
  vmzonesAnnotations,
  walkToPause,
  zoneSpec,
  sandboxZones as zones,
} from './harness.ts';
import { helmConfig, helmSecret, helmUser, startHelmVmauth } from './helm-vmauth.ts';
import { type KubeCall, recordingKube } from './recording-kube.ts';

let sandbox: Sandbox;
let kube: KubeObjects;
const calls: KubeCall[] = [];
const report: string[] = [];
const started = Date.now();

before(async () => {
  sandbox = await startSandbox({ zones: 3, podRestartSeconds: 2, plugin: true });
  kube = sandboxKube(sandbox);
});

after(async () => {
  report.push(`e2e wall time (sandbox start included): ${((Date.now() - started) / 1000).toFixed(0)} s`);
  console.log(`\n---- vmzones/step e2e figures ----\n${report.join('\n')}\n`);
  if (sandbox) await sandbox.stop();
});

const vmauthUrl = () => sandbox.endpoint('VMAuth', vmauthName).url;

async function specValue(vmcluster: string): Promise<unknown> {
  const spec = (await cluster(kube, vmcluster)).spec as {
    vmstorage?: { extraArgs?: Record<string, string> };
  };
  return spec.vmstorage?.extraArgs?.['search.latencyOffset'];
}

/** Applies a revision whose first step should fail; returns that step's message once the rollout aborted. */
async function revisionFails(name: string, spec: object | string, steps: object[]): Promise<string> {
  const before = await rolloutState(kube, name);
  await sandbox.kubectl.apply([rolloutObject(name, spec as never, steps)]);
  const failed = await eventually(`${name}: the new revision's first step to fail`, async () => {
    const s = await rolloutState(kube, name);
    const run = runStatus(s, 0);
    return s.status.currentPodHash !== before.status.currentPodHash &&
      run?.phase === 'Failed' &&
      s.status.abort
      ? s
      : undefined;
  });
  assert.match(failed.status.message ?? '', /Step Plugin 1 \(vmzones\/step\) failed: /);
  return runStatus(failed, 0)?.message ?? '';
}

test('bad input fails the step before anything changes: malformed spec, unknown zone, missing VMCluster, a zone leased by another Rollout', async () => {
  const name = 'refusals';
  const valid = zoneSpec({});
  await sandbox.kubectl.apply([rolloutObject(name, valid, [{ pause: {} }])]);
  await eventually(
    'the first revision to be Healthy',
    async () => ((await rolloutState(kube, name)).status.phase === 'Healthy' ? true : undefined),
    { unless: rolloutCanProgress(kube, name) },
  );
  const drain = (zone: string) => [
    { plugin: { name: 'vmzones/step', config: { zone, action: 'drainReads' } } },
  ];
  const clustersBefore = await Promise.all(zones.map((z) => cluster(kube, z.vmcluster)));
  const vmuserBefore = await vmuser(kube);

  const malformed = await revisionFails(
    name,
    { ...valid, zones: { 'zone-a': { vmcluster: 'Vm_Zone_A' } }, readyTimeout: 'soon' },
    drain('zone-a'),
  );
  assert.match(malformed, /invalid vmzones\.io\/spec: /);
  assert.match(malformed, /readyTimeout: invalid duration "soon"/);
  assert.match(malformed, /zones\.zone-a\.vmcluster: must be a Kubernetes object name/);

  const unknown = await revisionFails(name, valid, drain('zone-x'));
  assert.match(unknown, /zone "zone-x" is not in zones \(known: zone-a, zone-b, zone-c\)/);

  const missing = await revisionFails(
    name,
    { ...valid, zones: { ...(valid.zones as object), 'zone-d': { vmcluster: 'vm-zone-d' } } },
    drain('zone-d'),
  );
  assert.equal(missing, 'VMCluster vm/vm-zone-d of zone zone-d does not exist');

  // A lease that another Rollout really holds: that Rollout is mid-walk, parked before its zone-c steps (a lease
  // of a finished, superseded or deleted Rollout would be finished by the reconciler).
  const other = await parkedRollout(sandbox, kube, 'other', 'zone-c', valid);
  const otherRevision = other.status.currentPodHash ?? '';
  const lease = {
    rollout: 'vm/other',
    uid: other.metadata.uid,
    revision: otherRevision,
    since: '2026-01-01T00:00:00Z',
    zone: 'zone-c',
  };
  await kube.mergePatch(
    { apiVersion: vmApiVersion, kind: 'VMCluster', namespace: ns, name: 'vm-zone-c' },
    { metadata: { annotations: { 'vmzones.io/lease': JSON.stringify(lease) } } },
  );
  // drainReads waits for a live holder (issue 35 item 9), at most readyTimeout (short here), then fails LeaseHeld.
  const leased = await revisionFails(name, { ...valid, readyTimeout: '20s' }, drain('zone-c'));
  assert.match(
    leased,
    new RegExp(
      `^VMCluster vm/vm-zone-c \\(zone zone-c\\) is leased by Rollout vm/other \\(revision ${otherRevision}\\) since 2026-01-01T00:00:00Z: two Rollouts must not change a zone at once; wait for that Rollout to finish or abort it \\(waited since .*, readyTimeout 20s\\)$`,
    ),
  );
  await kube.mergePatch(
    { apiVersion: vmApiVersion, kind: 'VMCluster', namespace: ns, name: 'vm-zone-c' },
    { metadata: { annotations: { 'vmzones.io/lease': null } } },
  );

  // Nothing was touched: same generations, no vmzones annotations, the VMUser as it was.
  for (const [i, z] of zones.entries()) {
    const now = await cluster(kube, z.vmcluster);
    assert.equal(
      now.metadata.generation,
      clustersBefore[i]?.metadata.generation,
      `${z.vmcluster} generation`,
    );
    assert.deepEqual(vmzonesAnnotations(now), {}, `${z.vmcluster} annotations`);
  }
  assert.equal((await vmuser(kube)).metadata.resourceVersion, vmuserBefore.metadata.resourceVersion);
  await sandbox.kubectl.run(['delete', 'rollout', name, 'other', '-n', ns, '--wait=false']);
});

function describeStatuses(state: RolloutState): string {
  return pluginStatuses(state)
    .map((s) => `  [${s.index}] ${s.operation} ${s.phase}: ${JSON.stringify(s.status ?? {})}`)
    .join('\n');
}

test('three zones walk drainReads → apply → restoreReads under the real controller; a Run replayed after a controller crash changes nothing twice; reads never reach a changing zone', async (t) => {
  const name = 'zones';
  const first = zoneSpec({});
  await sandbox.kubectl.apply([rolloutObject(name, first, stepsFor(first, 'none'))]);
  await eventually(
    'the first revision (no steps run) to be Healthy',
    async () => ((await rolloutState(kube, name)).status.phase === 'Healthy' ? true : undefined),
    { unless: rolloutCanProgress(kube, name) },
  );
  const generations = await Promise.all(
    zones.map(async (z) => (await cluster(kube, z.vmcluster)).metadata.generation),
  );

  const prober = startReadProber(vmauthUrl(), readUser);
  const watcher = startRoutingWatcher(kube, zones);
  t.after(() => Promise.all([prober.stop(), watcher.stop()]));
  const walkStarted = Date.now();
  const spec = zoneSpec(latencyOffset('6s'));
  await sandbox.kubectl.apply([rolloutObject(name, spec, stepsFor(spec, 'none'))]);

  // Crash the controller once zone-a's apply has succeeded, and rewind the Rollout status to before drainReads
  // as if the controller had died before persisting both results: it must call Run for both again.
  const applied = await eventually('apply of zone-a to succeed', async () => {
    const s = await rolloutState(kube, name);
    return runStatus(s, 1)?.phase === 'Successful' ? s : undefined;
  });
  const drainBefore = runStatus(applied, 0);
  const zoneA = await cluster(kube, 'vm-zone-a');
  await crashController(sandbox, async () => {
    const s = await rolloutState(kube, name);
    const kept = pluginStatuses(s).filter((st) => !(st.operation === 'Run' && st.index <= 1));
    await sandbox.kubectl.run([
      'patch',
      'rollout',
      name,
      '-n',
      ns,
      '--subresource=status',
      '--type=merge',
      '-p',
      JSON.stringify({ status: { currentStepIndex: 0, canary: { stepPluginStatuses: kept } } }),
    ]);
  });
  const replayed = await eventually('the replayed drainReads and apply of zone-a', async () => {
    const s = await rolloutState(kube, name);
    return runStatus(s, 1)?.phase === 'Successful' ? s : undefined;
  });
  const drainAgain = runStatus(replayed, 0);
  const applyAgain = runStatus(replayed, 1);
  assert.equal(drainAgain?.executions, 1, 'drainReads ran again from scratch');
  assert.equal(
    drainAgain?.status?.drainedAt,
    drainBefore?.status?.drainedAt,
    'the replayed drainReads drained nothing again',
  );
  assert.match(applyAgain?.message ?? '', /\(already applied at /);
  const zoneAAfter = await cluster(kube, 'vm-zone-a');
  assert.equal(
    zoneAAfter.metadata.generation,
    zoneA.metadata.generation,
    'the replayed apply changed nothing',
  );
  assert.equal(
    zoneAAfter.metadata.annotations?.['vmzones.io/rollback'],
    zoneA.metadata.annotations?.['vmzones.io/rollback'],
    'the rollback record is the first apply’s',
  );

  const done = await eventually(
    'the three-zone rollout to be Healthy',
    async () => {
      const s = await rolloutState(kube, name);
      return s.status.phase === 'Healthy' && s.status.stableRS === s.status.currentPodHash ? s : undefined;
    },
    { timeoutMs: 300_000, intervalMs: 1000, unless: rolloutCanProgress(kube, name) },
  );
  const walkSeconds = (Date.now() - walkStarted) / 1000;
  const reads = await prober.stop();
  const routing = await watcher.stop();

  for (const [i, z] of zones.entries()) {
    const c = await cluster(kube, z.vmcluster);
    assert.equal(await specValue(z.vmcluster), '6s', `${z.zone} has the change`);
    assert.equal(c.metadata.generation, (generations[i] ?? 0) + 1, `${z.zone} was changed exactly once`);
    const annotations = vmzonesAnnotations(c);
    assert.deepEqual(
      Object.keys(annotations),
      ['vmzones.io/rollback'],
      `${z.zone}: lease and maintenance released`,
    );
    const record = JSON.parse(annotations['vmzones.io/rollback'] ?? '{}') as {
      phase?: string;
      revision?: string;
    };
    assert.equal(record.phase, 'applied');
    // The Rollout the controller passes to Run already carries the new revision's pod hash.
    assert.equal(record.revision, done.status.currentPodHash, `${z.zone}: revision recorded`);
  }
  assert.deepEqual(await routedZones(kube), ['zone-a', 'zone-b', 'zone-c'], 'every zone serves reads again');
  assert.equal(JSON.stringify(vmzonesAnnotations(await vmuser(kube))).includes('vmzones.io/drained'), false);

  const last = runStatus(done, 8);
  report.push(
    `three-zone walk: ${walkSeconds.toFixed(0)} s; queries through vmauth sent ${reads.sent}, failed ${reads.failed}, vmauth backend errors ${reads.backendErrors}; routing checks ${routing.checks}, violations ${routing.violations.length}`,
    `status document of the finished rollout's last step (restoreReads zone-c): ${JSON.stringify(last?.status)}`,
    `all step statuses:\n${describeStatuses(done)}`,
  );
  assert.deepEqual(reads.failures, [], 'no query through vmauth failed');
  assert.equal(reads.failed, 0);
  assert.equal(reads.backendErrors, 0, 'vmauth never sent a query to a zone that was down');
  assert.deepEqual(routing.violations, [], 'a routed zone was always operational');
  assert.ok(reads.sent > 100, `the prober ran throughout (${reads.sent} queries)`);
});

test('abort after zone two rolls zones one and two back and restores their reads only once they are operational', async (t) => {
  // Its own Rollout, starting from whatever the zones hold now: independent of the other tests' order.
  const name = 'aborted';
  const initial = zoneSpec({});
  await sandbox.kubectl.apply([rolloutObject(name, initial, [{ pause: {} }])]);
  await eventually(
    `${name}: the first revision to be Healthy`,
    async () => ((await rolloutState(kube, name)).status.phase === 'Healthy' ? true : undefined),
    { unless: rolloutCanProgress(kube, name) },
  );
  const valuesBefore = await Promise.all(zones.map((z) => specValue(z.vmcluster)));
  const cBefore = await cluster(kube, 'vm-zone-c');
  const prober = startReadProber(vmauthUrl(), readUser);
  const watcher = startRoutingWatcher(kube, zones);
  t.after(() => Promise.all([prober.stop(), watcher.stop()]));
  const spec = zoneSpec(latencyOffset('8s'));
  // Zone-a's steps 0..2, zone-b's 3..5, a manual pause (6), zone-c's 7..9.
  await walkToPause(sandbox, kube, name, spec, 6);
  assert.equal(await specValue('vm-zone-a'), '8s');
  assert.equal(await specValue('vm-zone-b'), '8s');
  const abortStarted = Date.now();
  await sandbox.rollouts(['abort', name, '-n', ns]);

  const aborted = await eventually('Abort of every completed step', async () => {
    const s = await rolloutState(kube, name);
    const aborts = pluginStatuses(s).filter((st) => st.operation === 'Abort');
    return aborts.length === 6 ? s : undefined;
  });
  const aborts = pluginStatuses(aborted).filter((st) => st.operation === 'Abort');
  assert.deepEqual(
    aborts.map((a) => a.index),
    [5, 4, 3, 2, 1, 0],
    'newest first',
  );
  assert.ok(
    aborts.every((a) => a.phase === 'Successful'),
    describeStatuses(aborted),
  );
  assert.match(aborts.find((a) => a.index === 4)?.message ?? '', /zone zone-b: rollback requested/);

  await eventually(
    'zones a and b rolled back, reads restored, zones released',
    async () => {
      for (const [i, z] of zones.slice(0, 2).entries()) {
        const c = await cluster(kube, z.vmcluster);
        if ((await specValue(z.vmcluster)) !== valuesBefore[i]) return undefined;
        if (Object.keys(vmzonesAnnotations(c)).length > 0) return undefined;
        if (c.metadata.labels?.['vmzones.io/pending'] !== undefined) return undefined;
      }
      const routed = await routedZones(kube);
      return routed.length === 3 ? true : undefined;
    },
    240_000,
    1000,
  );
  const rollbackSeconds = (Date.now() - abortStarted) / 1000;
  const reads = await prober.stop();
  const routing = await watcher.stop();
  const c = await cluster(kube, 'vm-zone-c');
  assert.equal(c.metadata.generation, cBefore.metadata.generation, 'zone-c was never touched');
  assert.equal(await specValue('vm-zone-c'), valuesBefore[2]);
  report.push(
    `abort after zone two: rollback of two zones took ${rollbackSeconds.toFixed(0)} s after the abort; queries sent ${reads.sent}, failed ${reads.failed}, vmauth backend errors ${reads.backendErrors}; routing checks ${routing.checks}, violations ${routing.violations.length}`,
    `abort statuses:\n${describeStatuses(aborted)}`,
  );
  assert.deepEqual(reads.failures, []);
  assert.equal(reads.backendErrors, 0);
  assert.deepEqual(routing.violations, []);
});

/** Wraps the sandbox client: the first guarded spec write to `vmcluster` meets a concurrent write (a real 409). */
function conflictingKube(inner: KubeObjects, vmcluster: string): KubeObjects & { conflicts: number } {
  const wrapped = {
    conflicts: 0,
    get: inner.get.bind(inner),
    list: inner.list.bind(inner),
    create: inner.create.bind(inner),
    async mergePatch(...args: Parameters<KubeObjects['mergePatch']>) {
      const [ref, patch, resourceVersion, options] = args;
      if (
        wrapped.conflicts === 0 &&
        ref.name === vmcluster &&
        patch.spec &&
        resourceVersion &&
        !options?.dryRun
      ) {
        wrapped.conflicts++;
        await inner.mergePatch(ref, {
          metadata: { annotations: { 'e2e.vmzones.io/concurrent-writer': 'x' } },
        });
      }
      return inner.mergePatch(...args);
    },
  };
  return wrapped;
}

async function untilDone(
  what: string,
  run: () => Promise<StepResult>,
  timeoutMs = 60_000,
): Promise<StepResult> {
  let lastMessage: string | undefined;
  try {
    return await eventually(
      what,
      async () => {
        const result = await run();
        if (result.phase === 'Failed') throw new Error(`${what} failed: ${result.message}`);
        lastMessage = `${result.phase}: ${result.message ?? ''}`;
        return result.phase === 'Successful' ? result : undefined;
      },
      timeoutMs,
      1000,
    );
  } catch (error) {
    // A step still Running at the deadline says why in its message: the failure carries it.
    if (error instanceof WaitError && error.detail === undefined && lastMessage !== undefined) {
      throw new WaitError(what, error.kind, `the step last said ${lastMessage}`, error.elapsedMs);
    }
    throw error;
  }
}

const serviceAccount = 'system:serviceaccount:argo-rollouts:argo-rollouts';
const resources: Record<string, string> = {
  VMCluster: 'vmclusters.operator.victoriametrics.com',
  VMSingle: 'vmsingles.operator.victoriametrics.com',
  VLCluster: 'vlclusters.operator.victoriametrics.com',
  VMUser: 'vmusers.operator.victoriametrics.com',
  VMAuth: 'vmauths.operator.victoriametrics.com',
  Pod: 'pods',
  Event: 'events.events.k8s.io',
  Secret: 'secrets',
  ConfigMap: 'configmaps',
};

function canI(verb: string, resource: string, namespace: string, name?: string): Promise<boolean> {
  const args = [
    ...kubeconfigArgs(sandbox.state.kubeconfig),
    'auth',
    'can-i',
    verb,
    name ? `${resource}/${name}` : resource,
  ];
  args.push('--as', serviceAccount, ...(namespace === '' ? ['--all-namespaces'] : ['-n', namespace]));
  // Exit 0 and "yes" when allowed, exit 1 and "no" when denied; anything else is a broken check.
  return new Promise((resolve, reject) => {
    execFile(sandbox.state.binaries.kubectl, args, (error, stdout, stderr) => {
      const answer = stdout.trim();
      if (answer === 'yes' && !error) resolve(true);
      else if (answer.startsWith('no')) resolve(false);
      else reject(new Error(`kubectl ${args.join(' ')}: ${stderr || error?.message}`));
    });
  });
}

/** The step plugin in this process, its own reconciler off (the test ticks one), short in-call waits. */
function inProcessPlugin(objects: KubeObjects) {
  return createZoneStepPlugin({ kube: objects, reconciler: false, logger: silentLogger, inCallWaitMs: 5000 });
}

/** Ticks the reconciler until the VMCluster carries no pending work (the handoff finished). */
async function reconcilerFinishes(
  reconciler: ZoneReconciler,
  vmcluster: string,
  what: string,
  timeoutMs: number,
  intervalMs: number,
): Promise<void> {
  await eventually(
    `the reconciler to ${what}`,
    async () => {
      await reconciler.tick();
      const c = await cluster(kube, vmcluster);
      return c.metadata.labels?.['vmzones.io/pending'] === undefined ? true : undefined;
    },
    timeoutMs,
    intervalMs,
  );
}

// The in-process tests record the plugin's Kubernetes calls; the RBAC check that ends this group compares the
// role with what they used. Subtests of one test, so the group runs whole and in this order whatever is filtered.
test('in the plugin, on the real API server, its Kubernetes calls recorded; then the RBAC check against them', async (t) => {
  await t.test(
    'in the plugin, on the real API server: an invalid merged spec fails with nothing changed; a 409 is retried in the call; Abort hands the zone to the reconciler, which rolls back and restores reads once operational',
    async (t) => {
      const recorded = recordingKube(kube, calls);
      const plugin = inProcessPlugin(recorded);
      // The reconciler as main.ts wires it: its per-pass reads from watch caches on the real API server (each
      // cache lists, then watches: both recorded for the RBAC check below).
      const kc = kubeconfigConnection([sandbox.state.kubeconfig]);
      const watched = watchedObjects(recorded, {
        kubeConfig: kc,
        kinds: reconcilerWatchedKinds,
        changeKinds: inCallWatchedKinds,
        namespaces: [''],
        cache: (kind, namespace, metadataOnly) => {
          for (const verb of ['list', 'watch'] as const)
            calls.push({ verb, kind: kind.kind, namespace, name: '' });
          return new WatchCache({ kubeConfig: kc, kind, namespace, metadataOnly });
        },
      });
      await watched.start();
      t.after(() => watched.stop());
      const reconciler = new ZoneReconciler({ kube: recorded, watched: watched.kube, logger: silentLogger });
      const ctx = (action: string) => ({
        pluginName: 'vmzones/step',
        config: { zone: 'zone-c', action },
        status: undefined,
      });
      const specOf = (override: object) =>
        zoneSpec(override, { vmauth: { vmuser: 'vmauth-read', drainGracePeriod: '1s' } });
      const parked = await parkedRollout(sandbox, kube, 'inproc', 'zone-c', specOf({}));
      const view = (override: object) => ({
        ...parked,
        spec: { ...parked.spec, template: rolloutView('inproc', '', '', specOf(override)).spec.template },
      });
      const cValue = await specValue('vm-zone-c');
      // The change record names the field the patch changes: the one key where vmstorage.extraArgs exists (the walk
      // test above leaves latencyOffset set), the whole extraArgs object where it does not, as when this group runs
      // alone on a fresh sandbox (an object patch over nothing creates it whole: plugin/zones/state/merge-patch.ts).
      const cArgs = ((await cluster(kube, 'vm-zone-c')).spec as { vmstorage?: { extraArgs?: object } })
        .vmstorage?.extraArgs;
      const changedField =
        cArgs === undefined ? 'spec.vmstorage.extraArgs' : 'spec.vmstorage.extraArgs.search.latencyOffset';
      const watcher = startRoutingWatcher(kube, zones);
      t.after(() => watcher.stop());

      await untilDone('drainReads zone-c', () => plugin.run(view({}), ctx('drainReads')));
      assert.deepEqual(await routedZones(kube), ['zone-a', 'zone-b']);
      await reconciler.tick();
      assert.deepEqual(
        maintenanceOf(await kube.list(vmApiVersion, 'VMCluster', ns)).map((z) => [
          z.zone,
          z.vmcluster,
          z.namespace,
        ]),
        [['zone-c', 'vm-zone-c', 'vm']],
        'the maintenance metric comes from the annotation',
      );

      const before = await cluster(kube, 'vm-zone-c');
      const invalid = await plugin.run(view({ vmstorage: { replicaCount: 'many' } }), ctx('apply'));
      assert.equal(invalid.phase, 'Failed');
      assert.match(
        invalid.message ?? '',
        /the API server rejects the overrides for VMCluster vm\/vm-zone-c \(zone zone-c\): .*replicaCount.*; nothing was changed/,
      );
      let now = await cluster(kube, 'vm-zone-c');
      assert.equal(now.metadata.generation, before.metadata.generation);
      assert.equal(
        now.metadata.annotations?.['vmzones.io/rollback'],
        before.metadata.annotations?.['vmzones.io/rollback'],
      );

      // A concurrent write between read and write (a real 409) is re-read and retried inside the call: the change
      // lands exactly once, computed from what the VMCluster holds after the other write.
      const racing = conflictingKube(recorded, 'vm-zone-c');
      const racingPlugin = createZoneStepPlugin({ kube: racing, reconciler: false, logger: silentLogger });
      const applied = await racingPlugin.run(view(latencyOffset('9s')), ctx('apply'));
      assert.equal(racing.conflicts, 1, 'the API server refused the first write with 409');
      assert.equal(applied.phase, 'Successful', applied.message);
      // Field names and how they changed, never values (issue 35 item 10).
      assert.deepEqual(applied.status?.changed, {
        [changedField]: cValue === undefined ? 'set' : 'changed',
      });
      now = await cluster(kube, 'vm-zone-c');
      assert.equal(now.metadata.generation, (before.metadata.generation ?? 0) + 1, 'changed exactly once');
      assert.equal(
        now.metadata.annotations?.['e2e.vmzones.io/concurrent-writer'],
        'x',
        'the other write kept',
      );
      const replay = await plugin.run(view(latencyOffset('9s')), ctx('apply'));
      assert.match(replay.message ?? '', /\(already applied at /);
      assert.equal((await cluster(kube, 'vm-zone-c')).metadata.generation, now.metadata.generation);

      const abortApply = await plugin.abort(view(latencyOffset('9s')), ctx('apply'));
      const abortDrain = await plugin.abort(view(latencyOffset('9s')), ctx('drainReads'));
      assert.equal(abortApply.phase, 'Successful');
      // The field it puts back, never its value (issue 35 item 10).
      assert.match(
        abortApply.message ?? '',
        new RegExp(
          `rollback requested: .*puts back the earlier values of ${changedField.replaceAll('.', '\\.')} on VMCluster vm/vm-zone-c`,
        ),
      );
      assert.doesNotMatch(abortApply.message ?? '', new RegExp(`${changedField.replaceAll('.', '\\.')}=`));
      assert.match(abortDrain.message ?? '', /already handed to the vmzones reconciler/);
      // The plugin process the controller started runs its reconciler too: whichever gets there first finishes the
      // zone, the other finds nothing to do (all writes are guarded).
      await reconcilerFinishes(
        reconciler,
        'vm-zone-c',
        'roll zone-c back and restore its reads',
        120_000,
        2000,
      );
      assert.equal(await specValue('vm-zone-c'), cValue);
      assert.deepEqual(
        ((await cluster(kube, 'vm-zone-c')).spec as { vmstorage?: { extraArgs?: object } }).vmstorage
          ?.extraArgs,
        cArgs,
        'extraArgs as it was (absent if it was)',
      );
      assert.deepEqual(vmzonesAnnotations(await cluster(kube, 'vm-zone-c')), {});
      assert.deepEqual(await routedZones(kube), ['zone-a', 'zone-b', 'zone-c']);
      await reconciler.tick();
      assert.deepEqual(maintenanceOf(await kube.list(vmApiVersion, 'VMCluster', ns)), []);
      const routing = await watcher.stop();
      assert.deepEqual(routing.violations, []);
    },
  );

  await t.test(
    'Terminate (promote --full while a step runs) hands "restore reads, release the lease" to the reconciler',
    async () => {
      const plugin = inProcessPlugin(kube);
      const reconciler = new ZoneReconciler({ kube, logger: silentLogger });
      const view = await parkedRollout(
        sandbox,
        kube,
        'term',
        'zone-a',
        zoneSpec({}, { vmauth: { vmuser: 'vmauth-read', drainGracePeriod: '1s' } }),
      );
      const ctx = (action: string) => ({
        pluginName: 'vmzones/step',
        config: { zone: 'zone-a', action },
        status: undefined,
      });
      await untilDone('drainReads zone-a', () => plugin.run(view, ctx('drainReads')));
      assert.deepEqual(await routedZones(kube), ['zone-b', 'zone-c']);
      const terminated = await plugin.terminate(view, ctx('restoreReads'));
      assert.equal(terminated.phase, 'Successful');
      assert.match(
        terminated.message ?? '',
        /stopped waiting \(full promotion\); the vmzones reconciler restores reads once VMCluster vm\/vm-zone-a is operational/,
      );
      await reconcilerFinishes(reconciler, 'vm-zone-a', 'restore zone-a and release it', 60_000, 1000);
      assert.deepEqual(await routedZones(kube), ['zone-a', 'zone-b', 'zone-c']);
      assert.deepEqual(vmzonesAnnotations(await cluster(kube, 'vm-zone-a')), {});
    },
  );

  await t.test(
    'two read balancers, the operator’s VMUser and a helm-managed vmauth: the zone leaves both (the raw config in a Secret) and comes back to both, byte for byte, comments kept',
    async (t) => {
      const vmclusters = zones.map((z) => z.vmcluster);
      const helm = await startHelmVmauth(sandbox, kube, vmclusters);
      try {
        const recorded = recordingKube(kube, calls);
        const plugin = inProcessPlugin(recorded);
        const spec = zoneSpec(
          {},
          {
            vmauth: [
              { vmuser: 'vmauth-read', drainGracePeriod: '1s' },
              {
                secret: helmSecret,
                pods: [{ labelSelector: 'app=helm-vmauth', port: 'http' }],
                drainGracePeriod: '1s',
              },
            ],
          },
        );
        const view = await parkedRollout(sandbox, kube, 'helm', 'zone-b', spec);
        const ctx = (action: string) => ({
          pluginName: 'vmzones/step',
          config: { zone: 'zone-b', action },
          status: undefined,
        });
        const prober = startReadProber(helm.url, helmUser, '/api/v1/query');
        const operatorProber = startReadProber(vmauthUrl(), readUser);
        const watcher = startRoutingWatcher(kube, zones);
        t.after(() => Promise.all([prober.stop(), operatorProber.stop(), watcher.stop()]));
        const original = helmConfig(vmclusters);
        const secretText = async () => {
          const s = (await kube.get({
            apiVersion: 'v1',
            kind: 'Secret',
            namespace: ns,
            name: helmSecret.name,
          })) as unknown as {
            data: Record<string, string>;
          };
          return Buffer.from(s.data[helmSecret.key] ?? '', 'base64').toString('utf8');
        };

        const drained = await untilDone('drainReads zone-b (helm)', () =>
          plugin.run(view, ctx('drainReads')),
        );
        assert.match(
          drained.message ?? '',
          /taken out of VMUser vm\/vmauth-read, Secret vm\/helm-vmauth key auth\.yml at /,
        );
        assert.deepEqual(await routedZones(kube), ['zone-a', 'zone-c'], 'out of the VMUser too');
        const without = await secretText();
        assert.equal(
          without,
          original.replace(
            '        - "http://vmselect-vm-zone-b.vm.svc:8481/select/0/prometheus/"   # second zone, quoted\n',
            '',
          ),
        );
        for (const line of original.split('\n').filter((l) => l.includes('#') && !l.includes('zone-b'))) {
          assert.ok(without.includes(line), `kept: ${line}`);
        }
        await sleep(2000); // queries keep flowing through the helm vmauth without zone-b

        await untilDone('restoreReads zone-b (helm)', () => plugin.run(view, ctx('restoreReads')));
        assert.equal(await secretText(), original, 'byte for byte the config as it was');
        assert.deepEqual(await routedZones(kube), ['zone-a', 'zone-b', 'zone-c'], 'back in the VMUser');
        assert.deepEqual(
          vmzonesAnnotations(await cluster(kube, 'vm-zone-b')),
          {},
          'lease and maintenance released',
        );
        const reads = await prober.stop();
        const operatorReads = await operatorProber.stop();
        const routing = await watcher.stop();
        report.push(
          `two balancers: helm-managed vmauth queries sent ${reads.sent}, failed ${reads.failed}, backend errors ${reads.backendErrors}; operator vmauth sent ${operatorReads.sent}, failed ${operatorReads.failed}, backend errors ${operatorReads.backendErrors}`,
        );
        assert.equal(reads.failed, 0);
        assert.equal(operatorReads.failed, 0);
        assert.equal(operatorReads.backendErrors, 0);
        assert.deepEqual(routing.violations, []);
      } finally {
        await helm.stop();
      }
    },
  );

  await t.test(
    'manifests/kustomize/cluster-wide/rbac.yaml grants the controller’s ServiceAccount what the plugin used, and nothing more',
    async () => {
      const manifest = readFileSync(
        new URL('../../../manifests/kustomize/cluster-wide/rbac.yaml', import.meta.url),
        'utf8',
      )
        .replaceAll('VMAUTH_NAMESPACE', ns)
        .replaceAll('VMAUTH_CONFIG_SECRET', helmSecret.name);
      await sandbox.kubectl.run(['apply', '-f', '-'], manifest);
      const used = new Map<string, KubeCall>();
      for (const call of calls) {
        if (call.kind === 'Rollout') continue; // the controller's own role covers Rollouts
        used.set(
          `${call.verb} ${call.kind} ${call.namespace} ${call.verb === 'list' ? '' : call.name}`,
          call,
        );
      }
      assert.ok(
        used.size >= 6,
        `the in-process tests recorded the plugin's calls (${[...used.keys()].join('; ')})`,
      );
      for (const call of used.values()) {
        const resource = resources[call.kind];
        assert.ok(resource, `unexpected kind ${call.kind}`);
        const name = call.verb === 'list' ? undefined : call.name;
        assert.ok(
          await canI(call.verb, resource, call.namespace, name),
          `allowed: ${call.verb} ${resource} ${call.namespace} ${name ?? ''}`,
        );
      }
      // And nothing more: every verb the step ClusterRole grants was used by the plugin.
      const stepRole = parseAllDocuments(manifest)
        .map(
          (d) =>
            d.toJS() as {
              kind?: string;
              metadata?: { name?: string };
              rules?: { resources: string[]; verbs: string[] }[];
            },
        )
        .find((d) => d.kind === 'ClusterRole' && d.metadata?.name === 'vmzones-step');
      assert.ok(stepRole?.rules, 'the vmzones-step ClusterRole');
      const kindOf = Object.fromEntries(
        Object.entries(resources).map(([kind, resource]) => [resource.split('.')[0], kind]),
      );
      // Granted for a path this sandbox cannot take, each with the unit test that takes it: the storage StatefulSet
      // is read only where a pod's change may be deferred (operator >= v0.75.1, node IDs in both maintenance lists),
      // and the sandbox's operator is v0.74.1, the newest the Go module proxy serves (test/unit/vm/zone-readiness.test.ts).
      const unexercised = new Set(['get statefulsets']);
      const unusedGrants: string[] = [];
      for (const rule of stepRole.rules) {
        for (const resource of rule.resources) {
          for (const verb of rule.verbs) {
            const grant = `${verb} ${resource}`;
            const usedHere = [...used.values()].some(
              (call) => call.verb === verb && call.kind === kindOf[resource],
            );
            if (!usedHere) unusedGrants.push(grant);
            assert.ok(usedHere || unexercised.has(grant), `granted but never used: ${grant}`);
          }
        }
      }
      // The exemptions stay exactly those unused here: one used here again must leave the list.
      assert.deepEqual(unusedGrants.sort(), [...unexercised].sort(), 'the unexercised grants');
      for (const [verb, resource, name] of [
        ['delete', 'vmclusters.operator.victoriametrics.com', 'vm-zone-a'],
        ['create', 'vmclusters.operator.victoriametrics.com', undefined],
        ['update', 'vmusers.operator.victoriametrics.com', 'vmauth-read'],
        ['patch', 'vmauths.operator.victoriametrics.com', 'vmauth'],
        ['list', 'secrets', undefined],
        ['get', 'secrets', 'some-other-secret'],
        ['patch', 'configmaps', 'some-other-config'],
        ['delete', 'pods', 'helm-vmauth-0'],
      ] as const) {
        assert.equal(
          await canI(verb, resource, ns, name),
          false,
          `denied: ${verb} ${resource} ${name ?? ''}`,
        );
      }
    },
  );
});

test('negative control: the probes do see a zone that restarts while it serves reads (a change without vmzones)', async (t) => {
  const prober = startReadProber(vmauthUrl(), readUser);
  const watcher = startRoutingWatcher(kube, zones);
  t.after(() => Promise.all([prober.stop(), watcher.stop()]));
  await sleep(1000);
  await kube.mergePatch(
    { apiVersion: vmApiVersion, kind: 'VMCluster', namespace: ns, name: 'vm-zone-a' },
    { spec: latencyOffset('7s') },
  );
  const generation = (await cluster(kube, 'vm-zone-a')).metadata.generation ?? 0;
  await eventually('zone-a to restart and be operational again', async () => {
    const c = await cluster(kube, 'vm-zone-a');
    const status = c.status as { updateStatus?: string; observedGeneration?: number } | undefined;
    return status?.updateStatus === 'operational' && (status.observedGeneration ?? 0) >= generation
      ? true
      : undefined;
  });
  await sleep(1000);
  const reads = await prober.stop();
  const routing = await watcher.stop();
  report.push(
    `negative control (zone-a changed while serving reads): queries sent ${reads.sent}, failed ${reads.failed}, vmauth backend errors ${reads.backendErrors}; routing violations ${routing.violations.length}`,
  );
  assert.ok(reads.failed + reads.backendErrors > 0, 'the prober notices reads sent to a restarting zone');
  assert.ok(routing.violations.length > 0, 'the watcher notices a routed zone that is not operational');
});
