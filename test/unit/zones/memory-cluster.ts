// The zone world of the unit tests of the zone actions and the reconciler, on the in-memory Kubernetes
// (test/unit/kube/memory-kube.ts, with its instant operator): three operational zones behind a VMUser, the test
// Rollouts and their spec document, a vmauth /metrics fixture on the tests' clock, and the plugins wired to them.
// The real API server and operator are exercised by test/e2e/step/.

import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before } from 'node:test';
import { type Clock, silentLogger, systemClock } from '../../../plugin/goplugin/index.ts';
import type { ClusterClients } from '../../../plugin/kube/cluster-registry.ts';
import type { RolloutView, StepResult } from '../../../plugin/rollouts/types.ts';
import { ZoneReconciler } from '../../../plugin/zones/reconciler/reconciler.ts';
import { renderSteps } from '../../../plugin/zones/render.ts';
import { parseSpecDocument } from '../../../plugin/zones/spec.ts';
import { createZoneStepPlugin, type ZoneStepPluginOptions } from '../../../plugin/zones/step-plugin.ts';
import { MemoryKube, readyPod, secret } from '../kube/memory-kube.ts';

export const ns = 'vm';
const vmApi = 'operator.victoriametrics.com/v1beta1';

/** A vmauth /metrics page that reports a reload in the current second of `clock`: evidence for any write before
 *  it (vmauth stamps reloads to the second). */
