// `vmzones status` run as a user runs it, with a kubeconfig whose cluster is reached through a `proxy-url` (a
// corporate proxy): the command reads the Rollout, its zones and the routing through the loopback CONNECT proxy
// (test/unit/kube/connect-proxy-fixture.ts) from the loopback API server (test/unit/kube/api-server-fixture.ts).

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import type { KubeObject } from '../../../plugin/kube/objects.ts';
import { ApiServerFixture } from '../kube/api-server-fixture.ts';
import { ConnectProxyFixture } from '../kube/connect-proxy-fixture.ts';
import { makeTlsFixture } from '../vm/tls-fixture.ts';
import { run } from './run.ts';
import { analysisRuns, rollout, vmclusters, vmuser } from './status-fixtures.ts';

/** The collection path of an object in the fixture API server (namespaced kinds only). */
function collection(object: KubeObject & { apiVersion: string; kind: string }): string {
  const plural = `${object.kind.toLowerCase()}s`;
  return `/apis/${object.apiVersion}/namespaces/${object.metadata.namespace}/${plural}`;
}

test('vmzones status works through a kubeconfig proxy-url', async (t) => {
  const tls = makeTlsFixture();
  const api = new ApiServerFixture(tls);
  const server = await api.start();
  const proxy = new ConnectProxyFixture();
  const proxyUrl = await proxy.start();
  const dir = mkdtempSync(join(tmpdir(), 'vmzones-status-proxy-'));
  t.after(async () => {
    await proxy.stop();
    await api.stop();
    rmSync(dir, { recursive: true, force: true });
  });
  api.serve('/apis/argoproj.io/v1alpha1', [
    { name: 'rollouts', kind: 'Rollout', namespaced: true },
    { name: 'analysisruns', kind: 'AnalysisRun', namespaced: true },
  ]);
  api.serve('/apis/operator.victoriametrics.com/v1beta1', [
    { name: 'vmclusters', kind: 'VMCluster', namespaced: true },
    { name: 'vmusers', kind: 'VMUser', namespaced: true },
    { name: 'vmauths', kind: 'VMAuth', namespaced: true },
  ]);
  for (const object of [rollout(), vmuser(), ...vmclusters(), ...analysisRuns()])
    api.put(collection(object), object);
  const kubeconfig = join(dir, 'config');
  writeFileSync(
    kubeconfig,
    JSON.stringify({
      'current-context': 'x',
      clusters: [
        {
          name: 'c',
          cluster: {
            server,
            'certificate-authority-data': Buffer.from(tls.ca).toString('base64'),
            'proxy-url': proxyUrl,
          },
        },
      ],
      users: [{ name: 'u', user: { token: 't0ken-one' } }],
      contexts: [{ name: 'x', context: { cluster: 'c', user: 'u', namespace: 'vm' } }],
    }),
  );
  const result = await run(['status', 'walk', '--kubeconfig', kubeconfig, '-o', 'json']);
  assert.equal(result.code, 0, result.err);
  const status = JSON.parse(result.out) as { zones: { zone: string; routed?: boolean }[] };
  assert.deepEqual(
    status.zones.map((z) => [z.zone, z.routed]),
    [
      ['zone-a', true],
      ['zone-b', false],
      ['zone-c', true],
      ['zone-d', true],
    ],
  );
  assert.ok(proxy.tunnels.length >= 1, 'the reads went through the proxy');
  assert.ok(proxy.tunnels.every((target) => target === new URL(server).host));
});
