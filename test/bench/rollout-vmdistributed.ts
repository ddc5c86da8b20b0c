// Run (b) of the side-by-side rollout benchmark: the VictoriaMetrics operator's own VMDistributed (v0.74.1) walks
// the same three VMClusters with the same change. What it needs on the sandbox (docs/testing.md, "VMDistributed"):
// - its VMAgents' Services need endpoints: Pods report 127.0.0.1, which the endpoint controllers refuse, so each
//   VMAgent Service gets one EndpointSlice with addressType FQDN and address 127.0.0.1;
// - its VMAuth runs with waitForConfigReload: the operator scrapes the config-reloader sidecar on the pod's
//   address, port 8435, for configreloader_reload_content_hash. The benchmark runs the operator module's real
//   cmd/config-reloader with the sidecar's own arguments (read from the Deployment the operator wrote), writing
//   the config file the sandbox's vmauth process reads and calling that vmauth's reload URL.

import { setTimeout as sleep } from 'node:timers/promises';
import type { KubeObject } from '../../plugin/kube/objects.ts';
import { vmApiVersion } from '../../plugin/vm/vmcluster.ts';
import { cluster, sandboxKube, startReadProber } from '../e2e/step/harness.ts';
import type { Sandbox } from '../sandbox/helper.ts';
import { loadgenStatus } from '../sandbox/loadgen-client.ts';
import { vmagentName } from '../sandbox/manifests.ts';
import { freePort, isPortFree } from '../sandbox/ports.ts';
import { startDaemon, stopDaemon } from '../sandbox/processes.ts';
import { operationalAtGeneration, type RunFigures, samplesLost, seconds } from './rollout-sandbox.ts';
import { benchChange, benchZones, waitFor } from './rollout-vmzones.ts';

const ns = 'vm';
const name = 'vmd';
/** The operator scrapes every VMAuth pod's config-reloader at this fixed port (build.ConfigReloaderDefaultPort). */
const configReloaderPort = 8435;

const agentNameOf = (zone: string, i: number) => (i === 0 ? vmagentName : `vmagent-${zone}`);

async function vmdistributed(sandbox: Sandbox, shippedDefaults: boolean): Promise<object> {
  const kube = sandboxKube(sandbox);
  const zones = await Promise.all(
    benchZones.map(async (z, i) => {
      const spec = (await cluster(kube, z.vmcluster)).spec as Record<string, unknown>;
      const agentPort = i === 0 ? undefined : String(await freePort());
      return {
        name: z.zone,
        // The zone's spec replaces the VMCluster's whole spec: repeat it as it is.
        vmcluster: { name: z.vmcluster, spec },
        vmagent: { name: agentNameOf(z.zone, i), spec: agentPort ? { port: agentPort } : {} },
      };
    }),
  );
  const agent = (
    await kube.get({ apiVersion: vmApiVersion, kind: 'VMAgent', namespace: ns, name: vmagentName })
  ).spec as { port?: string; image?: unknown };
  zones[0]?.vmagent.spec && Object.assign(zones[0].vmagent.spec, { port: agent.port });
  return {
    apiVersion: 'operator.victoriametrics.com/v1alpha1',
    kind: 'VMDistributed',
    metadata: { name, namespace: ns },
    spec: {
      // Equal pauses: updatePause 0; with its shipped defaults, the operator's own updatePause. readyTimeout, traffic
      // modes and everything else at their defaults either way.
      zoneCommon: {
        ...(shippedDefaults ? {} : { updatePause: '0s' }),
        vmagent: { spec: { image: agent.image } },
      },
      vmauth: {
        name,
        spec: {
          port: String(await freePort()),
          image: { tag: versionTag(sandbox) },
          // The operator renders its read and write routes as named defaultTargetRefs that only a VMUser or the
          // unauthorized user can use; the probe reads through "read" without credentials.
          unauthorizedUserAccessSpec: { targetRefs: [{ name: 'read' }] },
        },
      },
      zones,
    },
  };
}

function versionTag(sandbox: Sandbox): string {
  return sandbox.endpoint('VMAuth', 'vmauth').version;
}

