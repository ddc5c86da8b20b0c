// `vmzones lint --cluster`: each linted Rollout's zones read in the cluster, drifted ones said with the wording and
// the how-to-walk advice of `vmzones status` (one decision: plugin/observe/zone-states.ts). Without --cluster lint
// reads files only. The cluster is the in-memory API double; the oracle is the objects' fields, set here.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { stringify } from 'yaml';
import { parseFlags } from '../../../plugin/cli/args.ts';
import { commandOptions, commands } from '../../../plugin/cli/commands.ts';
import { run as lint } from '../../../plugin/cli/lint-command.ts';
import type { LiveTarget } from '../../../plugin/cli/lint-live.ts';
import { readStatus } from '../../../plugin/cli/status.ts';
import { KubeError, type KubeObject } from '../../../plugin/kube/objects.ts';
import { renderSteps } from '../../../plugin/zones/render.ts';
import { parseSpecDocument } from '../../../plugin/zones/spec.ts';
import { MemoryKube } from '../kube/memory-kube.ts';
import { run as cli } from './run.ts';

type ApiObject = KubeObject & { apiVersion: string; kind: string };

const specDocument = {
  namespace: 'vm',
  overrideSpec: { clusterVersion: 'v1.110.0' },
  vmauth: { vmuser: 'vmauth-read' },
  vmagent: { vmagent: 'vmagent' },
  zones: {
    'zone-a': { vmcluster: 'vm-zone-a' },
    'zone-b': { vmcluster: 'vm-zone-b' },
    'zone-c': { vmcluster: 'vm-zone-c', cluster: 'eu-c' },
  },
};
const steps = renderSteps(parseSpecDocument(stringify(specDocument)), { pauseBetweenZones: 'none' });

function rolloutObject(status: Record<string, unknown>): ApiObject {
  return {
    apiVersion: 'argoproj.io/v1alpha1',
    kind: 'Rollout',
    metadata: { name: 'walk', namespace: 'vm', uid: 'uid-walk', generation: 1 },
    spec: {
      template: { metadata: { annotations: { 'vmzones.io/spec': stringify(specDocument) } } },
      strategy: { canary: { steps } },
    },
    status: { observedGeneration: 1, canary: { stepPluginStatuses: [] }, ...status },
  };
}

/** The first revision of a Rollout created over running zones: Healthy at once, none of its steps ran. */
const createdOverRunningZones = {
  currentPodHash: 'rev1',
  stableRS: 'rev1',
  currentStepIndex: steps.length,
  phase: 'Healthy',
};

function vmcluster(name: string, clusterVersion: string): ApiObject {
  return {
    apiVersion: 'operator.victoriametrics.com/v1beta1',
    kind: 'VMCluster',
    metadata: { name, namespace: 'vm', generation: 2 },
    spec: { clusterVersion, vmselect: { replicaCount: 2 } },
    status: { updateStatus: 'operational', observedGeneration: 2 },
  };
}

/** The manifest lint reads: the same Rollout, without status. */
const manifest = stringify({
  apiVersion: 'argoproj.io/v1alpha1',
  kind: 'Rollout',
  metadata: { name: 'walk', namespace: 'vm' },
  spec: (({ spec }) => spec)(rolloutObject({})),
});

interface World {
  hub: MemoryKube;
  remote: MemoryKube;
  target: LiveTarget;
}

/** zone-a runs an older version, zone-b carries the spec, zone-c (in cluster eu-c) runs an older version. */
function world(status: Record<string, unknown> = createdOverRunningZones): World {
  const hub = new MemoryKube()
    .put(rolloutObject(status))
    .put(vmcluster('vm-zone-a', 'v1.102.0'))
    .put(vmcluster('vm-zone-b', 'v1.110.0'));
  const remote = new MemoryKube().put(vmcluster('vm-zone-c', 'v1.102.0'));
  const clusters = {
    client: async (cluster: string | undefined) => {
      if (cluster === undefined) return hub;
      if (cluster === 'eu-c') return remote;
      throw new Error(`unexpected cluster ${cluster}`);
    },
    registration: async () => undefined,
  };
  return { hub, remote, target: { kube: hub, clusters, namespace: 'default' } };
}

const lintCommand = commands.find((c) => c.name === 'lint');
assert.ok(lintCommand);

async function runLint(argv: string[], target: LiveTarget | undefined, text = manifest) {
  const result = { code: -1, out: '', err: '' };
  const flags = parseFlags(argv, commandOptions(lintCommand as NonNullable<typeof lintCommand>), false);
  result.code = await lint(
    flags,
    {
      program: 'vmzones',
      io: {
        out: (t) => {
          result.out += t;
        },
        err: (t) => {
          result.err += t;
        },
        readFile: (path) => {
          assert.equal(path, 'rollout.yaml');
          return text;
        },
        writeFile: () => assert.fail('lint writes no file'),
      },
    },
    target,
  );
  return result;
}

