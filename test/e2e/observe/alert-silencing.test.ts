// Alert silencing with real processes: the zone's maintenance comes from the VMCluster annotations in the sandbox's
// kube-apiserver, through the observe endpoint of a real vmzones plugin process (step role), scraped by a real
// vmagent into a real victoria-metrics, where a real vmalert evaluates the VMStorageDown rule shipped in
// manifests/observe/vmrule.yaml. The fault is real too: vmagent scrapes a vmstorage target of zone-a that does not
// answer (up == 0), next to zone-b's live VictoriaMetrics process (up == 1).
// The rule must not fire while vmzones has zone-a in maintenance, must fire for the same fault once it is out,
// and must stop when it is back in.

import assert from 'node:assert/strict';
import { once } from 'node:events';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { parse, stringify } from 'yaml';
import type { RolloutView } from '../../../plugin/rollouts/types.ts';
import { vmclusterRef } from '../../../plugin/vm/vmcluster.ts';
import { stepLeasePatch } from '../../../plugin/zones/moves/lease.ts';
import { releasePatch } from '../../../plugin/zones/moves/release.ts';
import { zoneIdentity } from '../../../plugin/zones/state/zone-annotations.ts';
import { patchCluster } from '../../../plugin/zones/state/zone-object.ts';
import { resolveTarget } from '../../../plugin/zones/step/target.ts';
import { eventually } from '../../sandbox/eventually.ts';
import { type Sandbox, startSandbox } from '../../sandbox/helper.ts';
import { freePort } from '../../sandbox/ports.ts';
import { type DaemonRecord, startDaemon, stopDaemon, waitFor } from '../../sandbox/processes.ts';
import { repoRoot } from '../../sandbox/sandbox.ts';
import { ns, rolloutObject, sandboxKube, zoneSpec } from '../step/harness.ts';

const bundle = join(repoRoot, 'dist', 'vmzones.mjs');
const rolloutName = 'observe-alerts';
const alertName = 'VMStorageDown';

let sandbox: Sandbox;
const daemons: DaemonRecord[] = [];
const hosts: Socket[] = [];

before(async () => {
  if (!existsSync(bundle)) throw new Error(`${bundle} is missing: run "npm run build" first`);
  sandbox = await startSandbox({ zones: 2, plugin: false });
});

after(async () => {
  for (const host of hosts) host.destroy();
  for (const daemon of daemons.reverse()) await stopDaemon(daemon, 5_000);
  await sandbox?.stop();
});

async function json(url: string): Promise<unknown> {
  const response = await fetch(url);
  if (!response.ok)
    throw new Error(`GET ${url}: HTTP ${response.status}: ${(await response.text()).slice(0, 300)}`);
  return response.json();
}

/** The series of an instant query on victoria-metrics. */
async function query(
  vm: string,
  expr: string,
): Promise<{ metric: Record<string, string>; value: [number, string] }[]> {
  const body = (await json(`${vm}/api/v1/query?query=${encodeURIComponent(expr)}`)) as {
    data: { result: { metric: Record<string, string>; value: [number, string] }[] };
  };
  return body.data.result;
}

interface VmalertAlert {
  name: string;
  state: string;
  labels: Record<string, string>;
}

async function activeAlerts(vmalert: string): Promise<VmalertAlert[]> {
  const body = (await json(`${vmalert}/api/v1/alerts`)) as { data: { alerts: VmalertAlert[] } };
  return body.data.alerts.filter((a) => a.name === alertName);
}

async function ruleHealth(
  vmalert: string,
): Promise<{ health: string; lastError: string; lastEvaluation: string }> {
  const body = (await json(`${vmalert}/api/v1/rules`)) as {
    data: {
      groups: { rules: { name: string; health: string; lastError: string; lastEvaluation: string }[] }[];
    };
  };
  const rule = body.data.groups.flatMap((g) => g.rules).find((r) => r.name === alertName);
  if (rule === undefined) throw new Error(`vmalert has no rule ${alertName}`);
  return rule;
}

function start(name: string, command: string, args: string[], env?: NodeJS.ProcessEnv): DaemonRecord {
  const dir = join(sandbox.state.stateDir, 'observe');
  mkdirSync(dir, { recursive: true });
  const daemon = startDaemon({ name, command, args, log: join(dir, `${name}.log`), ...(env ? { env } : {}) });
  daemons.push(daemon);
  return daemon;
}

