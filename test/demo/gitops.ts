// `npm run demo -- --gitops`: the main job as a user lives it. The sandbox with Argo CD; the app repository of
// examples/gitops in a local Git server; a commit to overrideSpec; Argo CD's sync; the walk printed zone by zone
// as Argo CD shows it; each approval done with Argo CD's `resume` action (the UI's call). Flag: --keep.

import { rmSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { applicationObject, createAppRepo } from '../e2e/gitops/app-repo.ts';
import { ArgoCdApi } from '../e2e/gitops/argocd-api.ts';
import {
  ns,
  pluginStatuses,
  rolloutState,
  routedZones,
  sandboxKube,
  startReadProber,
} from '../e2e/step/harness.ts';
import { argocdAdmin } from '../sandbox/argocd.ts';
import { startSandbox } from '../sandbox/helper.ts';
import { readUser, vmauthName } from '../sandbox/manifests.ts';

export async function gitopsDemo(options: { keep: boolean }): Promise<number> {
  const started = Date.now();
  const say = (line: string) =>
    console.log(`${((Date.now() - started) / 1000).toFixed(0).padStart(4)} s  ${line}`);
  say('starting the sandbox with Argo CD (builds what is missing on the first run)…');
  const sandbox = await startSandbox({
    zones: 3,
    plugin: true,
    podRestartSeconds: 5,
    argocd: true,
    log: () => {},
  });
  let exitCode = 0;
  const repoWork: string[] = [];
  try {
    const argocd = sandbox.state.argocd;
    if (!argocd) throw new Error('the sandbox started without Argo CD');
    const kube = sandboxKube(sandbox);
    const api = new ArgoCdApi(argocd.url);
    await api.login(argocdAdmin.username, argocdAdmin.password);
    say(
      `Argo CD ${argocd.version} at ${argocd.url} (admin / ${argocdAdmin.password}); Git at ${argocd.gitUrl}`,
    );
    const repo = await createAppRepo(sandbox, kube);
    repoWork.push(repo.work);
    await sandbox.kubectl.apply([applicationObject(repo.url)]);
    say(`app repository ${repo.url} (working clone ${repo.work}); Application victoria-metrics created`);
    const app = () => api.application('victoria-metrics');
    const syncDeadline = Date.now() + 5 * 60_000;
    for (;;) {
      const a = await app();
      if (a.status?.sync?.status === 'Synced' && a.status.health?.status === 'Healthy') break;
      if (Date.now() > syncDeadline) {
        throw new Error(
          `the first sync did not end Synced and Healthy within 5 minutes: ${a.status?.sync?.status}/` +
            `${a.status?.health?.status}${a.status?.health?.message ? ` (${a.status.health.message})` : ''}`,
        );
      }
      await sleep(2000);
    }
    say('first sync done: Synced, Healthy');

    // The walk is over when the Rollout is Healthy on a new revision and Argo CD has synced the commit: Argo CD
    // shows the commit as its revision as soon as it compares it (OutOfSync), before it applies it.
    const before = (await rolloutState(kube, 'victoria-metrics')).status.currentPodHash;
    repo.editSpec((spec) => {
      spec.overrideSpec = { vmselect: { extraArgs: { 'search.maxQueryDuration': '45s' } } };
    });
    const commit = repo.commit('victoria-metrics: vmselect search.maxQueryDuration 45s');
    say(`git commit ${commit.slice(0, 7)} pushed: overrideSpec vmselect -search.maxQueryDuration=45s`);
    const prober = startReadProber(sandbox.endpoint('VMAuth', vmauthName).url, readUser);
    const ref = {
      group: 'argoproj.io',
      version: 'v1alpha1',
      kind: 'Rollout',
      namespace: ns,
      name: 'victoria-metrics',
    };
    let last = '';
    const deadline = Date.now() + 20 * 60_000;
    for (;;) {
      const a = await app();
      const rollout = await rolloutState(kube, 'victoria-metrics');
      const health = await api.health('victoria-metrics', 'Rollout', 'victoria-metrics');
      const routed = await routedZones(kube).catch(() => []);
      const step = rollout.status.currentStepIndex;
      const stepMessage = pluginStatuses(rollout)
        .filter((s) => s.index === step)
        .at(-1)?.message;
      const line =
        `Argo CD: ${a.status?.sync?.status}/${a.status?.health?.status} at ${a.status?.sync?.revision?.slice(0, 7)}` +
        ` | Rollout ${health?.status}${health?.message ? ` (${health.message})` : ''} step ${step}` +
        `${stepMessage ? ` (${stepMessage.slice(0, 110)})` : ''} | reads routed to ${routed.join(', ') || 'none'}`;
      if (line !== last)
        say(`${line} | queries ${prober.figures.sent} sent, ${prober.figures.failed} failed`);
      last = line;
      if (health?.status === 'Suspended') {
        await sleep(3000);
        say('approval: running the Argo CD action "resume" on the Rollout (as the UI does)');
        await api.runAction('victoria-metrics', ref, 'resume');
      }
      if (
        rollout.status.phase === 'Healthy' &&
        rollout.status.currentPodHash !== before &&
        rollout.status.stableRS === rollout.status.currentPodHash &&
        a.status?.sync?.revision === commit &&
        a.status.sync.status === 'Synced' &&
        a.status.health?.status === 'Healthy'
      ) {
        break;
      }
      if (rollout.status.abort || Date.now() > deadline) {
        say(`walk stopped: ${rollout.status.phase} ${rollout.status.message ?? ''}`);
        exitCode = 1;
        break;
      }
      await sleep(2000);
    }
    const figures = await prober.stop();
    say(`queries through vmauth during the walk: ${figures.sent} sent, ${figures.failed} failed`);
    if (exitCode === 0) say('all zones changed one at a time from one commit; Argo CD: Synced, Healthy');
  } catch (error) {
    exitCode = 1;
    console.error(`demo failed: ${error instanceof Error ? error.message : String(error)}`);
  } finally {
    if (options.keep) {
      sandbox.keep();
      say(
        `sandbox left running (Argo CD ${sandbox.state.argocd?.url}); stop it with ` +
          `VMZONES_SANDBOX_DIR=${sandbox.state.stateDir} npm run sandbox -- down`,
      );
    } else {
      for (const dir of repoWork) rmSync(dir, { recursive: true, force: true });
      await sandbox.stop();
      say('sandbox stopped');
    }
  }
  return exitCode;
}
