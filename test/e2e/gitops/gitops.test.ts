// The GitOps loop on real Argo CD (v3.2.11, test/sandbox/argocd.ts): the app repository of examples/gitops in a
// Git server on loopback, the Application of examples/gitops/argocd/application.yaml (automated sync, selfHeal,
// ignoreDifferences for manager vmzones), the real Argo Rollouts controller exec'ing vmzones. Every change
// reaches the cluster as a git commit that Argo CD syncs; approvals and aborts are Argo CD resource actions
// through its API, as the UI posts them. Nothing here applies the Rollout with kubectl.
// Run `npm run build` first. One sandbox (3 zones, Argo CD) for the whole file; the tests run in order.

import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { KubeObjects } from '../../../plugin/kube/objects.ts';
import type { Sandbox } from '../../sandbox/helper.ts';
import { loadgenStatus } from '../../sandbox/loadgen-client.ts';
import { readUser, vmauthName } from '../../sandbox/manifests.ts';
import { samplesLost } from '../reliability/support.ts';
import {
  cluster,
  eventually,
  pluginStatuses,
  type RolloutState,
  rolloutCanProgress,
  rolloutState,
  routedZones,
  startReadProber,
  startRoutingWatcher,
  sandboxZones as zones,
} from '../step/harness.ts';
import { type AppRepo, gitLatencyOffset } from './app-repo.ts';
import type { ArgoCdApi } from './argocd-api.ts';
import { appName, rolloutName, rolloutRef, startGitopsLoop } from './loop.ts';

/** Steps per zone (drainReads, apply, gate, restoreReads) plus the manual approval after it. */
const stepsPerZone = 5;
const pauseAfter = (zoneIndex: number) => zoneIndex * stepsPerZone + 4;

let sandbox: Sandbox;
let kube: KubeObjects;
let api: ArgoCdApi;
let repo: AppRepo;
const report: string[] = [];
const started = Date.now();

before(async () => {
  ({ sandbox, kube, api, repo } = await startGitopsLoop(report));
  // The first sync adopted the VM objects: Git's latencyOffset restarts every zone once.
  await eventually('every zone at the value in Git', async () =>
    (await Promise.all(zones.map((z) => latencyOffset(z.vmcluster)))).every((v) => v === gitLatencyOffset)
      ? true
      : undefined,
  );
});

after(async () => {
  report.push(`e2e wall time (sandbox start included): ${((Date.now() - started) / 1000).toFixed(0)} s`);
  console.log(`\n---- GitOps through Argo CD: figures ----\n${report.join('\n')}\n`);
  if (repo) rmSync(repo.work, { recursive: true, force: true });
  if (sandbox) await sandbox.stop();
});

async function latencyOffset(vmcluster: string): Promise<string | undefined> {
  const spec = (await cluster(kube, vmcluster)).spec as {
    vmstorage?: { extraArgs?: Record<string, string> };
  };
  return spec.vmstorage?.extraArgs?.['search.latencyOffset'];
}

/** Commits an overrideSpec change of the latencyOffset; returns the commit. */
function commitChange(value: string): string {
  repo.editSpec((spec) => {
    spec.overrideSpec = { vmstorage: { extraArgs: { 'search.latencyOffset': value } } };
  });
  return repo.commit(`victoria-metrics: vmstorage search.latencyOffset ${value}`);
}

async function syncedAt(commit: string, what: string): Promise<void> {
  await eventually(
    `Argo CD to sync ${commit.slice(0, 7)} (${what})`,
    async () => {
      const app = await api.application(appName);
      return app.status?.sync?.revision === commit && app.status.operationState?.phase === 'Succeeded'
        ? true
        : undefined;
    },
    120_000,
    1000,
  );
}

async function pausedAfter(zoneIndex: number): Promise<RolloutState> {
  return eventually(
    `the Rollout to pause for approval after zone ${zones[zoneIndex]?.zone}`,
    async () => {
      const s = await rolloutState(kube, rolloutName);
      return s.status.phase === 'Paused' && s.status.currentStepIndex === pauseAfter(zoneIndex)
        ? s
        : undefined;
    },
    240_000,
    1000,
  );
}

