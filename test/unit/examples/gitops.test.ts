// examples/gitops is the app repository users copy: its Rollout must lint clean and carry exactly the steps
// `vmzones render --write` writes, its ClusterAnalysisTemplates must be the project's, and its Application must
// ignore the field manager vmzones writes with (the GitOps e2e, test/e2e/gitops, runs it on real Argo CD).

import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { parse } from 'yaml';
import { fieldManager } from '../../../plugin/kube/objects.ts';
import { repoRoot } from '../../sandbox/sandbox.ts';
import { run } from '../cli/run.ts';

const example = join(repoRoot, 'examples', 'gitops');
const read = (path: string) => readFileSync(join(example, path), 'utf8');

test('the example Rollout lints clean and its steps are what render --write --pause manual writes', async () => {
  const rollout = read('deploy/rollout.yaml');
  const lint = await run(['lint', '--spec', 'rollout.yaml'], { 'rollout.yaml': rollout });
  assert.equal(lint.code, 0, `${lint.out}${lint.err}`);
  const render = await run(['render', '--write', 'rollout.yaml', '--pause', 'manual'], {
    'rollout.yaml': rollout,
  });
  assert.equal(render.code, 0, render.err);
  assert.equal(render.files['rollout.yaml'], rollout, 'render --write would change the example');
});

test('the example ClusterAnalysisTemplates are the project’s analysis-templates/, byte for byte', () => {
  const ours = readdirSync(join(repoRoot, 'analysis-templates')).sort();
  assert.deepEqual(readdirSync(join(example, 'deploy', 'analysis-templates')).sort(), ours);
  for (const file of ours) {
    assert.equal(
      read(join('deploy', 'analysis-templates', file)),
      readFileSync(join(repoRoot, 'analysis-templates', file), 'utf8'),
      file,
    );
  }
});

test('the example Application ignores what field manager vmzones writes, also when syncing, with self-heal on', () => {
  const app = parse(read('argocd/application.yaml')) as {
    spec: {
      syncPolicy: { automated: { selfHeal: boolean }; syncOptions: string[] };
      ignoreDifferences: { group: string; kind: string; managedFieldsManagers: string[] }[];
    };
  };
  assert.equal(app.spec.syncPolicy.automated.selfHeal, true);
  assert.ok(app.spec.syncPolicy.syncOptions.includes('RespectIgnoreDifferences=true'));
  const ignored = app.spec.ignoreDifferences.map(
    (d) => `${d.group}/${d.kind}:${d.managedFieldsManagers.join(',')}`,
  );
  assert.deepEqual(ignored.sort(), [
    `operator.victoriametrics.com/VMCluster:${fieldManager}`,
    `operator.victoriametrics.com/VMUser:${fieldManager}`,
  ]);
});

test('the example argocd-cm is the generated vmzones health patch: zone kinds, the other VictoriaMetrics kinds, AnalysisRun', () => {
  // What the checks say is tested in Lua by test/unit/observe/zone-health-lua.test.ts; here: which kinds get one.
  const cm = parse(read('argocd/argocd-cm.yaml')) as { data: Record<string, string> };
  const health = Object.keys(cm.data)
    .filter((k) => k.startsWith('resource.customizations.health.'))
    .map((k) => k.replace('resource.customizations.health.', ''));
  assert.deepEqual(health.sort(), [
    'argoproj.io_AnalysisRun',
    ...['VLCluster', 'VMAgent', 'VMAuth', 'VMCluster', 'VMSingle', 'VMUser'].map(
      (k) => `operator.victoriametrics.com_${k}`,
    ),
  ]);
  assert.equal(cm.data['resource.customizations.health.argoproj.io_Rollout'], undefined);
});
