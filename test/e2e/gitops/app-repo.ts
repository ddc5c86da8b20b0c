// The app repository of the GitOps tests: examples/gitops/deploy as a user would copy it, in a bare repository
// the sandbox's Git server serves to Argo CD, with a working clone the tests commit to and push from (by path).
// The VictoriaMetrics objects are the sandbox's own (its VMClusters carry the ports of its zone processes), plus
// the one field the walks change, so that Git holds a value for it (docs/gitops.md: the negative control).

import { execFileSync } from 'node:child_process';
import { cpSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseDocument, stringify } from 'yaml';
import type { KubeObject, KubeObjects } from '../../../plugin/kube/objects.ts';
import { vmApiVersion } from '../../../plugin/vm/vmcluster.ts';
import { sandboxTemplateText } from '../../sandbox/analysis-templates.ts';
import type { Sandbox } from '../../sandbox/helper.ts';
import { repoRoot } from '../../sandbox/sandbox.ts';

export const repoName = 'victoria-metrics';
export const rolloutFile = join('deploy', 'rollout.yaml');
/** The value Git holds for the field the walks change (examples/gitops/deploy/vmclusters.yaml). */
export const gitLatencyOffset = '30s';

export class AppRepo {
  readonly bare: string;
  readonly work: string;
  readonly url: string;

  constructor(bare: string, work: string, url: string) {
    this.bare = bare;
    this.work = work;
    this.url = url;
  }

  git(args: string[]): string {
    return execFileSync(
      'git',
      ['-c', 'user.name=vmzones e2e', '-c', 'user.email=e2e@vmzones.invalid', ...args],
      {
        cwd: this.work,
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    ).trim();
  }

  /** Commits everything in the working clone and pushes it; returns the commit. */
  commit(message: string): string {
    this.git(['add', '-A']);
    this.git(['commit', '-q', '-m', message]);
    this.git(['push', '-q', 'origin', 'HEAD:main']);
    return this.git(['rev-parse', 'HEAD']);
  }

  /** Reverts a commit (a user's "undo" in Git) and pushes; returns the new commit. */
  revert(commit: string): string {
    this.git(['revert', '--no-edit', commit]);
    this.git(['push', '-q', 'origin', 'HEAD:main']);
    return this.git(['rev-parse', 'HEAD']);
  }

  /** Edits the spec document in deploy/rollout.yaml, then lets `vmzones render --write` update the steps. */
  editSpec(edit: (spec: Record<string, unknown>) => void): void {
    const path = join(this.work, rolloutFile);
    const doc = parseDocument(readFileSync(path, 'utf8'));
    const annotation = ['spec', 'template', 'metadata', 'annotations', 'vmzones.io/spec'];
    const specText = doc.getIn(annotation);
    if (typeof specText !== 'string') throw new Error(`${rolloutFile} has no vmzones.io/spec annotation`);
    const spec = parseDocument(specText).toJS() as Record<string, unknown>;
    edit(spec);
    doc.setIn(annotation, stringify(spec));
    writeFileSync(path, doc.toString());
    execFileSync(
      join(repoRoot, 'node_modules', 'node', 'bin', 'node'),
      [join(repoRoot, 'dist', 'vmzones.mjs'), 'render', '--write', rolloutFile, '--pause', 'manual'],
      { cwd: this.work, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] },
    );
  }
}

/** A live object as it would be written in Git: identity, labels and spec. */
function asInGit(object: KubeObject & { apiVersion: string; kind: string }): object {
  const { name, namespace, labels } = object.metadata;
  return {
    apiVersion: object.apiVersion,
    kind: object.kind,
    metadata: { name, namespace, ...(labels ? { labels } : {}) },
    spec: object.spec,
  };
}

function yamlDocs(objects: object[]): string {
  return objects.map((o) => stringify(o)).join('---\n');
}

/**
 * Creates the app repository from examples/gitops/deploy: the Rollout and the ClusterAnalysisTemplates as they
 * are there (the spec's drainGracePeriod shortened to 3 s for the test's wall time), the VM objects from the
 * sandbox. Returns the repository, pushed.
 */
export async function createAppRepo(sandbox: Sandbox, kube: KubeObjects): Promise<AppRepo> {
  const argocd = sandbox.state.argocd;
  if (!argocd) throw new Error('the sandbox runs no Argo CD: start it with {argocd: true}');
  const bare = join(argocd.gitRoot, `${repoName}.git`);
  execFileSync('git', ['init', '-q', '--bare', '--initial-branch=main', bare]);
  const work = mkdtempSync(join(tmpdir(), 'vmzones-gitops-'));
  execFileSync('git', ['clone', '-q', bare, work], { stdio: 'ignore' });
  const repo = new AppRepo(bare, work, `${argocd.gitUrl}/${repoName}.git`);
  cpSync(join(repoRoot, 'examples', 'gitops', 'deploy'), join(work, 'deploy'), { recursive: true });
  // The sandbox's vmselect Pods answer at /prometheus (test/sandbox/analysis-templates.ts).
  const templates = join(work, 'deploy', 'analysis-templates');
  for (const file of readdirSync(templates)) {
    writeFileSync(join(templates, file), sandboxTemplateText(readFileSync(join(templates, file), 'utf8')));
  }

  const list = async (kind: string) =>
    (await kube.list(vmApiVersion, kind, 'vm')).map((o) => ({ ...o, apiVersion: vmApiVersion, kind }));
  const clusters = (await list('VMCluster')).map((c) => {
    const vmstorage = (c.spec?.vmstorage ?? {}) as Record<string, unknown>;
    const extraArgs = (vmstorage.extraArgs ?? {}) as Record<string, string>;
    const spec = {
      ...c.spec,
      vmstorage: { ...vmstorage, extraArgs: { ...extraArgs, 'search.latencyOffset': gitLatencyOffset } },
    };
    return asInGit({ ...c, spec });
  });
  writeFileSync(join(work, 'deploy', 'vmclusters.yaml'), yamlDocs(clusters));
  writeFileSync(join(work, 'deploy', 'vmagent.yaml'), yamlDocs((await list('VMAgent')).map(asInGit)));
  writeFileSync(join(work, 'deploy', 'vmauth.yaml'), yamlDocs((await list('VMAuth')).map(asInGit)));
  writeFileSync(join(work, 'deploy', 'vmuser.yaml'), yamlDocs((await list('VMUser')).map(asInGit)));
  repo.editSpec((spec) => {
    spec.overrideSpec = { vmstorage: { extraArgs: { 'search.latencyOffset': gitLatencyOffset } } };
    (spec.vmauth as Record<string, unknown>).drainGracePeriod = '3s';
  });
  repo.commit('victoria-metrics: three zones, vmzones walks changes');
  return repo;
}

/** examples/gitops/argocd/application.yaml pointed at the sandbox's Git server. */
export function applicationObject(repoUrl: string): Record<string, unknown> {
  const doc = parseDocument(
    readFileSync(join(repoRoot, 'examples', 'gitops', 'argocd', 'application.yaml'), 'utf8'),
  );
  doc.setIn(['spec', 'source', 'repoURL'], repoUrl);
  return doc.toJS() as Record<string, unknown>;
}