async function rolloutHealthy(revision: string): Promise<RolloutState> {
  return eventually(
    `the Rollout to be Healthy at ${revision}`,
    async () => {
      const s = await rolloutState(kube, rolloutName);
      return s.status.phase === 'Healthy' && s.status.stableRS === revision ? s : undefined;
    },
    { timeoutMs: 300_000, intervalMs: 1000, unless: rolloutCanProgress(kube, rolloutName) },
  );
}

async function appSyncedHealthy(timeoutMs = 120_000): Promise<void> {
  await eventually(
    'the Application to be Synced and Healthy',
    async () => {
      const app = await api.application(appName);
      return app.status?.sync?.status === 'Synced' && app.status.health?.status === 'Healthy'
        ? true
        : undefined;
    },
    timeoutMs,
    1000,
  );
}

async function resourceHealth(kind: string, name: string): Promise<string> {
  const health = await api.health(appName, kind, name);
  return `${health?.status ?? '?'}${health?.message ? ` (${health.message})` : ''}`;
}

/** Records every value each zone's VMCluster holds, in order, to prove no one wrote it back mid-walk. */
function startValueSampler() {
  const seen: Record<string, string[]> = Object.fromEntries(zones.map((z) => [z.zone, []]));
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      for (const z of zones) {
        const value = (await latencyOffset(z.vmcluster).catch(() => undefined)) ?? '(none)';
        const values = seen[z.zone] ?? [];
        if (values.at(-1) !== value) values.push(value);
        seen[z.zone] = values;
      }
      await sleep(300);
    }
  })();
  return {
    async stop(): Promise<Record<string, string[]>> {
      stopped = true;
      await loop;
      return seen;
    },
  };
}

/** drainReads started → restoreReads finished, per zone, from the Rollout's step statuses. */
function zoneSeconds(state: RolloutState): string {
  const statuses = pluginStatuses(state).filter((s) => s.operation === 'Run');
  return zones
    .map((z, i) => {
      const drain = statuses.find((s) => s.index === i * stepsPerZone) as { startedAt?: string } | undefined;
      const restore = statuses.find((s) => s.index === i * stepsPerZone + 3) as
        | { finishedAt?: string }
        | undefined;
      if (!drain?.startedAt || !restore?.finishedAt) return `${z.zone} ?`;
      return `${z.zone} ${(Date.parse(restore.finishedAt) - Date.parse(drain.startedAt)) / 1000} s`;
    })
    .join(', ');
}

async function historyLength(): Promise<number> {
  return (await api.application(appName)).status?.history?.length ?? 0;
}

