// The three-cluster walk with data planes (docs/multicluster.md): one sandbox whose hub runs Argo Rollouts with
// the vmzones plugins, vmagent, vmauth and zone-a, and two zone clusters (own control plane, VM operator, kubelet
// and data plane) holding zone-b and zone-c, registered as Argo CD cluster Secrets with the least RBAC of
// manifests/multicluster/zone-cluster-rbac.yaml. The hub's vmagent writes and its vmauth reads the remote zones at
// the addresses their clusters publish (the spec names them in vminsertHosts / vmselectHosts).
//
// 1. A commit of an overrideSpec change walks zone-a, zone-b, zone-c (drainReads, apply, the zone-healthy gates,
//    restoreReads, each in the zone's cluster) to Healthy, while reads go through vmauth all along, no zone is
//    routed while not ready, and every sample reaches every zone.
// 2. A second revision aborted while zone-b's gates run (zone-b changed, drained, in maintenance): zone-a and
//    zone-b are rolled back on their own clusters, zone-c never changes, every zone ends released, out of
//    maintenance and serving reads.
// 3. The drain gate of a zone whose vmagent runs in the zone's cluster (vmagent.cluster: cluster-b): the VMAgent
//    reconciled by cluster-b's operator, its pod at an address inside the sandbox's own network namespace
//    (test/sandbox/pod-network.ts: kube-apiserver will not proxy to loopback), scraped through cluster-b's API server pod proxy with the registered token; without
//    `get` on `pods/proxy` it is not drained, naming the permission, and drained again once the grant is back.
// 4. A read balancer in cluster-b beside the hub's (vmauth: [the hub's, {cluster: cluster-b, ...}]): zone-b leaves
//    both and comes back to both, cluster-b's vmauth reload evidence fetched through its API server's pod proxy.

import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { kubeconfigConnection } from '../../../plugin/kube/kube-config.ts';
import { type KubeObjects, kubeObjects } from '../../../plugin/kube/objects.ts';
import { vmclusterReadiness } from '../../../plugin/vm/vmcluster.ts';
import { zonesRoutedByVMUser } from '../../../plugin/vm/vmuser.ts';
import { defaultHealthTemplate } from '../../../plugin/zones/render.ts';
import { parseSpecDocument } from '../../../plugin/zones/spec.ts';
import { readBackends } from '../../../plugin/zones/step/target.ts';
import { applyAnalysisTemplates } from '../../sandbox/analysis-templates.ts';
import { type Sandbox, startSandbox } from '../../sandbox/helper.ts';
import { Kubectl } from '../../sandbox/kubectl.ts';
import { loadgenStatus } from '../../sandbox/loadgen-client.ts';
import { readUser, vmauthName, vminsertWriteUrl } from '../../sandbox/manifests.ts';
import { inSubnet } from '../../sandbox/pod-network.ts';
import { freePort } from '../../sandbox/ports.ts';
import { repoRoot } from '../../sandbox/sandbox.ts';
import { leftoversIn, samplesLost, specValue, zones } from '../reliability/support.ts';
import {
  cluster,
  eventually,
  ns,
  type RolloutState,
  rolloutCanProgress,
  rolloutObject,
  rolloutState,
  runStatus,
  type SpecDocument,
  sandboxKube,
  startReadProber,
  startRoutingWatcher,
  stepsFor,
  withRoundSpacing,
  zoneSpec,
  zonesAcrossClusters,
} from '../step/harness.ts';

const name = 'zones';
const figures: Record<string, number | string> = {};
let sandbox: Sandbox;
let hub: KubeObjects;
/** Each zone's VMCluster is read in its own cluster, with that cluster's admin kubeconfig. */
const kubeOf: Record<string, KubeObjects> = {};
let spec: (value: string | undefined) => SpecDocument;