async function ensureEndpointSlices(sandbox: Sandbox, done: Set<string>): Promise<void> {
  const kube = sandboxKube(sandbox);
  for (const [i, z] of benchZones.entries()) {
    const service = `vmagent-${agentNameOf(z.zone, i)}`;
    if (done.has(service)) continue;
    const svc = await kube
      .get({ apiVersion: 'v1', kind: 'Service', namespace: ns, name: service })
      .catch(() => undefined);
    if (!svc) continue;
    const ports = ((svc.spec as { ports?: { name?: string; port: number }[] }).ports ?? []).map((p) => ({
      name: p.name,
      port: p.port,
      protocol: 'TCP',
    }));
    await sandbox.kubectl.apply([
      {
        apiVersion: 'discovery.k8s.io/v1',
        kind: 'EndpointSlice',
        metadata: {
          name: `${service}-loopback`,
          namespace: ns,
          labels: {
            'kubernetes.io/service-name': service,
            'endpointslice.kubernetes.io/managed-by': 'vmzones-bench',
          },
        },
        addressType: 'FQDN',
        endpoints: [{ addresses: ['127.0.0.1'], conditions: { ready: true } }],
        ports,
      },
    ]);
    done.add(service);
  }
}

/**
 * Starts the real config-reloader with the arguments the operator gave the sidecar, pointed at the sandbox's vmauth
 * process; undefined while the operator has not written the VMAuth Deployment or the data plane not started vmauth.
 */
async function startConfigReloader(sandbox: Sandbox, log: (line: string) => void) {
  const kube = sandboxKube(sandbox);
  const deployment = await kube
    .get({ apiVersion: 'apps/v1', kind: 'Deployment', namespace: ns, name: `vmauth-${name}` })
    .catch(() => undefined);
  if (deployment === undefined) return undefined;
  type Container = { name: string; args?: string[] };
  const containers = (deployment.spec as { template: { spec: { containers: Container[] } } }).template.spec
    .containers;
  const sidecar = containers.find((c) => c.name === 'config-reloader');
  if (!sidecar)
    throw new Error(
      `Deployment vmauth-${name} has no config-reloader container: ${containers.map((c) => c.name).join(', ')}`,
    );
  let auth: ReturnType<Sandbox['endpoint']>;
  try {
    auth = sandbox.endpoint('VMAuth', name);
  } catch {
    return undefined;
  }
  const configFile = auth.args.find((a) => a.startsWith('-auth.config='))?.slice('-auth.config='.length);
  if (!configFile)
    throw new Error(`the sandbox's vmauth ${name} has no -auth.config: ${auth.args.join(' ')}`);
  const port = new URL(auth.url).port;
  const args = (sidecar.args ?? []).map((a) => {
    const [flag] = a.split('=');
    if (flag === '--config-envsubst-file') return `${flag}=${configFile}`;
    if (flag === '--reload-url') return `${flag}=http://127.0.0.1:${port}/-/reload`;
    if (flag === '--http.listenAddr') return `${flag}=127.0.0.1:${configReloaderPort}`;
    return a;
  });
  if (!args.some((a) => a.startsWith('--http.listenAddr')))
    args.push(`--http.listenAddr=127.0.0.1:${configReloaderPort}`);
  if (!(await isPortFree(configReloaderPort)))
    throw new Error(
      `port ${configReloaderPort} is taken: the operator scrapes the config-reloader only there; stop what holds it`,
    );
  log(`VMDistributed: config-reloader ${args.join(' ')}`);
  return startDaemon({
    name: 'config-reloader',
    command: sandbox.state.binaries['config-reloader'],
    args,
    log: `${sandbox.state.stateDir}/logs/config-reloader.log`,
    env: { ...process.env, KUBECONFIG: sandbox.state.kubeconfig },
    ports: [configReloaderPort],
  });
}

interface VmdState {
  status?: { updateStatus?: string; reason?: string; observedGeneration?: number };
  metadata: { generation?: number };
}

function readRouted(auth: KubeObject | undefined): string[] {
  const refs = (
    auth?.spec as { defaultTargetRefs?: { name?: string; crd?: { objects?: { name: string }[] } }[] }
  )?.defaultTargetRefs;
  const read = refs?.find((r) => r.name === 'read');
  return (read?.crd?.objects ?? []).map((o) => o.name);
}