test('a commit to overrideSpec: Argo CD syncs, the zones walk one at a time, the approvals are Argo CD resume actions; Synced and Healthy at the end, no read failed, no sample lost, nothing written back', async (t) => {
  const before = await rolloutState(kube, rolloutName);
  const historyBefore = await historyLength();
  const loadgenBefore = await loadgenStatus(sandbox);
  const prober = startReadProber(sandbox.endpoint('VMAuth', vmauthName).url, readUser);
  const watcher = startRoutingWatcher(kube, zones);
  const sampler = startValueSampler();
  t.after(() => Promise.all([prober.stop(), watcher.stop(), sampler.stop()]));
  const walkStarted = Date.now();
  const commit = commitChange('6s');
  await syncedAt(commit, 'the Rollout with the new spec');
  let hash = '';
  for (const [i, z] of zones.slice(0, -1).entries()) {
    const paused = await pausedAfter(i);
    if (i === 0) hash = paused.status.currentPodHash ?? '';
    assert.notEqual(hash, before.status.currentPodHash, 'a new revision is walking');
    assert.equal(paused.status.currentPodHash, hash);
    // What Argo CD shows at the approval: the Rollout Suspended, the zones walked hold the change that Git does
    // not have, and the Application is still Synced (ignoreDifferences), not written back (selfHeal).
    const rolloutHealth = await eventually(
      `Argo CD to show the Rollout Suspended after ${z.zone}`,
      async () => {
        const h = await api.health(appName, 'Rollout', rolloutName);
        return h?.status === 'Suspended' ? h : undefined;
      },
    );
    report.push(
      `approval after ${z.zone}: Rollout health in Argo CD ${rolloutHealth.status} (${rolloutHealth.message})`,
    );
    const app = await api.application(appName);
    report.push(`  Application: ${app.status?.sync?.status} / ${app.status?.health?.status}`);
    assert.equal(
      app.status?.sync?.status,
      'Synced',
      'the walked zones differ from Git only in fields vmzones owns',
    );
    for (const [j, other] of zones.entries()) {
      assert.equal(await latencyOffset(other.vmcluster), j <= i ? '6s' : gitLatencyOffset, other.vmcluster);
    }
    const actions = await api.actions(appName, rolloutRef);
    // The API omits `disabled` when it is false (protobuf JSON).
    const resume = actions.find((a) => a.name === 'resume');
    assert.ok(resume && resume.disabled !== true, `Argo CD offers resume: ${JSON.stringify(actions)}`);
    await api.runAction(appName, rolloutRef, 'resume');
    await eventually(`the walk of ${zones[i + 1]?.zone} to start`, async () => {
      const s = await rolloutState(kube, rolloutName);
      return (s.status.currentStepIndex ?? 0) > pauseAfter(i) ? true : undefined;
    });
  }
  const done = await rolloutHealthy(hash);
  const walkSeconds = (Date.now() - walkStarted) / 1000;
  await appSyncedHealthy();
  const reads = await prober.stop();
  const routing = await watcher.stop();
  const values = await sampler.stop();
  const to = (await loadgenStatus(sandbox)).lastSeq - 3;
  const samples = await samplesLost(sandbox, loadgenBefore.lastSeq + 1, to, loadgenBefore.failed);
  report.push(
    `walk through Argo CD: ${walkSeconds.toFixed(0)} s commit → Healthy (two approvals); per zone (drain → restore): ${zoneSeconds(done)}`,
    `  reads through vmauth: ${reads.failed} failed of ${reads.sent}; routed-while-not-ready: ${routing.violations.length} in ${routing.checks} checks; samples lost: ${samples.lost} (${samples.detail})`,
    `  values seen per zone: ${JSON.stringify(values)}`,
  );
  for (const z of zones) {
    assert.equal(await latencyOffset(z.vmcluster), '6s', `${z.vmcluster} holds the change`);
    assert.deepEqual(values[z.zone], [gitLatencyOffset, '6s'], `${z.zone}: changed once, never written back`);
  }
  assert.equal(reads.failed, 0, reads.failures.join('\n'));
  assert.deepEqual(routing.violations, []);
  assert.equal(samples.lost, 0, samples.detail);
  assert.equal(await historyLength(), historyBefore + 1, 'one sync for the commit, no self-heal sync');
  assert.deepEqual((await routedZones(kube)).sort(), zones.map((z) => z.zone).sort());
});

test('the Argo CD action abort during an approval rolls the changed zone back; reverting the commit in Git brings the Application back to Synced and Healthy', async () => {
  const before = await rolloutState(kube, rolloutName);
  const commit = commitChange('7s');
  await syncedAt(commit, 'the second change');
  const paused = await pausedAfter(0);
  assert.notEqual(paused.status.currentPodHash, before.status.currentPodHash);
  assert.equal(await latencyOffset('vm-zone-a'), '7s');
  await api.runAction(appName, rolloutRef, 'abort');
  const aborted = await eventually(
    'zone-a rolled back and the Rollout aborted',
    async () => {
      const s = await rolloutState(kube, rolloutName);
      const routed = await routedZones(kube);
      return s.status.abort && (await latencyOffset('vm-zone-a')) === '6s' && routed.includes('zone-a')
        ? s
        : undefined;
    },
    240_000,
    1000,
  );
  const health = await eventually('Argo CD to show the Rollout Degraded', async () => {
    const h = await api.health(appName, 'Rollout', rolloutName);
    return h?.status === 'Degraded' ? h : undefined;
  });
  report.push(
    `abort: Rollout ${aborted.status.phase}; Argo CD shows it ${health.status} (${health.message})`,
  );
  for (const z of zones) assert.equal(await latencyOffset(z.vmcluster), '6s', `${z.vmcluster} back at 6s`);

  const revert = repo.revert(commit);
  await syncedAt(revert, 'the revert');
  await rolloutHealthy(before.status.stableRS ?? '');
  await appSyncedHealthy();
  report.push(`after the revert in Git: Rollout Healthy, ${await resourceHealth('Rollout', rolloutName)}`);
});

