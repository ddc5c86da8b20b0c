// The GitOps loop's setup, shared by the e2e files of this folder: a sandbox with Argo CD (3 zones), the admin
// logged in to Argo CD's API, the app repository pushed, the Application created and its first sync Synced and
// Healthy (it adopts the VM objects and creates the Rollout, whose first revision runs no steps).

import assert from 'node:assert/strict';
import type { KubeObjects } from '../../../plugin/kube/objects.ts';
import { argocdAdmin } from '../../sandbox/argocd.ts';
import { type Sandbox, startSandbox } from '../../sandbox/helper.ts';
import { eventually, ns, sandboxKube } from '../step/harness.ts';
import { type AppRepo, applicationObject, createAppRepo } from './app-repo.ts';
import { ArgoCdApi, type ResourceRef } from './argocd-api.ts';

export const appName = 'victoria-metrics';
/** The Rollout the app repository holds (examples/gitops), as Argo CD's resource actions name it. */
export const rolloutName = 'victoria-metrics';
export const rolloutRef: ResourceRef = {
  group: 'argoproj.io',
  version: 'v1alpha1',
  kind: 'Rollout',
  namespace: ns,
  name: rolloutName,
};

export interface GitopsLoop {
  sandbox: Sandbox;
  kube: KubeObjects;
  api: ArgoCdApi;
  repo: AppRepo;
}

export async function startGitopsLoop(report: string[]): Promise<GitopsLoop> {
  const sandbox = await startSandbox({ zones: 3, podRestartSeconds: 2, plugin: true, argocd: true });
  report.push(`sandbox start with Argo CD: ${sandbox.state.startSeconds?.toFixed(1)} s`);
  const kube = sandboxKube(sandbox);
  const argocd = sandbox.state.argocd;
  assert.ok(argocd, 'the sandbox runs Argo CD');
  const api = new ArgoCdApi(argocd.url);
  await api.login(argocdAdmin.username, argocdAdmin.password);
  const repo = await createAppRepo(sandbox, kube);
  await sandbox.kubectl.apply([applicationObject(repo.url)]);
  await eventually(
    'the first sync: Synced and Healthy',
    async () => {
      const app = await api.application(appName);
      return app.status?.sync?.status === 'Synced' && app.status.health?.status === 'Healthy'
        ? true
        : undefined;
    },
    300_000,
    1000,
  );
  return { sandbox, kube, api, repo };
}