export async function runVmdistributed(
  sandbox: Sandbox,
  log: (line: string) => void,
  shippedDefaults = false,
): Promise<RunFigures> {
  const kube = sandboxKube(sandbox);
  const vmdRef = {
    apiVersion: 'operator.victoriametrics.com/v1alpha1',
    kind: 'VMDistributed',
    namespace: ns,
    name,
  };
  const authRef = { apiVersion: vmApiVersion, kind: 'VMAuth', namespace: ns, name };
  const slices = new Set<string>();
  await sandbox.kubectl.apply([await vmdistributed(sandbox, shippedDefaults)]);
  log('VMDistributed: created; waiting for it to be operational');
  let reloader: Awaited<ReturnType<typeof startConfigReloader>>;
  try {
    await waitFor(async () => {
      await ensureEndpointSlices(sandbox, slices);
      reloader ??= await startConfigReloader(sandbox, log);
      const vmd = (await kube.get(vmdRef)) as unknown as VmdState;
      if (vmd.status?.updateStatus === 'failed')
        throw new Error(`VMDistributed failed: ${vmd.status.reason}`);
      return vmd.status?.updateStatus === 'operational' &&
        (vmd.status.observedGeneration ?? 0) >= (vmd.metadata.generation ?? 1) &&
        slices.size === benchZones.length &&
        reloader !== undefined
        ? true
        : undefined;
    }, 10 * 60_000);
    // Let the VMAgents it rewrote at creation deliver what they queued before the change.
    await sleep(15_000);
    const vmauth = sandbox.endpoint('VMAuth', name).url;
    const seqBefore = (await loadgenStatus(sandbox)).lastSeq;
    const prober = startReadProber(vmauth, undefined);
    const generations = await Promise.all(
      benchZones.map(async (z) => (await cluster(kube, z.vmcluster)).metadata.generation ?? 0),
    );
    const changedAt = Date.now();
    await kube.mergePatch(vmdRef, { spec: { zoneCommon: { vmcluster: { spec: benchChange } } } });
    log('VMDistributed: change committed (zoneCommon.vmcluster.spec)');
    const windows = benchZones.map((z) => ({
      zone: z.zone,
      startMs: Number.NaN,
      endMs: Number.NaN,
      changed: false,
    }));
    await waitFor(async () => {
      const routed = readRouted(await kube.get(authRef).catch(() => undefined));
      for (const [i, z] of benchZones.entries()) {
        const w = windows[i];
        if (!w) continue;
        const gen = (await cluster(kube, z.vmcluster)).metadata.generation ?? 0;
        if (gen > (generations[i] ?? 0)) w.changed = true;
        if (Number.isNaN(w.startMs) && !routed.includes(z.vmcluster)) {
          w.startMs = Date.now();
          log(`VMDistributed: ${z.zone} out of vmauth at ${seconds(w.startMs - changedAt).toFixed(1)} s`);
        }
        if (!Number.isNaN(w.startMs) && Number.isNaN(w.endMs) && routed.includes(z.vmcluster) && w.changed) {
          w.endMs = Date.now();
          log(`VMDistributed: ${z.zone} back in vmauth at ${seconds(w.endMs - changedAt).toFixed(1)} s`);
        }
      }
      const vmd = (await kube.get(vmdRef)) as unknown as VmdState;
      if (vmd.status?.updateStatus === 'failed')
        throw new Error(`VMDistributed failed: ${vmd.status.reason}`);
      const allDone = windows.every((w) => !Number.isNaN(w.endMs));
      const allReady = (
        await Promise.all(benchZones.map((z) => operationalAtGeneration(kube, z.vmcluster)))
      ).every(Boolean);
      return allDone && allReady && vmd.status?.updateStatus === 'operational' ? true : undefined;
    }, 30 * 60_000);
    const finishedAt = Date.now();
    const reads = await prober.stop();
    const seqAfter = (await loadgenStatus(sandbox)).lastSeq - 3;
    const lost = await samplesLost(sandbox, benchZones, seqBefore, seqAfter);
    return {
      product: 'VMDistributed',
      settings: `operator v0.74.1; ${shippedDefaults ? 'zoneCommon.updatePause its default' : 'zoneCommon.updatePause 0s'}; readyTimeout 5m (default); own VMAuth with waitForConfigReload (forced by the operator), real config-reloader; one VMAgent per zone (zone-a: the sandbox vmagent fed by the load generator)`,
      zones: windows.map(({ zone, startMs, endMs }) => ({ zone, startMs, endMs })),
      totalS: seconds(finishedAt - changedAt),
      reads,
      samplesLost: lost,
      samplesChecked: Math.max(0, seqAfter - seqBefore),
    };
  } finally {
    if (reloader) await stopDaemon(reloader);
  }
}