before(async () => {
  const started = Date.now();
  sandbox = await startSandbox({ zoneClusters: 2, podRestartSeconds: 2, plugin: true, zonePodNetwork: true });
  figures['sandbox start (s)'] = Math.round((Date.now() - started) / 100) / 10;
  hub = sandboxKube(sandbox);
  await applyAnalysisTemplates(sandbox.kubectl);
  const remote = Object.fromEntries((sandbox.state.zoneClusters ?? []).map((c) => [c.zone, c]));
  for (const z of zones) {
    const zc = remote[z.zone];
    if (zc === undefined) {
      kubeOf[z.zone] = hub;
      continue;
    }
    kubeOf[z.zone] = kubeObjects(kubeconfigConnection([zc.kubeconfig]));
  }
  assert.deepEqual(Object.keys(remote), ['zone-b', 'zone-c'], 'zone-b and zone-c live in zone clusters');
  spec = (value) =>
    zoneSpec(value === undefined ? {} : { vmstorage: { extraArgs: { 'search.latencyOffset': value } } }, {
      zones: zonesAcrossClusters(zones, sandbox.state.zoneClusters ?? []),
    });
});

after(async () => {
  const report = await sandbox?.stop();
  console.log(`multicluster walk figures: ${JSON.stringify(figures)}`);
  assert.deepEqual(report?.portsStillBound ?? [], [], 'every daemon of the three clusters is gone');
});

/** The zone-healthy gates, with rounds close together (the sandbox's load is steady; the gate logic is the same). */
function walkSteps(doc: SpecDocument): object[] {
  return withRoundSpacing(stepsFor(doc, 'none', defaultHealthTemplate));
}

function values(): Promise<unknown[]> {
  return Promise.all(zones.map((z) => specValue(kubeOf[z.zone] as KubeObjects, z.vmcluster)));
}

/** Reads through the hub's vmauth, routing checked against each zone's readiness in its own cluster, samples. */
async function probes() {
  const loadgen = await loadgenStatus(sandbox);
  const reads = startReadProber(sandbox.endpoint('VMAuth', vmauthName).url, readUser);
  const watcher = startRoutingWatcher(hub, zones, 300, spec(undefined), kubeOf);
  return async () => {
    const read = await reads.stop();
    const { violations, checks } = await watcher.stop();
    const to = (await loadgenStatus(sandbox)).lastSeq - 3;
    const samples = await samplesLost(sandbox, loadgen.lastSeq + 1, to, loadgen.failed);
    return { read, violations, checks, samples };
  };
}

async function leftovers(): Promise<string[]> {
  return leftoversIn(kubeOf, hub, spec(undefined));
}

test('a commit walks zone-a (hub), zone-b and zone-c (zone clusters) to Healthy: reads never fail, no sample lost', async () => {
  const first = spec(undefined);
  await sandbox.kubectl.apply([rolloutObject(name, first, walkSteps(first))]);
  await eventually(
    'the first revision to be Healthy',
    async () => ((await rolloutState(hub, name)).status.phase === 'Healthy' ? true : undefined),
    { unless: rolloutCanProgress(hub, name) },
  );
  const finish = await probes();
  const doc = spec('6s');
  const started = Date.now();
  const before = await rolloutState(hub, name);
  await sandbox.kubectl.apply([rolloutObject(name, doc, walkSteps(doc))]);
  // Each zone has 4 steps (drainReads, apply, analysis, restoreReads): zone i starts at step 4i.
  const zoneStarted: number[] = [];
  let last: RolloutState = before;
  await eventually(
    'the three-cluster walk to be Healthy',
    async () => {
      last = await rolloutState(hub, name);
      if (last.status.currentPodHash === before.status.currentPodHash) return undefined;
      const at = last.status.currentStepIndex ?? 0;
      for (let i = 0; i < zones.length; i++) if (at >= 4 * i) zoneStarted[i] ??= Date.now();
      assert.notEqual(last.status.phase, 'Degraded', `the walk degraded: ${last.status.message}`);
      return last.status.phase === 'Healthy' && last.status.stableRS === last.status.currentPodHash
        ? true
        : undefined;
    },
    { timeoutMs: 8 * 60_000, intervalMs: 500, unless: rolloutCanProgress(hub, name) },
  );
  const ended = Date.now();
  figures['walk (s)'] = Math.round((ended - started) / 100) / 10;
  zones.forEach((z, i) => {
    const next = zoneStarted[i + 1] ?? ended;
    figures[`${z.zone} (s)`] = Math.round((next - (zoneStarted[i] ?? started)) / 100) / 10;
  });
  const m = await finish();
  figures['walk reads failed/total'] = `${m.read.failed}/${m.read.sent}`;
  figures['walk samples lost'] = m.samples.lost;
  assert.deepEqual(await values(), ['6s', '6s', '6s'], 'every zone has the change, in its own cluster');
  // Each drain ended on the zone's own reading of queries in flight, not on the grace period: zone-a's pods read at
  // their IPs, zone-b's and zone-c's through their cluster's API server pod proxy (issue 37 item 4).
  zones.forEach((z, i) => {
    const drain = runStatus(last, 4 * i);
    figures[`${z.zone} drain ended on`] =
      typeof drain?.status?.queriesDoneAt === 'string' ? 'queries' : 'grace';
    assert.equal(drain?.phase, 'Successful', `${z.zone}: ${drain?.message}`);
    assert.match(
      drain?.message ?? '',
      /no query executes on the \d+ vmselect pods? in \d+ readings .*, so the drain ends before the grace period/,
      `${z.zone}'s drain ended on its reading of queries in flight`,
    );
    assert.equal(typeof drain?.status?.queriesDoneAt, 'string', `${z.zone}: queriesDoneAt`);
  });
  assert.equal(m.read.failed, 0, `reads failed: ${m.read.failures.join('; ')}`);
  assert.deepEqual(m.violations, [], 'no zone routed while not ready');
  assert.ok(m.checks > 10, `the routing watcher looked ${m.checks} times`);
  assert.equal(m.samples.lost, 0, m.samples.detail);
  assert.deepEqual(await leftovers(), []);
});

