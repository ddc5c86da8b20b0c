// `vmzones status` run as a user runs it, with a kubeconfig whose cluster is reached through a `proxy-url` (a
// corporate proxy: the loopback CONNECT proxy of test/unit/kube/connect-proxy-fixture.ts) or through `kubectl proxy`
// (a plain-HTTP server on loopback: test/unit/kube/kubectl-proxy-fixture.ts): the command reads the Rollout, its zones
// and the routing from the loopback API server (test/unit/kube/api-server-fixture.ts).

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type TestContext, test } from 'node:test';
import type { KubeObject } from '../../../plugin/kube/objects.ts';
import { ApiServerFixture } from '../kube/api-server-fixture.ts';
import { ConnectProxyFixture } from '../kube/connect-proxy-fixture.ts';
import { KubectlProxyFixture } from '../kube/kubectl-proxy-fixture.ts';
import { makeTlsFixture } from '../vm/tls-fixture.ts';
import { run } from './run.ts';
import { analysisRuns, rollout, vmclusters, vmuser } from './status-fixtures.ts';

/** The collection path of an object in the fixture API server (namespaced kinds only). */
function collection(object: KubeObject & { apiVersion: string; kind: string }): string {
  const plural = `${object.kind.toLowerCase()}s`;
  return `/apis/${object.apiVersion}/namespaces/${object.metadata.namespace}/${plural}`;
}

/** The API server with a Rollout of four zones; `status walk` with a kubeconfig of `cluster` and `user` (given the
 *  API server's URL and CA) must print its zones and routing. */
async function statusWorksWith(
  t: TestContext,
  kubeconfigOf: (server: string, ca: string) => Promise<{ cluster: object; user: object }>,
): Promise<void> {
  const tls = makeTlsFixture();
  const api = new ApiServerFixture(tls);
  const server = await api.start();
  const dir = mkdtempSync(join(tmpdir(), 'vmzones-status-proxy-'));
  t.after(async () => {
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
  const { cluster, user } = await kubeconfigOf(server, tls.ca);
  const kubeconfig = join(dir, 'config');
  writeFileSync(
    kubeconfig,
    JSON.stringify({
      'current-context': 'x',
      clusters: [{ name: 'c', cluster }],
      users: [{ name: 'u', user }],
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
}

test('vmzones status works through a kubeconfig proxy-url', async (t) => {
  const proxy = new ConnectProxyFixture();
  const proxyUrl = await proxy.start();
  t.after(() => proxy.stop());
  let target = '';
  await statusWorksWith(t, async (server, ca) => {
    target = new URL(server).host;
    return {
      cluster: {
        server,
        'certificate-authority-data': Buffer.from(ca).toString('base64'),
        'proxy-url': proxyUrl,
      },
      user: { token: 't0ken-one' },
    };
  });
  assert.ok(proxy.tunnels.length >= 1, 'the reads went through the proxy');
  assert.ok(proxy.tunnels.every((tunnel) => tunnel === target));
});

test('vmzones status works through kubectl proxy (a plain-HTTP server on loopback, no credential of its own)', async (t) => {
  let kubectlProxy: KubectlProxyFixture | undefined;
  t.after(() => kubectlProxy?.stop());
  await statusWorksWith(t, async (server, ca) => {
    kubectlProxy = new KubectlProxyFixture(server, ca, 't0ken-one');
    return { cluster: { server: await kubectlProxy.start() }, user: {} };
  });
  assert.ok((kubectlProxy?.forwarded ?? 0) >= 1, 'the reads went through kubectl proxy');
});