export async function startVmauthFixture(
  clock: Clock = systemClock,
): Promise<{ port: number; close(): Promise<void> }> {
  const server: Server = createServer((_request, response) => {
    const at = Math.floor(clock.now().getTime() / 1000);
    response.end(
      `vm_app_version{version="vmauth-v1.151.0",short_version="v1.151.0"} 1\nvmauth_config_last_reload_successful 1\nvmauth_config_last_reload_success_timestamp_seconds ${at}\nvmauth_config_last_reload_errors_total 0\n`,
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** A vmauth /metrics fixture for the file's tests, on the tests' `clock`: started before them, closed after. */
export function useVmauthFixture(clock: Clock): { readonly port: number } {
  let fixture: Awaited<ReturnType<typeof startVmauthFixture>> | undefined;
  before(async () => {
    fixture = await startVmauthFixture(clock);
  });
  after(() => fixture?.close());
  return {
    get port() {
      if (fixture === undefined) throw new Error('the vmauth fixture starts before the tests');
      return fixture.port;
    },
  };
}

/** The labels the operator gives the pods of VMAuth `name` (plugin/vm/vmauth-pods.ts). */
export function operatorVmauthLabels(name: string): Record<string, string> {
  return {
    'app.kubernetes.io/name': 'vmauth',
    'app.kubernetes.io/instance': name,
    'app.kubernetes.io/component': 'monitoring',
    'managed-by': 'vm-operator',
  };
}

export const zoneNames = ['zone-a', 'zone-b', 'zone-c'] as const;

export function vmselectRef(zone: string) {
  return { crd: { kind: 'VMCluster/vmselect', name: `vm-${zone}`, namespace: ns } };
}

/** Three operational zones behind VMUser vmauth-read, one vmauth pod on `vmauthPort`; the instant operator on. */
export function threeZones(vmauthPort: number): MemoryKube {
  const kube = new MemoryKube({ operator: true });
  for (const zone of zoneNames) {
    kube.put({
      apiVersion: vmApi,
      kind: 'VMCluster',
      metadata: { name: `vm-${zone}`, namespace: ns, generation: 1 },
      spec: { clusterVersion: 'v1.151.0-cluster', vmstorage: { replicaCount: 1 } },
      status: { updateStatus: 'operational', observedGeneration: 1 },
    });
  }
  kube.put({
    apiVersion: vmApi,
    kind: 'VMUser',
    metadata: { name: 'vmauth-read', namespace: ns, generation: 1 },
    spec: { targetRefs: zoneNames.map(vmselectRef) },
    status: { updateStatus: 'operational', observedGeneration: 1 },
  });
  // The VMAuth that serves the VMUser, and its pod with the operator's labels: how the reconciler finds the
  // vmauth pods when no Rollout's spec document names them (plugin/zones/reconciler/record-trust.ts).
  kube.put({
    apiVersion: vmApi,
    kind: 'VMAuth',
    metadata: { name: 'vmauth', namespace: ns },
    spec: { selectAllByDefault: true },
  });
  kube.put(
    readyPod(ns, 'vmauth-0', { app: 'vmauth', ...operatorVmauthLabels('vmauth') }, { http: vmauthPort }),
  );
  return kube;
}

/** `names` (zone-a, zone-b …), each an operational VMCluster, all behind VMUser vmauth-read. */
export function zonesBehindOneVMUser(vmauthPort: number, names: readonly string[]): MemoryKube {
  const kube = threeZones(vmauthPort);
  const template = kube.getStored('VMCluster', 'vm-zone-c');
  for (const zone of names) {
    kube.put({
      ...template,
      apiVersion: template.apiVersion ?? '',
      kind: 'VMCluster',
      metadata: { name: `vm-${zone}`, namespace: ns },
    });
  }
  const user = kube.getStored('VMUser', 'vmauth-read');
  kube.put({
    ...user,
    apiVersion: user.apiVersion ?? '',
    kind: 'VMUser',
    spec: { targetRefs: names.map(vmselectRef) },
  });
  return kube;
}

/** The spec document of the test Rollouts: three zones, vmauth pods named, a short grace period. */
export function specDocument(
  overrideSpec: Record<string, unknown> = { clusterVersion: 'v1.152.0-cluster' },
): string {
  return JSON.stringify({
    overrideSpec,
    vmauth: {
      vmuser: 'vmauth-read',
      pods: [{ labelSelector: 'app=vmauth', port: 'http' }],
      drainGracePeriod: '0s',
    },
    vmagent: { vmagent: 'vmagent' },
    zones: Object.fromEntries(zoneNames.map((z) => [z, { vmcluster: `vm-${z}` }])),
  });
}

/** The read balancer of the test spec document as the records carry it (one balancer: an object). */
export const readsJson =
  '{"ref":{"kind":"VMUser","namespace":"vm","name":"vmauth-read"},' +
  '"pods":[{"namespace":"vm","labelSelector":"app=vmauth","port":"http"}],' +
  '"zones":[' +
  '{"zone":"zone-a","namespace":"vm","vmcluster":"vm-zone-a","hosts":["vmselect-vm-zone-a.vm.svc","vmselect-vm-zone-a.vm.svc.cluster.local","vmselect-vm-zone-a.vm"]},' +
  '{"zone":"zone-b","namespace":"vm","vmcluster":"vm-zone-b","hosts":["vmselect-vm-zone-b.vm.svc","vmselect-vm-zone-b.vm.svc.cluster.local","vmselect-vm-zone-b.vm"]},' +
  '{"zone":"zone-c","namespace":"vm","vmcluster":"vm-zone-c","hosts":["vmselect-vm-zone-c.vm.svc","vmselect-vm-zone-c.vm.svc.cluster.local","vmselect-vm-zone-c.vm"]}' +
  '],"reloadEvidence":"required"}';

/** The test spec document with `zones` (zone name → VMCluster) instead of its own, and `extra` fields over it. */
export function specOf(zones: Record<string, string>, extra: Record<string, unknown> = {}): string {
  const doc = JSON.parse(specDocument()) as Record<string, unknown>;
  doc.zones = Object.fromEntries(Object.entries(zones).map(([z, vmcluster]) => [z, { vmcluster }]));
  return JSON.stringify({ ...doc, ...extra });
}

/** The VMClusters (names, sorted) VMUser `name` routes reads to now, as its targetRefs say. */
export function routedObjects(kube: MemoryKube, name = 'vmauth-read'): string[] {
  const refs = (kube.getStored('VMUser', name).spec?.targetRefs ?? []) as { crd?: { name?: string } }[];
  return refs.map((r) => r.crd?.name ?? '?').sort();
}

export function walkSteps(): { plugin: { name: string; config: { zone: string; action: string } } }[] {
  return zoneNames.flatMap((zone) =>
    ['drainReads', 'apply', 'restoreReads'].map((action) => ({
      plugin: { name: 'vmzones/step', config: { zone, action } },
    })),
  );
}

export type RolloutStatus = {
  currentPodHash: string;
  stableRS: string;
  currentStepIndex?: number;
  abort?: boolean;
};

/** A Rollout walking `spec` with the steps `vmzones render` writes for it (no gates, no pauses). */
export function renderedRollout(name: string, status: RolloutStatus, spec: string) {
  const object = rolloutObject(name, status, spec);
  object.spec.strategy.canary.steps = renderSteps(parseSpecDocument(spec), {
    pauseBetweenZones: 'none',
    healthTemplate: '',
  }) as typeof object.spec.strategy.canary.steps;
  return object;
}

export function rolloutObject(name: string, status: RolloutStatus, spec = specDocument()) {
  return {
    apiVersion: 'argoproj.io/v1alpha1',
    kind: 'Rollout',
    metadata: { name, namespace: ns, uid: `uid-${name}` },
    spec: {
      template: { metadata: { annotations: { 'vmzones.io/spec': spec } } },
      strategy: { canary: { steps: walkSteps() } },
    },
    status,
  };
}

/** The test spec document with zones in registered clusters (docs/multicluster.md): zone → cluster name. */
export function clusterSpecDocument(clusterOf: Record<string, string | undefined>): string {
  const doc = JSON.parse(specDocument()) as { zones: Record<string, Record<string, string>> };
  for (const [zone, cluster] of Object.entries(clusterOf)) {
    const entry = doc.zones[zone];
    if (entry !== undefined && cluster !== undefined) entry.cluster = cluster;
  }
  return JSON.stringify(doc);
}

/** An Argo CD cluster Secret in argo-rollouts registering `name` (plugin/kube/cluster-registry.ts). */
export function clusterSecret(name: string, server: string, config: object) {
  const s = secret('argo-rollouts', `cluster-${name}`, { name, server, config: JSON.stringify(config) });
  return { ...s, metadata: { ...s.metadata, labels: { 'argocd.argoproj.io/secret-type': 'cluster' } } };
}

/**
 * The step plugin (its own reconciler off, short in-call waits) and a reconciler over `hub` and `clusters`, both on
 * `clock` (the system clock by default, for the end-to-end tests), the reconciler listing `namespaces` only, when
 * given, as a namespace-scoped install does.
 */
export function zonePlugins(
  hub: MemoryKube,
  clusters: ClusterClients,
  { namespaces, clock = systemClock }: { namespaces?: readonly string[]; clock?: Clock } = {},
) {
  const plugin = createZoneStepPlugin({
    kube: hub,
    clusters,
    reconciler: false,
    logger: silentLogger,
    inCallWaitMs: 1_000,
    clock,
  });
  return {
    plugin,
    reconciler: new ZoneReconciler({
      kube: hub,
      clusters,
      logger: silentLogger,
      clock,
      ...(namespaces === undefined ? {} : { namespaces }),
    }),
  };
}

/** Reconciler passes until every handed-over zone is done (or `passes` ran); the last pass's progress. */
export async function untilSettled(reconciler: ZoneReconciler, passes = 10): Promise<Record<string, string>> {
  let progress: Record<string, string> = {};
  for (let i = 0; i < passes; i++) {
    progress = await reconciler.tick();
    if (Object.values(progress).every((p) => p === 'done')) break;
  }
  return progress;
}

/**
 * The step plugin of one Rollout (default `walk`) over `kube`, as the controller calls it: `call` one operation of
 * a zone's action (with the previous status, as the controller passes it), `run` an action again while it says
 * Running (up to 5 more calls, each given the status before it).
 */
export function stepPluginOf(
  kube: MemoryKube,
  clock: Clock,
  {
    rollout = 'walk',
    inCallWaitMs = 1_000,
    options = {},
  }: { rollout?: string; inCallWaitMs?: number; options?: ZoneStepPluginOptions } = {},
) {
  const plugin = createZoneStepPlugin({
    clock,
    kube,
    reconciler: false,
    logger: silentLogger,
    inCallWaitMs,
    ...options,
  });
  const view = () => kube.getStored('Rollout', rollout, 'argoproj.io/v1alpha1') as unknown as RolloutView;
  /** `zone`: one zone (`config.zone`), or the zones of a wave (`config.zones`). */
  const call = (
    operation: 'run' | 'abort' | 'terminate',
    zone: string | readonly string[],
    action: string,
    previous?: StepResult,
  ): Promise<StepResult> =>
    plugin[operation](view(), {
      pluginName: 'vmzones/step',
      config: typeof zone === 'string' ? { zone, action } : { zones: [...zone], action },
      status: previous?.status,
    });
  const run = async (zone: string | readonly string[], action: string): Promise<StepResult> => {
    let result = await call('run', zone, action);
    for (let i = 0; i < 5 && result.phase === 'Running'; i++)
      result = await call('run', zone, action, result);
    return result;
  };
  return { plugin, call, run };
}