test('a second revision aborted while zone-b’s gates run: zone-a and zone-b roll back on their clusters, every zone released and serving', async () => {
  const finish = await probes();
  const doc = spec('7s');
  await sandbox.kubectl.apply([rolloutObject(name, doc, walkSteps(doc))]);
  // Zone-b's analysis is step 6 (after its drainReads 4 and apply 5).
  await eventually(
    'zone-b changed in cluster-b and its gates running',
    async () => {
      const s = await rolloutState(hub, name);
      return (s.status.currentStepIndex ?? 0) === 6 && (await values())[1] === '7s' ? true : undefined;
    },
    6 * 60_000,
    300,
  );
  const abortedAt = Date.now();
  await sandbox.rollouts(['abort', name, '-n', ns]);
  let settled: unknown[] = [];
  let left: string[] = [];
  await eventually(
    'zones a and b rolled back, every zone released and routed',
    async () => {
      settled = await values();
      left = await leftovers();
      return settled.every((v) => v === '6s') && left.length === 0 ? true : undefined;
    },
    5 * 60_000,
    1000,
  ).catch(() => undefined);
  figures['abort to settled (s)'] = Math.round((Date.now() - abortedAt) / 100) / 10;
  const m = await finish();
  figures['abort reads failed/total'] = `${m.read.failed}/${m.read.sent}`;
  figures['abort samples lost'] = m.samples.lost;
  assert.deepEqual(settled, ['6s', '6s', '6s'], 'zone-a and zone-b rolled back, zone-c never changed');
  assert.deepEqual(left, [], 'every zone released, out of maintenance, routed');
  for (const z of zones) {
    const readiness = vmclusterReadiness(await cluster(kubeOf[z.zone] as KubeObjects, z.vmcluster));
    assert.equal(readiness.state, 'ready', `${z.zone}: ${readiness.message}`);
  }
  assert.equal(m.read.failed, 0, `reads failed: ${m.read.failures.join('; ')}`);
  assert.deepEqual(m.violations, [], 'no zone routed while not ready');
  assert.equal(m.samples.lost, 0, m.samples.detail);
});

interface AnalysisRunJson {
  metadata: { name: string; creationTimestamp: string; ownerReferences?: { name: string }[] };
  status?: {
    phase?: string;
    metricResults?: { name: string; measurements?: { phase: string; message?: string; value?: string }[] }[];
  };
}

/** The newest AnalysisRun of a Rollout in the hub, and its drain gate's last measurement. */
async function latestRun(rollout: string) {
  const runs = await sandbox.kubectl.getJson<{ items: AnalysisRunJson[] }>(['analysisrun', '-n', ns]);
  const run = runs.items
    .filter((r) => r.metadata.ownerReferences?.some((o) => o.name === rollout))
    .sort((a, b) => a.metadata.creationTimestamp.localeCompare(b.metadata.creationTimestamp))
    .at(-1);
  return { run, last: run?.status?.metricResults?.[0]?.measurements?.at(-1) };
}