test('a second commit while zone-b is in maintenance: the new walk takes over and every zone ends at the newer change', async (t) => {
  const prober = startReadProber(sandbox.endpoint('VMAuth', vmauthName).url, readUser);
  const watcher = startRoutingWatcher(kube, zones);
  t.after(() => Promise.all([prober.stop(), watcher.stop()]));
  const before = await rolloutState(kube, rolloutName);
  const first = commitChange('8s');
  await syncedAt(first, 'the first of two changes');
  const paused = await pausedAfter(0);
  assert.notEqual(paused.status.currentPodHash, before.status.currentPodHash);
  await api.runAction(appName, rolloutRef, 'resume');
  await eventually(
    'zone-b in maintenance (its reads drained)',
    async () => ((await routedZones(kube)).includes('zone-b') ? undefined : true),
    120_000,
    250,
  );
  const second = commitChange('9s');
  await syncedAt(second, 'the second change, mid-walk');
  let hash = '';
  for (const i of [0, 1]) {
    const s = await pausedAfter(i);
    if (i === 0) {
      assert.notEqual(s.status.currentPodHash, paused.status.currentPodHash, 'the newer revision walks');
      hash = s.status.currentPodHash ?? '';
    }
    assert.equal(s.status.currentPodHash, hash);
    await api.runAction(appName, rolloutRef, 'resume');
    await eventually('the next zone to start', async () =>
      ((await rolloutState(kube, rolloutName)).status.currentStepIndex ?? 0) > pauseAfter(i)
        ? true
        : undefined,
    );
  }
  await rolloutHealthy(hash);
  await appSyncedHealthy();
  const reads = await prober.stop();
  const routing = await watcher.stop();
  report.push(
    `new revision mid-walk: reads ${reads.failed} failed of ${reads.sent}; routed-while-not-ready ${routing.violations.length}`,
  );
  for (const z of zones)
    assert.equal(await latencyOffset(z.vmcluster), '9s', `${z.vmcluster} at the newer change`);
  assert.equal(reads.failed, 0, reads.failures.join('\n'));
  assert.deepEqual(routing.violations, []);
  assert.deepEqual((await routedZones(kube)).sort(), zones.map((z) => z.zone).sort());
});

test('negative control: without the ignoreDifferences, self-heal writes Git back into every zone at once, reads still routed to the restarting zones', async (t) => {
  const watcher = startRoutingWatcher(kube, zones, 200);
  t.after(() => watcher.stop());
  const app = await sandbox.kubectl.getJson<{ spec: { ignoreDifferences?: unknown[] } }>([
    'application',
    appName,
    '-n',
    'argocd',
  ]);
  assert.ok(app.spec.ignoreDifferences?.length, 'the Application had ignoreDifferences');
  await sandbox.kubectl.run([
    'patch',
    'application',
    appName,
    '-n',
    'argocd',
    '--type=json',
    '-p',
    '[{"op":"remove","path":"/spec/ignoreDifferences"}]',
  ]);
  const revertedAt: Record<string, number> = {};
  await eventually(
    'Argo CD to write Git’s value back into every VMCluster',
    async () => {
      for (const z of zones) {
        if (revertedAt[z.zone] === undefined && (await latencyOffset(z.vmcluster)) === gitLatencyOffset) {
          revertedAt[z.zone] = Date.now();
        }
      }
      return Object.keys(revertedAt).length === zones.length ? true : undefined;
    },
    120_000,
    250,
  );
  const times = Object.values(revertedAt);
  const spread = (Math.max(...times) - Math.min(...times)) / 1000;
  // Give the operator time to start restarting the zones while the VMUser still routes to them.
  await eventually(
    'every zone operational again',
    async () => {
      const states = await Promise.all(zones.map((z) => cluster(kube, z.vmcluster)));
      return states.every(
        (c) => (c.status as { updateStatus?: string } | undefined)?.updateStatus === 'operational',
      )
        ? true
        : undefined;
    },
    180_000,
    1000,
  );
  const routing = await watcher.stop();
  report.push(
    `negative control (no ignoreDifferences): Argo CD wrote ${gitLatencyOffset} back into ${zones.length} zones within ${spread.toFixed(1)} s; routed-while-not-ready: ${routing.violations.length} (first: ${routing.violations[0] ?? '-'})`,
  );
  assert.ok(spread < 15, `all zones written back together (spread ${spread} s)`);
  assert.ok(routing.violations.length > 0, 'reads were routed to zones restarting under Argo CD’s write');
});
