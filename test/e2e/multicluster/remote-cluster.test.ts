// A zone in another Kubernetes cluster, against a real second control plane (etcd + kube-apiserver with its own
// CA, RBAC on): the cluster is registered as an Argo CD cluster Secret with a ServiceAccount token bound by
// manifests/multicluster/zone-cluster-rbac.yaml, and the step plugin and reconciler walk the zone there — lease,
// change, rollback record and rollback on the remote VMCluster — while the hub side (Rollout, VMUser, vmauth
// pod) is the in-memory fixture of the unit tests. Then the ways a cluster can fail to answer: a dead port, a
// server that accepts and never replies, a revoked token. Simulated: the remote VM operator (the test sets the
// VMCluster status, as test/unit/zones/memory-cluster.ts does for the hub); the full three-cluster walk with data
// planes is not here yet (docs/multicluster.md, "What is simulated").

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { clusterClients } from '../../../plugin/kube/cluster-registry.ts';
import { KubeError, type KubeObject } from '../../../plugin/kube/objects.ts';
import type { RolloutView } from '../../../plugin/rollouts/types.ts';
import { zoneState } from '../../../plugin/zones/state/zone-annotations.ts';
import { type BuiltBinaries, buildAll, cacheDir } from '../../env/build.ts';
import { Kubectl } from '../../sandbox/kubectl.ts';
import { freePort } from '../../sandbox/ports.ts';
import { type DaemonRecord, startDaemon, stopDaemon } from '../../sandbox/processes.ts';
import {
  kubeconfigYaml,
  repoRoot,
  startControlPlane,
  vmCrdsFile,
  writeOwner,
} from '../../sandbox/sandbox.ts';
import {
  clusterSecret,
  clusterSpecDocument,
  ns,
  rolloutObject,
  startVmauthFixture,
  threeZones,
  zonePlugins,
} from '../../unit/zones/memory-cluster.ts';

const vmApi = 'operator.victoriametrics.com/v1beta1';
const figures: Record<string, number | string> = {};

let dir: string;
let daemons: DaemonRecord[] = [];
let admin: Kubectl;
let server: string;
let token: string;
let caData: string;
let vmauth: Awaited<ReturnType<typeof startVmauthFixture>>;
let blackHole: Server;
let blackHolePort: number;

/** etcd and kube-apiserver of the zone cluster, its CRDs, RBAC and a token for the vmzones ServiceAccount. */
async function startZoneClusterOnce(binaries: BuiltBinaries): Promise<void> {
  const root = join(cacheDir(), 'sandbox');
  mkdirSync(root, { recursive: true });
  dir = mkdtempSync(join(root, 'test-zone-cluster-'));
  // Another lane's sandbox start prunes test folders without a live owner (test/sandbox/helper.ts).
  writeOwner(dir, process.pid);
  const pkiDir = join(dir, 'pki');
  const logDir = join(dir, 'logs');
  mkdirSync(logDir, { recursive: true });
  execFileSync(binaries.sandboxctl, ['pki', '--dir', pkiDir]);
  server = await startControlPlane({
    daemon: (spec) => {
      const record = startDaemon(spec);
      daemons.push(record);
      return record;
    },
    binaries,
    stateDir: dir,
    pkiDir,
    logDir,
    name: 'eu-b',
  });
  const kubeconfig = join(dir, 'kubeconfig');
  execFileSync('sh', ['-c', 'cat > "$0"', kubeconfig], { input: kubeconfigYaml(server, pkiDir) });
  admin = new Kubectl(binaries.kubectl, kubeconfig);
  await admin.applyFiles([vmCrdsFile(dir, 'simulated')]);
  await admin.run(['wait', '--for=condition=established', '--timeout=60s', 'crd', '--all']);
  await admin.apply([{ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } }]);
  await admin.applyFiles([join(repoRoot, 'manifests', 'multicluster', 'zone-cluster-rbac.yaml')]);
  token = (await admin.run(['create', 'token', 'vmzones', '-n', 'vmzones', '--duration=1h'])).trim();
  caData = readFileSync(join(pkiDir, 'ca.crt')).toString('base64');
}

