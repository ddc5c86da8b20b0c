// test/sandbox/start-steps.ts and the teardown order of test/sandbox/sandbox.ts: a start's steps are timed where
// they begin and end (side by side ones too, and a failed one), on a fake clock; a teardown stops clients before
// API servers before etcd; the CRD bundles split by kind.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { crdsByPlural, stopTiers, withoutDescriptions } from '../../sandbox/sandbox.ts';
import { type StartStep, StartSteps } from '../../sandbox/start-steps.ts';
import { FakeClock } from '../fake-clock.ts';

function stepsOn(clock: FakeClock, seen: StartStep[] = []): StartSteps {
  return new StartSteps({ now: () => clock.now().getTime() }, (step) => seen.push({ ...step }));
}

test('steps one after the other: each begins where the last ended and lasts what it slept', async () => {
  const clock = new FakeClock();
  const seen: StartStep[] = [];
  const steps = stepsOn(clock, seen);
  clock.advance(300);
  assert.equal(await steps.time('etcd healthy', () => clock.sleep(1200).then(() => 'up')), 'up');
  await steps.time('kube-apiserver ready', () => clock.sleep(4450));
  assert.deepEqual(steps.steps, [
    { step: 'etcd healthy', at: 0.3, seconds: 1.2 },
    { step: 'kube-apiserver ready', at: 1.5, seconds: 4.5 },
  ]);
  assert.deepEqual(seen, steps.steps, 'each step is reported as it ends');
  assert.equal(steps.elapsed(), 6);
});

test('steps side by side keep their own beginnings and lengths, in the order they began', async () => {
  const clock = new FakeClock();
  const steps = stepsOn(clock);
  const gate = Promise.withResolvers<void>();
  const cluster = steps.time('cluster-b: CRDs established', async () => {
    await gate.promise;
  });
  clock.advance(2000);
  await steps.time('apply namespaces, config, CRDs', () => clock.sleep(3000));
  gate.resolve();
  await cluster;
  assert.deepEqual(steps.steps, [
    { step: 'cluster-b: CRDs established', at: 0, seconds: 5 },
    { step: 'apply namespaces, config, CRDs', at: 2, seconds: 3 },
  ]);
});

test('a step that throws is recorded as failed with its length, and the error goes on', async () => {
  const clock = new FakeClock();
  const seen: StartStep[] = [];
  const steps = stepsOn(clock, seen);
  await assert.rejects(
    steps.time('CRDs established', async () => {
      await clock.sleep(180_000);
      throw new Error('timed out waiting for the condition');
    }),
    /timed out waiting for the condition/,
  );
  assert.deepEqual(seen, [{ step: 'CRDs established', at: 0, seconds: 180, failed: true }]);
});

test('teardown tiers: clients first, side by side, then the API servers, then etcd', () => {
  const d = (name: string, pid: number) => ({ name, pid, log: `${name}.log`, ports: [] });
  const daemons = [
    d('etcd', 1),
    d('kube-apiserver', 2),
    d('kube-controller-manager', 3),
    d('cluster-b-etcd', 4),
    d('cluster-b-kube-apiserver', 5),
    d('cluster-b-vm-dataplane', 6),
    d('rollouts-controller', 7),
    d('loadgen', 8),
  ];
  assert.deepEqual(
    stopTiers(daemons).map((tier) => tier.map((r) => r.name)),
    [
      ['kube-controller-manager', 'cluster-b-vm-dataplane', 'rollouts-controller', 'loadgen'],
      ['kube-apiserver', 'cluster-b-kube-apiserver'],
      ['etcd', 'cluster-b-etcd'],
    ],
  );
  assert.deepEqual(stopTiers([d('etcd', 1)]), [[d('etcd', 1)]], 'no empty tier');
});

test('crdsByPlural: the CRDs of a bundle by plural name, other documents left out', () => {
  const crd = (plural: string) =>
    `apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: ${plural}.operator.victoriametrics.com\nspec:\n  names:\n    plural: ${plural}`;
  const bundle = [
    crd('vmclusters'),
    'apiVersion: v1\nkind: Namespace\nmetadata:\n  name: vmagents.operator.victoriametrics.com',
    crd('vlagents'),
  ].join('\n---\n');
  const found = crdsByPlural(`---\n${bundle}\n`);
  assert.deepEqual([...found.keys()], ['vmclusters', 'vlagents']);
  assert.equal(found.get('vlagents'), crd('vlagents'));
});

test('withoutDescriptions drops the schemas\' description texts and keeps a field named "description"', () => {
  const crd = {
    spec: {
      versions: [
        {
          schema: {
            openAPIV3Schema: {
              description: 'Rollout is ...',
              properties: {
                description: { description: 'a field of that name', type: 'string' },
                spec: { description: 'the spec', type: 'object', required: ['selector'] },
              },
            },
          },
        },
      ],
    },
  };
  assert.deepEqual(withoutDescriptions(crd), {
    spec: {
      versions: [
        {
          schema: {
            openAPIV3Schema: {
              properties: {
                description: { type: 'string' },
                spec: { type: 'object', required: ['selector'] },
              },
            },
          },
        },
      ],
    },
  });
});
