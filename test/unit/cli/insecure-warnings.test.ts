// Issue 21 item 8: settings that turn TLS verification off (`tlsClientConfig.insecure: true` in a cluster Secret,
// `pods.tls.insecureSkipVerify: true` in a gate) are allowed but said: in the log on use, in the gate's message,
// in `vmzones status` and in `vmzones lint` (as a warning that does not fail the lint).

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { readStatus } from '../../../plugin/cli/status.ts';
import { formatStatusTable } from '../../../plugin/cli/status-table.ts';
import { createGatesProvider } from '../../../plugin/gates/provider.ts';
import { clusterClients } from '../../../plugin/kube/cluster-registry.ts';
import type { AnalysisRunView, MetricView } from '../../../plugin/rollouts/types.ts';
import { MemoryKube } from '../kube/memory-kube.ts';
import { clusterSecret } from '../zones/memory-cluster.ts';
import { run, spec } from './run.ts';
import { analysisRuns, now, rollout, specDocument, vmclusters, vmuser } from './status-fixtures.ts';

const insecureConfig = { bearerToken: 'token-value', tlsClientConfig: { insecure: true } };
const verifiedConfig = { bearerToken: 'token-value', tlsClientConfig: { caData: 'Q0E=' } };

test('a registered cluster without TLS verification is warned about each time its client is built', async () => {
  const hub = new MemoryKube();
  hub.put(clusterSecret('eu-b', 'https://eu-b.example:6443', insecureConfig));
  hub.put(clusterSecret('eu-c', 'https://eu-c.example:6443', verifiedConfig));
  const warnings: string[] = [];
  const clusters = clusterClients({
    hub,
    namespace: 'argo-rollouts',
    connect: () => new MemoryKube(),
    onInsecure: (message) => warnings.push(message),
  });
  await clusters.client('eu-b');
  await clusters.client('eu-b'); // the same client: said once
  await clusters.client('eu-c');
  assert.equal(warnings.length, 1);
  assert.match(
    warnings[0] ?? '',
    /^cluster eu-b \(Secret argo-rollouts\/cluster-eu-b\): tlsClientConfig\.insecure is true, so the API server's certificate is not verified/,
  );
  assert.ok(!warnings.join('').includes('token-value'));
});

test('vmzones status names a zone cluster whose TLS is not verified', async () => {
  const hub = new MemoryKube();
  const remote = new MemoryKube();
  const object = rollout();
  const template = (object.spec as { template: { metadata: { annotations: Record<string, string> } } })
    .template;
  template.metadata.annotations['vmzones.io/spec'] = JSON.stringify({
    ...specDocument,
    zones: { ...specDocument.zones, 'zone-b': { cluster: 'eu-b', vmcluster: 'vm-zone-b' } },
  });
  hub.put(object).put(vmuser());
  hub.put(clusterSecret('eu-b', 'https://eu-b.example:6443', insecureConfig));
  for (const c of vmclusters()) (c.metadata.name === 'vm-zone-b' ? remote : hub).put(c);
  for (const r of analysisRuns()) hub.put(r);
  const clusters = clusterClients({ hub, namespace: 'argo-rollouts', connect: () => remote });
  const status = await readStatus(hub, 'vm', 'walk', clusters);
  assert.equal(status.zones.find((z) => z.zone === 'zone-b')?.cluster, 'eu-b');
  const warning = status.problems.find((p) => p.startsWith('warning: cluster eu-b'));
  assert.ok(warning, JSON.stringify(status.problems));
  assert.match(warning, /tlsClientConfig\.insecure is true/);
  assert.match(formatStatusTable(status, { now }), /^! warning: cluster eu-b .*not verified/m);
});

test('a gate with pods.tls.insecureSkipVerify says so in its message every reading and in the log once', async () => {
  const warned: unknown[][] = [];
  const provider = createGatesProvider({
    kube: () => new MemoryKube(),
    now: () => Date.parse('2026-05-01T12:00:00Z'),
    logger: { warn: (...args: unknown[]) => warned.push(args) },
  });
  const analysisRun: AnalysisRunView = { metadata: { name: 'ro-1', namespace: 'vm' }, spec: {}, status: {} };
  const metric = (insecureSkipVerify: unknown): MetricView => ({
    name: 'reloaded',
    provider: {
      plugin: {
        'vmzones/gates': {
          gate: 'vmauthReloaded',
          since: '2026-05-01T11:00:00Z',
          pods: { selector: 'app=vmauth', tls: { insecureSkipVerify } },
        },
      },
    },
  });
  const first = await provider.run(analysisRun, metric('true'));
  const second = await provider.run(analysisRun, metric(true));
  for (const reading of [first, second]) {
    assert.match(reading.message ?? '', /\(warning: pods\.tls\.insecureSkipVerify is true: .*not verified/);
  }
  assert.equal(warned.length, 1, 'logged once for the metric');
  assert.equal(warned[0]?.[0], 'TLS verification is off');
  assert.deepEqual((warned[0]?.[1] as { metric?: string } | undefined)?.metric, 'vm/ro-1/reloaded');
  const verified = await provider.run(analysisRun, metric(false));
  assert.doesNotMatch(verified.message ?? '', /warning/);
});

test('vmzones lint warns about insecure gate TLS and cluster Secrets, and still passes', async () => {
  const file = [
    spec,
    '---',
    'apiVersion: argoproj.io/v1alpha1',
    'kind: AnalysisTemplate',
    'metadata: {name: drained, namespace: vm}',
    'spec:',
    '  metrics:',
    '    - name: queue',
    '      provider:',
    '        plugin:',
    '          vmzones/gates: {gate: vmagentQueueDrained, pods: {tls: {insecureSkipVerify: "true"}}}',
    '    - name: safe',
    '      provider:',
    '        plugin:',
    '          vmzones/gates: {gate: vmclusterReady}',
    '---',
    'apiVersion: v1',
    'kind: Secret',
    'metadata:',
    '  name: cluster-eu-b',
    '  namespace: argo-rollouts',
    '  labels: {argocd.argoproj.io/secret-type: cluster}',
    'stringData:',
    '  name: eu-b',
    '  server: https://eu-b.example:6443',
    `  config: '${JSON.stringify(insecureConfig)}'`,
    '',
  ].join('\n');
  const result = await run(['lint', '--spec', 'all.yaml'], { 'all.yaml': file });
  assert.equal(result.code, 0, result.err);
  assert.match(
    result.err,
    /^all\.yaml: warning: AnalysisTemplate vm\/drained, metric queue: pods\.tls\.insecureSkipVerify is true/m,
  );
  assert.match(
    result.err,
    /^all\.yaml: warning: Secret argo-rollouts\/cluster-eu-b: tlsClientConfig\.insecure is true/m,
  );
  assert.doesNotMatch(result.err, /metric safe/);
  assert.ok(!result.err.includes('token-value'));
  const json = await run(['lint', '--spec', 'all.yaml', '-o', 'json'], { 'all.yaml': file });
  assert.equal(JSON.parse(json.out).reports[0].warnings.length, 2);
});