test('lint --cluster: a Rollout created over running zones names each drifted zone in the words of status', async () => {
  const { target, hub } = world();
  const r = await runLint(['--spec', 'rollout.yaml', '--cluster'], target);
  assert.equal(r.code, 0, 'drift is the zones behind the files, not a problem of the files');
  // The oracle for the wording: what `vmzones status` says of the same zones.
  const status = await readStatus(hub, 'vm', 'walk', target.clusters);
  const zoneA = status.zones.find((z) => z.zone === 'zone-a');
  assert.deepEqual(zoneA?.drift, { rollout: 'vm/walk', revision: 'rev1', fields: ['spec.clusterVersion'] });
  const lines = r.err.trimEnd().split('\n');
  assert.equal(lines.length, 2, r.err);
  assert.match(
    lines[0] ?? '',
    /^rollout\.yaml: Rollout walk: warning: zone zone-a \(VMCluster vm\/vm-zone-a\): drifted from the stable spec of Rollout vm\/walk \(revision rev1\): spec\.clusterVersion not as its spec document says; no step brings it there until a new revision walks the zone/,
  );
  assert.match(
    lines[1] ?? '',
    /^rollout\.yaml: Rollout walk: warning: zone zone-c \(eu-c:VMCluster vm\/vm-zone-c\): drifted from the stable spec of Rollout vm\/walk \(revision rev1\): spec\.clusterVersion/,
    'a zone in a registered cluster is judged by its object there',
  );
  assert.match(
    r.out,
    /^rollout\.yaml: Rollout walk: ok \(3 zones: .*; in the cluster: zone-a, zone-c drifted/,
  );

  const json = await runLint(['--spec', 'rollout.yaml', '--cluster', '-o', 'json'], target);
  const report = JSON.parse(json.out).reports[0];
  assert.deepEqual(
    report.drifted.map((d: { zone: string; drift: unknown }) => [d.zone, d.drift]),
    [
      ['zone-a', { rollout: 'vm/walk', revision: 'rev1', fields: ['spec.clusterVersion'] }],
      ['zone-c', { rollout: 'vm/walk', revision: 'rev1', fields: ['spec.clusterVersion'] }],
    ],
  );
  assert.match(report.drifted[0].message, /a new revision walks the zone/);
});

test('vmzones status judges a serving zone of a registered cluster by its object there (drift too)', async () => {
  const { target, hub } = world();
  const status = await readStatus(hub, 'vm', 'walk', target.clusters);
  const zoneC = status.zones.find((z) => z.zone === 'zone-c');
  assert.equal(zoneC?.state, 'serving');
  assert.deepEqual(zoneC?.drift?.fields, ['spec.clusterVersion']);
});

test('lint without --cluster reads no cluster and says nothing of drift', async () => {
  const { hub, target } = world();
  const r = await runLint(['--spec', 'rollout.yaml'], target);
  assert.equal(r.code, 0, r.err);
  assert.deepEqual(hub.reads, [], 'no Kubernetes call');
  assert.doesNotMatch(r.out + r.err, /drift|cluster/);
  const json = JSON.parse((await runLint(['--spec', 'rollout.yaml', '-o', 'json'], target)).out);
  assert.equal(json.reports[0].drifted, undefined);
});

test('lint refuses the kubectl flags without --cluster (exit 2), so an offline lint never reads a cluster by accident', async () => {
  for (const flag of [
    ['--context', 'prod'],
    ['-n', 'vm'],
    ['--kubeconfig', '/k'],
    ['--clusters-namespace', 'x'],
  ]) {
    const r = await cli(['lint', '--spec', 'rollout.yaml', ...flag], { 'rollout.yaml': manifest });
    assert.equal(r.code, 2, flag.join(' '));
    assert.match(r.err, /is for --cluster/, flag.join(' '));
  }
});

test('lint --cluster mid-walk or aborted: no zone is judged against the new revision', async () => {
  for (const status of [
    { currentPodHash: 'rev2', stableRS: 'rev1', currentStepIndex: 2, phase: 'Progressing' },
    { currentPodHash: 'rev2', stableRS: 'rev1', currentStepIndex: 0, phase: 'Degraded', abort: true },
  ]) {
    const r = await runLint(['--spec', 'rollout.yaml', '--cluster'], world(status).target);
    assert.equal(r.code, 0, r.err);
    assert.doesNotMatch(r.err, /drifted/, JSON.stringify(status));
    assert.match(r.out, /in the cluster: no zone drifted/);
  }
});

test('lint --cluster: a Rollout not in the cluster yet is a warning; one that cannot be read fails the lint', async () => {
  const empty = world();
  empty.hub.objects.clear();
  const missing = await runLint(['--spec', 'rollout.yaml', '--cluster'], empty.target);
  assert.equal(missing.code, 0, missing.err);
  assert.match(missing.err, /warning: Rollout vm\/walk is not in the cluster: no zone to judge yet/);

  const denied = world();
  denied.hub.failNext.set(
    'Rollout',
    new KubeError('forbidden', 'rollouts.argoproj.io "walk" is forbidden', 403),
  );
  const refused = await runLint(['--spec', 'rollout.yaml', '--cluster'], denied.target);
  assert.equal(refused.code, 1);
  assert.match(refused.err, /- in the cluster: Rollout vm\/walk: rollouts\.argoproj\.io "walk" is forbidden/);

  const unreachable = world();
  unreachable.remote.failNext.set('VMCluster', new KubeError('unavailable', 'connect ECONNREFUSED'));
  const partial = await runLint(['--spec', 'rollout.yaml', '--cluster'], unreachable.target);
  assert.equal(partial.code, 1, 'a zone the check could not read is no pass');
  assert.match(partial.err, /- in the cluster: zone zone-c cannot be read: connect ECONNREFUSED/);
});

test('lint --cluster reads the Rollout in -n/the context namespace when the manifest sets none', async () => {
  const { target } = world();
  const unnamespaced = manifest.replace(/\n {2}namespace: vm\n/, '\n');
  assert.notEqual(unnamespaced, manifest);
  const r = await runLint(
    ['--spec', 'rollout.yaml', '--cluster'],
    { ...target, namespace: 'vm' },
    unnamespaced,
  );
  assert.equal(r.code, 0, r.err);
  assert.match(r.out, /in the cluster: zone-a, zone-c drifted/);
});