async function stopZoneCluster(): Promise<void> {
  for (const record of [...daemons].reverse()) await stopDaemon(record);
  daemons = [];
}

before(async () => {
  const started = Date.now();
  const binaries: BuiltBinaries = buildAll({ except: ['argocd'] });
  try {
    await startZoneClusterOnce(binaries);
  } catch (error) {
    // Once in CI (stop 30) this start failed within seconds, beside three lanes of sandboxes, and never here: the
    // reason is printed and the start made once more on new ports; a second failure fails the file with it.
    console.log(`remote-cluster: the zone cluster did not start, starting it once more: ${String(error)}`);
    figures['first start failed'] = String(error).split('\n')[0] ?? '';
    await stopZoneCluster();
    await startZoneClusterOnce(binaries);
  }
  vmauth = await startVmauthFixture();
  blackHole = createServer(() => {
    // Accepts the connection and never answers: a cluster behind a broken load balancer.
  });
  blackHolePort = await freePort();
  await new Promise<void>((resolve, reject) => {
    blackHole.once('error', reject);
    blackHole.listen(blackHolePort, '127.0.0.1', resolve);
  });
  figures['zone cluster start (s)'] = (Date.now() - started) / 1000;
});

after(async () => {
  await stopZoneCluster();
  await vmauth?.close();
  blackHole?.close();
  if (dir !== undefined) rmSync(join(dir, 'eu-b-etcd'), { recursive: true, force: true });
  console.log(`remote-cluster figures: ${JSON.stringify(figures)}`);
});

const registration = (name: string, serverUrl: string, bearerToken: string) =>
  clusterSecret(name, serverUrl, { bearerToken, tlsClientConfig: { caData } });

const specFor = (cluster: string) => clusterSpecDocument({ 'zone-b': cluster });

async function remoteZone(): Promise<KubeObject> {
  return admin.getJson<KubeObject>(['vmcluster', 'vm-zone-b', '-n', ns]);
}

/** Plays the remote operator: operational at the current generation. */
async function operatorCatchesUp(): Promise<void> {
  const current = await remoteZone();
  await admin.run([
    'patch',
    'vmcluster',
    'vm-zone-b',
    '-n',
    ns,
    '--subresource=status',
    '--type=merge',
    '-p',
    JSON.stringify({
      status: { updateStatus: 'operational', observedGeneration: current.metadata.generation },
    }),
  ]);
}

function setup(cluster: string, options: { callTimeoutMs?: number } = {}) {
  const hub = threeZones(vmauth.port);
  hub.objects.delete(`${vmApi}|VMCluster|${ns}|vm-zone-b`);
  hub.put(registration('eu-b', server, token));
  hub.put(registration('eu-dead', `https://127.0.0.1:1`, token));
  hub.put(registration('eu-silent', `https://127.0.0.1:${blackHolePort}`, token));
  hub.put(registration('eu-revoked', server, `${token.slice(0, -8)}AAAAAAAA`));
  hub.put(
    rolloutObject(
      'walk',
      { currentPodHash: 'rev-r', stableRS: 'rev-s', currentStepIndex: 0 },
      specFor(cluster),
    ),
  );
  const clusters = clusterClients({ hub, namespace: 'argo-rollouts', ...options });
  const { plugin, reconciler } = zonePlugins(hub, clusters, { namespaces: [ns] });
  const step = (action: string, operation: 'run' | 'abort' = 'run') =>
    plugin[operation](hub.getStored('Rollout', 'walk', 'argoproj.io/v1alpha1') as unknown as RolloutView, {
      pluginName: 'vmzones/step',
      config: { zone: 'zone-b', action },
      status: undefined,
    });
  return { hub, step, reconciler };
}

async function untilDone(run: () => ReturnType<ReturnType<typeof setup>['step']>) {
  let result = await run();
  for (let i = 0; i < 5 && result.phase === 'Running'; i++) result = await run();
  return result;
}

