// What Argo CD shows of a vmzones walk, read through Argo CD's API (the resource tree the UI draws), with the health
// checks of manifests/argocd/argocd-cm-health.yaml (the sandbox's argocd-cm carries examples/gitops/argocd/
// argocd-cm.yaml, the same generated patch): each zone's VMCluster goes out of reads → changed → evidence → serving
// with the Rollout named; a gate that fails is Degraded with its zone and code on the AnalysisRun; the Rollout's own
// node keeps Argo CD's built-in check (docs/gitops.md "The Rollout's node"), and its events in Argo CD name the zone.
// Same loop as gitops.test.ts (a Git commit, automated sync, resume through Argo CD's action API), its own sandbox.
// Run `npm run build` first.

import assert from 'node:assert/strict';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseDocument } from 'yaml';
import type { KubeObjects } from '../../../plugin/kube/objects.ts';
import { zoneHealth } from '../../../plugin/observe/zone-health.ts';
import type { Sandbox } from '../../sandbox/helper.ts';
import { leftovers } from '../reliability/support.ts';
import {
  cluster,
  eventually,
  ns,
  type RolloutState,
  rolloutCanProgress,
  rolloutState,
  sandboxZones as zones,
} from '../step/harness.ts';
import { type AppRepo, rolloutFile } from './app-repo.ts';
import type { ArgoCdApi, ResourceNode } from './argocd-api.ts';
import { appName, rolloutName, rolloutRef, startGitopsLoop } from './loop.ts';

/** A gate that refuses zone-a (ConditionFailed), committed to Git beside the project's templates. */
const refusingTemplate = 'vmzones-e2e-refuse-zone-a';

let sandbox: Sandbox;
let kube: KubeObjects;
let api: ArgoCdApi;
let repo: AppRepo;
const report: string[] = [];
const started = Date.now();

before(async () => {
  ({ sandbox, kube, api, repo } = await startGitopsLoop(report));
});

after(async () => {
  report.push(`e2e wall time (sandbox start included): ${((Date.now() - started) / 1000).toFixed(0)} s`);
  console.log(`\n---- what Argo CD shows of a walk ----\n${report.join('\n')}\n`);
  if (repo) rmSync(repo.work, { recursive: true, force: true });
  if (sandbox) await sandbox.stop();
});

function commitChange(value: string, edit?: () => void): string {
  repo.editSpec((spec) => {
    spec.overrideSpec = { vmstorage: { extraArgs: { 'search.latencyOffset': value } } };
  });
  edit?.();
  return repo.commit(`victoria-metrics: vmstorage search.latencyOffset ${value}`);
}

/** Every health message each node of the tree showed, in order (consecutive repeats once), polled every 0.5 s. */
function startTreeRecorder() {
  const seen = new Map<string, string[]>();
  let stopped = false;
  let lastError: unknown;
  const key = (n: ResourceNode) => `${n.kind}/${n.name}`;
  const loop = (async () => {
    while (!stopped) {
      try {
        for (const node of await api.resourceTree(appName)) {
          const text = `${node.health?.status ?? '-'}: ${node.health?.message ?? ''}`;
          const list = seen.get(key(node)) ?? [];
          if (list.at(-1) !== text) list.push(text);
          seen.set(key(node), list);
        }
      } catch (err) {
        lastError = err;
      }
      await sleep(500);
    }
  })();
  return {
    seen,
    lastError: () => lastError,
    async stop() {
      stopped = true;
      await loop;
    },
  };
}

/** The index of the first message at or after `from` that matches, or -1. */
function firstAt(messages: readonly string[], pattern: RegExp, from: number): number {
  for (let i = from; i < messages.length; i++) if (pattern.test(messages[i] ?? '')) return i;
  return -1;
}

async function resumeAtEachApproval(until: () => Promise<RolloutState | undefined>): Promise<RolloutState> {
  let resumedAt = -1;
  return eventually(
    'the walk to end, resuming at each approval through Argo CD',
    async () => {
      const done = await until();
      if (done) return done;
      const s = await rolloutState(kube, rolloutName);
      if (s.status.phase === 'Paused' && s.status.currentStepIndex !== resumedAt) {
        const health = await api.health(appName, 'Rollout', rolloutName);
        if (health?.status === 'Suspended') {
          resumedAt = s.status.currentStepIndex ?? -1;
          await api.runAction(appName, rolloutRef, 'resume');
        }
      }
      return undefined;
    },
    { timeoutMs: 420_000, intervalMs: 1000, unless: rolloutCanProgress(kube, rolloutName) },
  );
}