/** GETs through the pod proxy that cluster-b's API server answered, by status code (its own /metrics). */
async function podProxyRequests(kubectl: Kubectl): Promise<Record<string, number>> {
  const page = await kubectl.raw('/metrics');
  const counts: Record<string, number> = {};
  for (const line of page.split('\n')) {
    if (!line.startsWith('apiserver_request_total{')) continue;
    if (!line.includes('resource="pods"') || !line.includes('subresource="proxy"')) continue;
    const code = /code="(\d+)"/.exec(line)?.[1] ?? '?';
    counts[code] = (counts[code] ?? 0) + Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return counts;
}

test('vmagentQueueDrained through cluster-b’s API server pod proxy: drained with the least RBAC, not drained (403 naming pods/proxy) without it', async () => {
  const started = Date.now();
  const zc = (sandbox.state.zoneClusters ?? []).find((c) => c.zone === 'zone-b');
  assert.ok(zc, 'zone-b is in a zone cluster');
  const podNetwork = sandbox.state.podNetwork;
  assert.ok(
    zc.podIP && podNetwork,
    'the zone clusters give their Pods an address in the pod network (zonePodNetwork)',
  );
  assert.ok(
    inSubnet(zc.podIP, podNetwork.subnet),
    `Pod IP ${zc.podIP} inside ${podNetwork.netns} (${podNetwork.subnet})`,
  );
  const b = new Kubectl(sandbox.kubectl.binary, zc.kubeconfig);
  // The registration is the plain one, in pod access `proxy` (the default: no annotation).
  const registration = await sandbox.kubectl.getJson<{ metadata: { annotations?: Record<string, string> } }>([
    'secret',
    `cluster-${zc.name}`,
    '-n',
    'argo-rollouts',
  ]);
  assert.equal(registration.metadata.annotations?.['vmzones.io/pod-access'] ?? 'proxy', 'proxy');

  // A VMAgent in cluster-b writing zone-b by its in-cluster Service, fed by scraping its own /metrics every second.
  const agent = 'vmagent-b';
  const port = await freePort();
  const scrapeConfig = join(sandbox.state.stateDir, 'vmagent-b-scrape.yaml');
  writeFileSync(
    scrapeConfig,
    `scrape_configs:\n  - job_name: self\n    scrape_interval: 1s\n    static_configs: [{targets: ['127.0.0.1:${port}']}]\n`,
  );
  await b.apply([
    {
      apiVersion: 'operator.victoriametrics.com/v1beta1',
      kind: 'VMAgent',
      metadata: { name: agent, namespace: ns },
      spec: {
        replicaCount: 1,
        port: String(port),
        remoteWrite: [{ url: vminsertWriteUrl('vm-zone-b') }],
        extraArgs: { 'promscrape.config': scrapeConfig },
      },
    },
  ]);
  const kb = kubeOf['zone-b'] as KubeObjects;
  await eventually('VMAgent vmagent-b operational in cluster-b', async () => {
    const o = await kb.get({
      apiVersion: 'operator.victoriametrics.com/v1beta1',
      kind: 'VMAgent',
      namespace: ns,
      name: agent,
    });
    return (o.status as { updateStatus?: string } | undefined)?.updateStatus === 'operational'
      ? true
      : undefined;
  });
  const pods = await b.getJson<{ items: { metadata: { name: string }; status: { podIP?: string } }[] }>([
    'pods',
    '-n',
    ns,
    '-l',
    `app.kubernetes.io/instance=${agent}`,
  ]);
  assert.equal(pods.items.length, 1, 'one vmagent-b pod');
  assert.equal(pods.items[0]?.status.podIP, zc.podIP, 'the pod has the non-loopback address');
  figures['pod proxy: pod IP'] = zc.podIP;

  const doc = zoneSpec(
    {},
    {
      vmagent: { vmagent: agent, cluster: zc.name },
      zones: { 'zone-b': { cluster: zc.name, vmcluster: 'vm-zone-b' } },
    },
  );
  const steps = [
    {
      analysis: {
        templates: [{ templateName: 'vmzones-vmagent-queue-drained', clusterScope: true }],
        args: [
          { name: 'zone', value: 'zone-b' },
          { name: 'roundSpacing', value: '2s' },
          { name: 'drainTimeout', value: '4m' },
        ],
      },
    },
  ];
  const proxyRollout = 'podproxy';
  await sandbox.kubectl.apply([rolloutObject(proxyRollout, doc, steps)]);
  await eventually(
    'the pod proxy Rollout’s first revision Healthy',
    async () => ((await rolloutState(hub, proxyRollout)).status.phase === 'Healthy' ? true : undefined),
    { unless: rolloutCanProgress(hub, proxyRollout) },
  );

  // Drained, with the evidence fetched through cluster-b's API server.
  const before = await podProxyRequests(b);
  const drainStarted = Date.now();
  await sandbox.kubectl.apply([rolloutObject(proxyRollout, doc, steps)]);
  let passed = await latestRun(proxyRollout);
  await eventually(
    'the drain gate of zone-b to pass through the pod proxy',
    async () => {
      passed = await latestRun(proxyRollout);
      const phase = passed.run?.status?.phase;
      assert.ok(phase !== 'Failed' && phase !== 'Error', `the gate ended ${phase}: ${passed.last?.message}`);
      return phase === 'Successful' && (await rolloutState(hub, proxyRollout)).status.phase === 'Healthy'
        ? true
        : undefined;
    },
    { timeoutMs: 3 * 60_000, intervalMs: 1000, unless: rolloutCanProgress(hub, proxyRollout) },
  );
  figures['pod proxy: drained after (s)'] = Math.round((Date.now() - drainStarted) / 100) / 10;
  const after = await podProxyRequests(b);
  const proxied = (after['200'] ?? 0) - (before['200'] ?? 0);
  figures['pod proxy: GETs answered 200'] = proxied;
  const measured = JSON.parse(passed.last?.value ?? '{}') as {
    drained?: boolean;
    agents?: Record<string, { queueIndex?: number }>;
  };
  assert.equal(measured.drained, true, passed.last?.message);
  assert.equal(measured.agents?.[agent]?.queueIndex, 1, JSON.stringify(measured));
  assert.ok(proxied >= 3, `cluster-b's API server proxied ${proxied} scrapes (at least the 3 rounds)`);

  // Without `get` on pods/proxy in cluster-b: not drained, naming the permission; drained once it is back.
  const role = await b.getJson<{ rules: { resources?: string[] }[] }>([
    'clusterrole',
    'vmzones-zone-cluster',
  ]);
  const at = role.rules.findIndex((r) => r.resources?.includes('pods/proxy'));
  assert.ok(at >= 0, 'zone-cluster-rbac.yaml grants pods/proxy');
  await b.run([
    'patch',
    'clusterrole',
    'vmzones-zone-cluster',
    '--type=json',
    `-p=[{"op":"remove","path":"/rules/${at}"}]`,
  ]);
  const revoked = Date.now();
  let refused = await latestRun(proxyRollout);
  try {
    const previous = passed.run?.metadata.name;
    await sandbox.kubectl.apply([rolloutObject(proxyRollout, doc, steps)]);
    await eventually(
      'the gate to report the 403 of the pod proxy',
      async () => {
        refused = await latestRun(proxyRollout);
        if (refused.run === undefined || refused.run.metadata.name === previous) return undefined;
        assert.notEqual(refused.run.status?.phase, 'Successful', 'drained without pods/proxy');
        return /HTTP 403/.test(refused.last?.message ?? '') ? true : undefined;
      },
      90_000,
      1000,
    );
    figures['pod proxy: 403 reported after (s)'] = Math.round((Date.now() - revoked) / 100) / 10;
    assert.match(refused.last?.message ?? '', /needs get on pods\/proxy in namespace vm/);
    assert.equal(refused.last?.phase, 'Running', 'not drained: the gate keeps waiting');
    // Well past 3 rounds 2 s apart: still not drained.
    await new Promise((resolve) => setTimeout(resolve, 12_000));
    refused = await latestRun(proxyRollout);
    assert.equal(refused.run?.status?.phase, 'Running', refused.last?.message);
    assert.notEqual(refused.last?.phase, 'Successful');
  } finally {
    await b.applyFiles([join(repoRoot, 'manifests', 'multicluster', 'zone-cluster-rbac.yaml')]);
  }
  figures['pod proxy: 403 message'] = (refused.last?.message ?? '').slice(0, 320);
  const restored = Date.now();
  await eventually(
    'drained once pods/proxy is granted again',
    async () => {
      const now = await latestRun(proxyRollout);
      return now.run?.status?.phase === 'Successful' ? true : undefined;
    },
    3 * 60_000,
    1000,
  );
  figures['pod proxy: drained again after the grant (s)'] = Math.round((Date.now() - restored) / 100) / 10;
  figures['pod proxy test (s)'] = Math.round((Date.now() - started) / 100) / 10;
});

test('a vmauth in cluster-b beside the hub’s: zone-b leaves both and comes back to both, cluster-b’s reload evidence through its pod proxy, no read fails through either', async () => {
  const started = Date.now();
  const zb = sandbox.state.zoneClusters?.find((c) => c.zone === 'zone-b');
  const zcc = sandbox.state.zoneClusters?.find((c) => c.zone === 'zone-c');
  assert.ok(zb?.podIP && zcc, 'zone-b and zone-c in zone clusters, Pods at a non-loopback address');
  const b = new Kubectl(sandbox.kubectl.binary, zb.kubeconfig);
  const kb = kubeOf['zone-b'] as KubeObjects;
  const vmApi = 'operator.victoriametrics.com/v1beta1';
  // cluster-b's own read balancer: its zone by the in-cluster Service, zone-c by the address cluster-c publishes
  // (zone-a, in the hub, is not published to the zone clusters: this vmauth balances over two zones).
  const localUser = { username: 'local-read', password: 'sandbox' };
  const port = await freePort();
  await b.apply([
    {
      apiVersion: vmApi,
      kind: 'VMUser',
      metadata: { name: 'local-read', namespace: ns },
      spec: {
        ...localUser,
        targetRefs: [
          {
            static: { urls: [`http://vmselect-vm-zone-b.${ns}.svc:8481/`, zcc.vmselectUrl] },
            paths: ['/select/.*'],
          },
        ],
      },
    },
    {
      apiVersion: vmApi,
      kind: 'VMAuth',
      metadata: { name: 'local', namespace: ns },
      spec: { selectAllByDefault: true, port: String(port) },
    },
  ]);
  const localUrl = `http://${zb.podIP}:${port}`;
  await eventually(
    'cluster-b’s vmauth to serve the VMUser',
    async () => {
      const user = await kb.get({ apiVersion: vmApi, kind: 'VMUser', namespace: ns, name: 'local-read' });
      if ((user.status as { updateStatus?: string } | undefined)?.updateStatus !== 'operational')
        return undefined;
      const auth = Buffer.from(`${localUser.username}:${localUser.password}`).toString('base64');
      const response = await fetch(`${localUrl}/select/0/prometheus/api/v1/query?query=1`, {
        headers: { authorization: `Basic ${auth}` },
      }).catch(() => undefined);
      return response?.ok ? true : undefined;
    },
    120_000,
    1000,
  );
  figures['local vmauth: ready after (s)'] = Math.round((Date.now() - started) / 100) / 10;

  // zone-b is read by its published address in the hub and by its Service in its own cluster: vmselectHosts names
  // both, so that each balancer's URL for it is known to be zone-b's.
  const docOf = (value: string | undefined): SpecDocument => ({
    ...spec(value),
    zones: {
      ...(spec(value).zones as Record<string, object>),
      'zone-b': {
        cluster: zb.name,
        vmcluster: 'vm-zone-b',
        vmselectHosts: [zb.address, `vmselect-vm-zone-b.${ns}.svc`],
        vminsertHosts: [zb.address],
      },
    },
    vmauth: [
      { vmuser: 'vmauth-read', drainGracePeriod: '3s' },
      { cluster: zb.name, vmuser: 'local-read', drainGracePeriod: '3s' },
    ],
  });
  const zoneBSteps = (doc: SpecDocument) =>
    stepsFor(doc, 'none').filter((s) => JSON.stringify(s).includes('"zone":"zone-b"'));
  const rollout = 'local-reads';
  await sandbox.kubectl.apply([rolloutObject(rollout, docOf(undefined), zoneBSteps(docOf(undefined)))]);
  await eventually(
    'the local-reads Rollout’s first revision Healthy',
    async () => ((await rolloutState(hub, rollout)).status.phase === 'Healthy' ? true : undefined),
    { unless: rolloutCanProgress(hub, rollout) },
  );
  const backends = readBackends(parseSpecDocument(JSON.stringify(docOf(undefined))), ns);
  const routedThere = async (kube: KubeObjects, user: string) =>
    zonesRoutedByVMUser(
      (await kube.get({ apiVersion: vmApi, kind: 'VMUser', namespace: ns, name: user })).spec?.targetRefs,
      ns,
      backends,
    );
  assert.deepEqual(await routedThere(kb, 'local-read'), ['zone-b', 'zone-c']);

  const hubReads = startReadProber(sandbox.endpoint('VMAuth', vmauthName).url, readUser);
  const localReads = startReadProber(localUrl, localUser);
  const proxiedBefore = await podProxyRequests(b);
  const walkStarted = Date.now();
  const doc = docOf('13s');
  await sandbox.kubectl.apply([rolloutObject(rollout, doc, zoneBSteps(doc))]);
  const drained = await eventually(
    'drainReads of zone-b to succeed',
    async () => {
      const s = await rolloutState(hub, rollout);
      return runStatus(s, 0)?.phase === 'Successful' ? s : undefined;
    },
    180_000,
    500,
  );
  const drainedMessage = runStatus(drained, 0)?.message ?? '';
  figures['local vmauth: drainReads message'] = drainedMessage.slice(0, 300);
  assert.match(
    drainedMessage,
    new RegExp(`VMUser vm/vmauth-read, VMUser vm/local-read in cluster ${zb.name}`),
  );
  if ((await rolloutState(hub, rollout)).status.currentStepIndex === 1) {
    // Still at apply: both balancers have zone-b out now.
    assert.deepEqual(await routedThere(kb, 'local-read'), ['zone-c'], 'out of cluster-b’s vmauth');
  }
  await eventually(
    'zone-b’s walk Healthy',
    async () => {
      const s = await rolloutState(hub, rollout);
      assert.notEqual(s.status.phase, 'Degraded', s.status.message);
      return s.status.phase === 'Healthy' && s.status.stableRS === s.status.currentPodHash ? s : undefined;
    },
    { timeoutMs: 240_000, intervalMs: 1000, unless: rolloutCanProgress(hub, rollout) },
  );
  figures['local vmauth: zone-b walk (s)'] = Math.round((Date.now() - walkStarted) / 100) / 10;
  const hubRead = await hubReads.stop();
  const localRead = await localReads.stop();
  const proxiedAfter = await podProxyRequests(b);
  figures['local vmauth: pod proxy GETs answered 200'] =
    (proxiedAfter['200'] ?? 0) - (proxiedBefore['200'] ?? 0);
  figures['local vmauth: reads (hub sent/failed, local sent/failed)'] =
    `${hubRead.sent}/${hubRead.failed}, ${localRead.sent}/${localRead.failed}`;

  assert.equal(await specValue(kb, 'vm-zone-b'), '13s');
  assert.deepEqual(await routedThere(kb, 'local-read'), ['zone-b', 'zone-c'], 'back in cluster-b’s vmauth');
  assert.deepEqual(
    await routedThere(hub, 'vmauth-read'),
    ['zone-a', 'zone-b', 'zone-c'],
    'back in the hub’s',
  );
  assert.deepEqual(await leftovers(), [], 'released, out of maintenance, nothing drained anywhere');
  assert.ok(
    (proxiedAfter['200'] ?? 0) - (proxiedBefore['200'] ?? 0) >= 2,
    'cluster-b’s vmauth reload evidence came through its API server (drain and restore)',
  );
  assert.equal(hubRead.failed, 0, JSON.stringify(hubRead.failures.slice(0, 3)));
  assert.equal(localRead.failed, 0, JSON.stringify(localRead.failures.slice(0, 3)));
  assert.equal(
    localRead.backendErrors,
    0,
    'cluster-b’s vmauth never sent a query to zone-b while it restarted',
  );
  assert.ok(localRead.sent > 20, `the local prober ran throughout (${localRead.sent})`);
  figures['local vmauth test (s)'] = Math.round((Date.now() - started) / 100) / 10;
});
