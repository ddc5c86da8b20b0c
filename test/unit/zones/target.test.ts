// Resolving a step (its config and the Rollout's spec document) before anything is touched.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { RolloutView } from '../../../plugin/rollouts/types.ts';
import { parseSpecDocument, SpecError } from '../../../plugin/zones/spec.ts';
import { parseStepConfig, readBalancerConfigs, resolveTarget } from '../../../plugin/zones/step/target.ts';

const specText = `
overrideSpec: {clusterVersion: v1.151.0-cluster}
vmauth: {vmuser: vmauth-read, drainGracePeriod: 20s}
vmagent: {vmagent: vmagent}
zones:
  zone-a: {vmcluster: vm-zone-a}
  zone-b: {vmcluster: vm-zone-b, vmselectHosts: [select-b.example.com]}
`;

function rollout(annotation: string | undefined): RolloutView {
  return {
    metadata: { name: 'vmzones', namespace: 'vm', uid: 'u-1' },
    spec: {
      template: {
        metadata: { annotations: annotation === undefined ? {} : { 'vmzones.io/spec': annotation } },
      },
      strategy: {},
    },
    status: { currentPodHash: 'abc123' },
  };
}

function problems(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof SpecError, `expected SpecError, got ${err}`);
    return err.problems.join('\n');
  }
  assert.fail('expected a SpecError');
}

test('the step config must be {zone, action} with a known action and nothing else', () => {
  assert.deepEqual(parseStepConfig({ zone: 'zone-a', action: 'apply' }), { zone: 'zone-a', action: 'apply' });
  assert.match(
    problems(() => parseStepConfig(undefined)),
    /step config: must be an object \{zone, action\} \(got none\)/,
  );
  const text = problems(() => parseStepConfig({ zone: '', action: 'deploy', extra: 1 }));
  assert.match(text, /step config\.zone: must be a zone name/);
  assert.match(text, /step config\.action: must be one of drainReads, apply, restoreReads \(got "deploy"\)/);
  assert.match(text, /step config\.extra: unknown field/);
});

test('a target resolves zone, VMCluster, balancer, timings and the acting revision', () => {
  const target = resolveTarget(rollout(specText), { zone: 'zone-b', action: 'drainReads' });
  assert.deepEqual(target.cluster, {
    apiVersion: 'operator.victoriametrics.com/v1beta1',
    kind: 'VMCluster',
    namespace: 'vm',
    name: 'vm-zone-b',
  });
  assert.deepEqual(target.who, { rollout: 'vm/vmzones', uid: 'u-1', revision: 'abc123' });
  assert.equal(target.drainGraceMs, 20_000);
  assert.equal(target.readyTimeoutMs, 15 * 60_000);
  assert.deepEqual(target.reads[0]?.ref, { kind: 'VMUser', namespace: 'vm', name: 'vmauth-read' });
  assert.deepEqual(
    target.reads[0]?.zones.map((z) => [z.zone, z.hosts]),
    [
      [
        'zone-a',
        ['vmselect-vm-zone-a.vm.svc', 'vmselect-vm-zone-a.vm.svc.cluster.local', 'vmselect-vm-zone-a.vm'],
      ],
      ['zone-b', ['select-b.example.com']],
    ],
  );
});

test('a missing annotation, a malformed document and an unknown zone are SpecErrors', () => {
  assert.match(
    problems(() => resolveTarget(rollout(undefined), { zone: 'zone-a', action: 'apply' })),
    /has no vmzones\.io\/spec/,
  );
  assert.match(
    problems(() => resolveTarget(rollout('zones: [1'), { zone: 'zone-a', action: 'apply' })),
    /YAML/,
  );
  assert.match(
    problems(() => resolveTarget(rollout(specText), { zone: 'zone-x', action: 'apply' })),
    /zone "zone-x" is not in zones \(known: zone-a, zone-b\)/,
  );
});

test('a helm-managed vmauth needs its pods; vmauths only go with a VMUser', () => {
  const text = problems(() =>
    parseSpecDocument(`
vmauth: {secret: {name: vmauth-config, key: auth.yml}, vmauths: [x]}
vmagent: {vmagent: vmagent}
zones: {zone-a: {vmcluster: a}}
`),
  );
  assert.match(text, /vmauth\.pods: a helm-managed vmauth \(secret or configMap\) needs pods/);
  assert.match(text, /vmauth\.vmauths: vmauths only applies with vmuser/);
});

test('a raw config balancer carries its key and pods in the spec namespace', () => {
  const spec = parseSpecDocument(`
namespace: monitoring
vmauth:
  configMap: {name: vmauth-config, key: auth.yml}
  pods: [{labelSelector: app=vmauth, port: 8427}]
  reloadEvidence: bestEffort
vmagent: {vmagent: vmagent}
zones: {zone-a: {vmcluster: a}}
`);
  assert.deepEqual(readBalancerConfigs(spec, 'monitoring'), [
    {
      ref: { kind: 'ConfigMap', namespace: 'monitoring', name: 'vmauth-config', key: 'auth.yml' },
      pods: [{ namespace: 'monitoring', labelSelector: 'app=vmauth', port: 8427 }],
      zones: [
        {
          zone: 'zone-a',
          namespace: 'monitoring',
          vmcluster: 'a',
          hosts: [
            'vmselect-a.monitoring.svc',
            'vmselect-a.monitoring.svc.cluster.local',
            'vmselect-a.monitoring',
          ],
        },
      ],
      reloadEvidence: 'bestEffort',
    },
  ]);
});