test('a walk: each zone’s VMCluster in Argo CD goes out of reads → changed → evidence → serving, naming the Rollout; the same sentence as vmzones status', async () => {
  const before = await rolloutState(kube, rolloutName);
  const recorder = startTreeRecorder();
  const commit = commitChange('6s');
  const done = await resumeAtEachApproval(async () => {
    const s = await rolloutState(kube, rolloutName);
    return s.status.phase === 'Healthy' && s.status.stableRS !== before.status.stableRS ? s : undefined;
  });
  await sleep(2000); // the last serving message
  await recorder.stop();
  report.push(
    `walk of commit ${commit.slice(0, 7)} to revision ${done.status.stableRS}; health messages Argo CD showed, in order:`,
  );
  for (const [node, messages] of recorder.seen) {
    if (node.startsWith('VMCluster/') || node.startsWith('Rollout/')) {
      report.push(`  ${node}:\n${messages.map((m) => `    ${m}`).join('\n')}`);
    }
  }
  for (const z of zones) {
    const messages = recorder.seen.get(`VMCluster/${z.vmcluster}`) ?? [];
    const out = firstAt(
      messages,
      new RegExp(
        `^\\w+: ${z.zone}: out of reads for Rollout ${ns}/${rolloutName} since \\S+; draining since`,
      ),
      0,
    );
    const changed = firstAt(messages, /; applying the change since \S+; VMCluster: /, out);
    const evidence = firstAt(messages, /; waiting for evidence since \S+; VMCluster: operational$/, changed);
    const serving = firstAt(
      messages,
      new RegExp(
        `^Healthy: ${z.zone}: serving reads; holds the change of Rollout ${ns}/${rolloutName} \\(revision ${done.status.stableRS}\\)`,
      ),
      evidence,
    );
    assert.ok(
      out >= 0 && changed > out && evidence > changed && serving > evidence,
      `${z.zone}: out of reads → changed → evidence → serving, in that order; seen:\n${messages.join('\n')}\n(last API error: ${String(recorder.lastError())})`,
    );
    // vmzones status prints what Argo CD shows: the same function over the same object.
    const object = await cluster(kube, z.vmcluster);
    const now = zoneHealth(object, { nowSeconds: Date.now() / 1000 });
    const shown = await api.health(appName, 'VMCluster', z.vmcluster);
    assert.deepEqual(
      { status: shown?.status, message: shown?.message },
      now,
      `${z.zone}: Argo CD and vmzones status`,
    );
  }
  const rolloutMessages = recorder.seen.get(`Rollout/${rolloutName}`) ?? [];
  assert.ok(
    rolloutMessages.some((m) => m.startsWith('Suspended')),
    'the built-in Rollout check still says Suspended at approvals',
  );
});

test('a gate that fails: Argo CD shows the AnalysisRun Degraded with the zone and the code, the zone rolling back for the Rollout, the Rollout Degraded, its events naming the zone', async () => {
  const recorder = startTreeRecorder();
  writeFileSync(
    join(repo.work, 'deploy', 'analysis-templates', `${refusingTemplate}.yaml`),
    `apiVersion: argoproj.io/v1alpha1
kind: ClusterAnalysisTemplate
metadata:
  name: ${refusingTemplate}
spec:
  args:
    - name: zone
  metrics:
    - name: vmcluster-ready
      failureCondition: result.zone == "zone-a"
      provider:
        plugin:
          vmzones/gates:
            gate: vmclusterReady
            zone: "{{args.zone}}"
`,
  );
  commitChange('7s', () => {
    // zone-a's gate step uses the refusing template (render --write keeps steps whose zones did not change).
    const path = join(repo.work, rolloutFile);
    const doc = parseDocument(readFileSync(path, 'utf8'));
    const steps = doc.getIn(['spec', 'strategy', 'canary', 'steps']) as { items: { toJSON(): unknown }[] };
    const index = steps.items.findIndex((item) => {
      const step = item.toJSON() as { analysis?: { args?: { name: string; value: string }[] } };
      return step.analysis?.args?.some((a) => a.name === 'zone' && a.value === 'zone-a') === true;
    });
    assert.ok(index >= 0, 'zone-a has a gate step');
    doc.setIn(
      ['spec', 'strategy', 'canary', 'steps', index, 'analysis', 'templates', 0, 'templateName'],
      refusingTemplate,
    );
    writeFileSync(path, doc.toString());
  });
  const analysis = await eventually(
    'Argo CD to show zone-a’s gate Degraded with its code',
    async () =>
      (await api.resourceTree(appName)).find(
        (n) =>
          n.kind === 'AnalysisRun' &&
          n.health?.status === 'Degraded' &&
          /^zone-a: gate /.test(n.health.message ?? ''),
      ),
    { timeoutMs: 240_000, intervalMs: 1000 },
  );
  assert.match(
    analysis.health?.message ?? '',
    /^zone-a: gate vmcluster-ready Failed \(ConditionFailed\): failureCondition is true: /,
  );
  const rollout = await eventually(
    'Argo CD to show the Rollout Degraded',
    async () => {
      const h = await api.health(appName, 'Rollout', rolloutName);
      return h?.status === 'Degraded' ? h : undefined;
    },
    { timeoutMs: 60_000, intervalMs: 1000 },
  );
  const uid = (await rolloutState(kube, rolloutName)).metadata.uid;
  const events = await api.events(appName, { namespace: ns, name: rolloutName, uid });
  const vmzonesEvents = events.filter((e) => /zone zone-a/.test(e.message ?? ''));
  assert.ok(
    vmzonesEvents.length > 0,
    `the Rollout's events in Argo CD name zone-a: ${JSON.stringify(events.slice(-5))}`,
  );
  await eventually(
    'every zone rolled back or released, and serving',
    async () => ((await leftovers(kube)).length === 0 ? true : undefined),
    { timeoutMs: 240_000 },
  );
  await sleep(2000);
  await recorder.stop();
  const zoneA = recorder.seen.get('VMCluster/vm-zone-a') ?? [];
  report.push(
    `gate failure: AnalysisRun ${analysis.name}: ${analysis.health?.status}: ${analysis.health?.message}`,
    `  Rollout: ${rollout.status}: ${rollout.message}`,
    `  Rollout events naming zone-a in Argo CD: ${vmzonesEvents.map((e) => e.reason).join(', ')}`,
    `  VMCluster/vm-zone-a:\n${zoneA.map((m) => `    ${m}`).join('\n')}`,
  );
  assert.ok(
    zoneA.some((m) =>
      new RegExp(
        `zone-a: out of reads for Rollout ${ns}/${rolloutName} since \\S+; (rolling back|finishing in the vmzones reconciler) since`,
      ).test(m),
    ),
    `zone-a showed its rollback:\n${zoneA.join('\n')}`,
  );
  assert.match(zoneA.at(-1) ?? '', /^Healthy: /, 'zone-a ends Healthy, released');
});