test('VMStorageDown stays silent while vmzones has the zone in maintenance and fires for the same fault outside it', async () => {
  const kube = sandboxKube(sandbox);
  const dir = join(sandbox.state.stateDir, 'observe');
  mkdirSync(dir, { recursive: true });
  const bins = sandbox.state.binaries;

  // The example manifests are valid for the operator's CRDs (server-side dry run), and the rule under test is theirs.
  const vmrulePath = join(repoRoot, 'manifests', 'observe', 'vmrule.yaml');
  await sandbox.kubectl.run(['create', 'namespace', 'monitoring']);
  await sandbox.kubectl.run(['apply', '--dry-run=server', '-f', vmrulePath]);
  await sandbox.kubectl.run([
    'apply',
    '--dry-run=server',
    '-f',
    join(repoRoot, 'manifests', 'observe', 'vmpodscrape.yaml'),
  ]);
  const vmrule = parse(readFileSync(vmrulePath, 'utf8')) as {
    spec: { groups: { name: string; rules: { alert?: string; for?: string }[] }[] };
  };
  const groups = vmrule.spec.groups.map((g) => ({
    ...g,
    interval: '1s',
    // Same expression, no pending period: the test looks at what the expression selects.
    rules: g.rules.filter((r) => r.alert === alertName).map((r) => ({ ...r, for: '0s' })),
  }));
  assert.equal(groups.flatMap((g) => g.rules).length, 1, `${vmrulePath} has one ${alertName} rule`);
  writeFileSync(join(dir, 'rules.yaml'), stringify({ groups }));

  // A Rollout whose spec names the zones, and zone-a in maintenance, written by the zones layer's own helpers.
  await sandbox.kubectl.apply([
    rolloutObject(
      rolloutName,
      zoneSpec({}, { zones: { 'zone-a': { vmcluster: 'vm-zone-a' }, 'zone-b': { vmcluster: 'vm-zone-b' } } }),
      [],
    ),
  ]);
  // The controller gives it a revision (status.currentPodHash), which the lease records.
  const rollout = await eventually('the Rollout has a revision', async () => {
    const object = await kube.get({
      apiVersion: 'argoproj.io/v1alpha1',
      kind: 'Rollout',
      namespace: ns,
      name: rolloutName,
    });
    return (object.status as { currentPodHash?: string } | undefined)?.currentPodHash ? object : undefined;
  });
  // The lease and maintenance mark exactly as drainReads of this Rollout writes them.
  const target = resolveTarget(rollout as unknown as RolloutView, { zone: 'zone-a', action: 'drainReads' });
  const zoneA = vmclusterRef(ns, 'vm-zone-a');
  assert.deepEqual(target.cluster, zoneA);
  const enterMaintenance = async () => {
    const cluster = await kube.get(zoneA);
    await patchCluster(
      kube,
      zoneA,
      stepLeasePatch(target, zoneIdentity(cluster), new Date(), 'alert-silencing test'),
      cluster.metadata.resourceVersion,
    );
  };
  const leaveMaintenance = async () => {
    const cluster = await kube.get(zoneA);
    await patchCluster(kube, zoneA, releasePatch(), cluster.metadata.resourceVersion);
  };
  await enterMaintenance();

  // The plugin process as the controller starts it (cookie + args), against the sandbox's API server.
  const observePort = await freePort();
  const plugin = start(
    'vmzones-step',
    process.execPath,
    [bundle, '--observe-address', `127.0.0.1:${observePort}`, '--observe-cache-ttl', '1s'],
    {
      ...process.env,
      ARGO_ROLLOUTS_RPC_PLUGIN: 'step',
      KUBECONFIG: sandbox.state.kubeconfig,
    },
  );
  // Connect as the controller would (go-plugin's handshake line names the socket), so the plugin does not end for
  // want of a host (its connect timeout) however long this test runs; no RPC is made.
  const socketPath = await waitFor(
    async () => /^1\|1\|unix\|([^|]+)\|netrpc\|$/m.exec(readFileSync(plugin.log, 'utf8'))?.[1],
    { part: 'vmzones plugin handshake', log: plugin.log, pid: plugin.pid, timeoutMs: 30_000 },
  );
  const host = connect(socketPath);
  await once(host, 'connect');
  hosts.push(host);
  const observe = `http://127.0.0.1:${observePort}`;
  await waitFor(async () => ((await fetch(`${observe}/healthz`)).ok ? true : undefined), {
    part: 'vmzones observe endpoint',
    log: plugin.log,
    pid: plugin.pid,
    timeoutMs: 30_000,
  });

  const vmPort = await freePort();
  const vm = `http://127.0.0.1:${vmPort}`;
  const victoria = start('victoria-metrics', bins['victoria-metrics'], [
    `-storageDataPath=${join(dir, 'vm-data')}`,
    `-httpListenAddr=127.0.0.1:${vmPort}`,
    '-retentionPeriod=1d',
    '-search.latencyOffset=0s',
    '-search.disableCache',
  ]);
  await waitFor(async () => ((await fetch(`${vm}/health`)).ok ? true : undefined), {
    part: 'victoria-metrics',
    log: victoria.log,
    pid: victoria.pid,
    timeoutMs: 30_000,
  });

  // zone-a's vmstorage: a port nothing listens on; zone-b's: its live process in the sandbox.
  const deadPort = await freePort();
  const zoneB = new URL(sandbox.endpoint('VMCluster', 'vm-zone-b').url);
  const scrape = {
    global: { scrape_interval: '1s' },
    scrape_configs: [
      {
        job_name: 'vmzones',
        // As a VMPodScrape with honorLabels: the zone's namespace label wins over the pod's.
        honor_labels: true,
        static_configs: [{ targets: [`127.0.0.1:${observePort}`], labels: { namespace: 'argo-rollouts' } }],
      },
      {
        job_name: 'vmstorage-vm-zone-a',
        static_configs: [{ targets: [`127.0.0.1:${deadPort}`], labels: { namespace: ns } }],
      },
      {
        job_name: 'vmstorage-vm-zone-b',
        static_configs: [{ targets: [zoneB.host], labels: { namespace: ns } }],
      },
    ],
  };
  writeFileSync(join(dir, 'scrape.yaml'), stringify(scrape));
  const agentPort = await freePort();
  start('vmagent', bins.vmagent, [
    `-promscrape.config=${join(dir, 'scrape.yaml')}`,
    `-remoteWrite.url=${vm}/api/v1/write`,
    `-remoteWrite.tmpDataPath=${join(dir, 'vmagent-queue')}`,
    '-remoteWrite.flushInterval=500ms',
    `-httpListenAddr=127.0.0.1:${agentPort}`,
  ]);

  const alertPort = await freePort();
  const vmalert = `http://127.0.0.1:${alertPort}`;
  const alerting = start('vmalert', bins.vmalert, [
    `-rule=${join(dir, 'rules.yaml')}`,
    `-datasource.url=${vm}`,
    '-notifier.blackhole',
    '-evaluationInterval=1s',
    '-rule.evalDelay=0s',
    `-httpListenAddr=127.0.0.1:${alertPort}`,
  ]);
  await waitFor(async () => ((await fetch(`${vmalert}/health`)).ok ? true : undefined), {
    part: 'vmalert',
    log: alerting.log,
    pid: alerting.pid,
    timeoutMs: 30_000,
  });

  // Both halves of the rule are in the data: the fault, and the maintenance the endpoint reports.
  await eventually('zone-a vmstorage down and zone-b up in victoria-metrics', async () => {
    const up = await query(vm, 'up{job=~"vmstorage-.+"}');
    const byJob = Object.fromEntries(up.map((s) => [s.metric.job, s.value[1]]));
    return byJob['vmstorage-vm-zone-a'] === '0' && byJob['vmstorage-vm-zone-b'] === '1' ? true : undefined;
  });
  await eventually('vmzones_zone_maintenance{vmcluster="vm-zone-a"} == 1 in victoria-metrics', async () => {
    const series = await query(vm, 'vmzones_zone_maintenance{vmcluster="vm-zone-a"} == 1');
    return series[0]?.metric.namespace === ns && series[0]?.metric.zone === 'zone-a' ? true : undefined;
  });

  // In maintenance: several evaluations, none fires, and the rule evaluates without error.
  const quietSince = Date.now();
  while (Date.now() - quietSince < 6_000) {
    assert.deepEqual(await activeAlerts(vmalert), [], 'no VMStorageDown while zone-a is in maintenance');
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  const health = await ruleHealth(vmalert);
  assert.equal(health.health, 'ok', health.lastError);
  assert.ok(
    Date.parse(health.lastEvaluation) >= quietSince,
    `rule evaluated since ${new Date(quietSince).toISOString()}`,
  );

  // Out of maintenance: the same fault fires, for zone-a only.
  const released = Date.now();
  await leaveMaintenance();
  const firing = await eventually(
    'VMStorageDown firing for vm-zone-a',
    async () => {
      const alerts = await activeAlerts(vmalert);
      return alerts.some((a) => a.state === 'firing') ? alerts : undefined;
    },
    60_000,
  );
  const fireSeconds = (Date.now() - released) / 1000;
  assert.deepEqual(
    firing.map((a) => [a.labels.vmcluster, a.labels.namespace]),
    [['vm-zone-a', ns]],
  );
  const page = await (await fetch(`${observe}/metrics`)).text();
  process.stderr.write(
    `[observe] /metrics excerpt:\n${page
      .split('\n')
      .filter((l) =>
        /^vmzones_(zone_(maintenance|state|snapshot)|kube_api|rpc_duration_seconds_count)/.test(l),
      )
      .join('\n')}\n`,
  );
  assert.match(
    page,
    /\nvmzones_zone_maintenance\{namespace="vm",kind="VMCluster",vmcluster="vm-zone-a",zone="zone-a",rollout="vm\/observe-alerts",role="step"\} 0\n/,
  );

  // Back in maintenance: it resolves.
  const entered = Date.now();
  await enterMaintenance();
  await eventually(
    'VMStorageDown resolved once zone-a is in maintenance again',
    async () => ((await activeAlerts(vmalert)).length === 0 ? true : undefined),
    60_000,
  );
  const silenceSeconds = (Date.now() - entered) / 1000;
  process.stderr.write(
    `[observe] release → firing in ${fireSeconds.toFixed(1)} s; maintenance → silenced in ${silenceSeconds.toFixed(1)} s\n`,
  );
  assert.equal(plugin.pid > 0 && process.kill(plugin.pid, 0), true, 'the plugin process is still running');
});