test('a zone in a registered cluster: its lease, change and rollback live on the remote VMCluster, and an abort rolls it back there', async () => {
  await admin.apply([
    {
      apiVersion: vmApi,
      kind: 'VMCluster',
      metadata: { name: 'vm-zone-b', namespace: ns },
      spec: { clusterVersion: 'v1.151.0-cluster', vmstorage: { replicaCount: 1 } },
    },
  ]);
  await operatorCatchesUp();
  const { hub, step, reconciler } = setup('eu-b');
  const t0 = Date.now();
  const drained = await untilDone(() => step('drainReads'));
  assert.equal(drained.phase, 'Successful', drained.message);
  assert.equal(
    zoneState(await remoteZone()).lease?.revision,
    'rev-r',
    'the lease is on the remote VMCluster',
  );
  const applied = await step('apply');
  assert.equal(applied.phase, 'Successful', applied.message);
  let zone = await remoteZone();
  assert.equal(zone.spec?.clusterVersion, 'v1.152.0-cluster');
  assert.equal(zoneState(zone).rollback?.phase, 'applied');
  assert.equal(
    hub.patches.filter((p) => p.ref.startsWith('VMCluster')).length,
    0,
    'nothing written to the hub',
  );
  figures['drainReads + apply on the remote zone (s)'] = (Date.now() - t0) / 1000;

  // Abort: the zone is handed to the reconciler, which finds it by listing the remote cluster.
  const t1 = Date.now();
  await operatorCatchesUp();
  const aborted = await step('apply', 'abort');
  assert.equal(aborted.phase, 'Successful', aborted.message);
  hub.setStatus('Rollout', 'walk', { abort: true });
  let progress: Record<string, string> = {};
  for (let i = 0; i < 20; i++) {
    progress = await reconciler.tick();
    await operatorCatchesUp();
    if (Object.values(progress).every((p) => p === 'done')) break;
  }
  assert.deepEqual(progress, { 'eu-b/vm/vm-zone-b': 'done' });
  zone = await remoteZone();
  assert.equal(zone.spec?.clusterVersion, 'v1.151.0-cluster', 'rolled back on the remote VMCluster');
  const state = zoneState(zone);
  assert.equal(state.lease, undefined, 'released');
  assert.equal(state.handoff, undefined);
  assert.equal(state.maintenance, undefined);
  figures['abort to rolled back and released (s)'] = (Date.now() - t1) / 1000;
});

async function failsNaming(cluster: string, options: { callTimeoutMs?: number } = {}) {
  const { hub, step } = setup(cluster, options);
  const t0 = Date.now();
  let message = '';
  try {
    const result = await step('drainReads');
    assert.notEqual(result.phase, 'Successful', `an unreachable cluster never passes (${result.message})`);
    message = result.message ?? '';
  } catch (err) {
    assert.ok(err instanceof KubeError, String(err));
    message = err.message;
  }
  const seconds = (Date.now() - t0) / 1000;
  assert.match(message, new RegExp(`cluster ${cluster}`));
  assert.ok(!message.includes(token), 'the token never shows');
  assert.equal(hub.patches.length, 0, 'nothing half-applied: the read balancer was not touched');
  return { message, seconds };
}

test('a dead port: the step is retried (an error naming the cluster), nothing is drained', async () => {
  const { seconds } = await failsNaming('eu-dead');
  figures['dead port: Run returned after (s)'] = seconds;
  assert.ok(seconds < 20, `${seconds} s`);
});

test('a server that accepts and never answers: each call times out, the Run returns, nothing is drained', async () => {
  const { message, seconds } = await failsNaming('eu-silent', { callTimeoutMs: 2_000 });
  assert.match(message, /no answer from the API server within 2 s/);
  figures['silent server (2 s call timeout): Run returned after (s)'] = seconds;
  assert.ok(seconds < 6 * 2 + 8, `${seconds} s`);
});

test('a revoked token is a Failed step naming the cluster and HTTP 401, not a retry', async () => {
  const { hub, step } = setup('eu-revoked');
  const result = await step('drainReads');
  assert.equal(result.phase, 'Failed', result.message);
  assert.match(result.message ?? '', /cluster eu-revoked: .*HTTP 401/);
  assert.equal(hub.patches.length, 0);
});
