// A writable in-memory Kubernetes for unit tests of the zone actions and the reconciler: JSON merge patches with
// the API server's rules that vmzones relies on (resourceVersion precondition → 409, generation bumped by a spec
// change, dry run stores nothing, nulls delete), lists across namespaces, and an "instant operator" that marks a
// VMCluster or VMUser operational at its generation after each write unless the test holds it back. The real API
// server and operator are exercised by test/e2e/step/.

import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before } from 'node:test';
import { silentLogger } from '../../../plugin/goplugin/index.ts';
import type { ClusterClients } from '../../../plugin/kube/cluster-registry.ts';
import {
  KubeError,
  type KubeObject,
  type ObjectRef,
  type PatchOptions,
} from '../../../plugin/kube/objects.ts';
import { isJsonObject, type JsonValue, mergePatch } from '../../../plugin/zones/merge-patch.ts';
import { ZoneReconciler } from '../../../plugin/zones/reconciler.ts';
import { createZoneStepPlugin } from '../../../plugin/zones/step-plugin.ts';
import { MemoryKube, readyPod } from '../gates/memory-kube.ts';
import { secret } from '../kube/memory-kube.ts';

export const ns = 'vm';
const vmApi = 'operator.victoriametrics.com/v1beta1';

export class MemoryCluster extends MemoryKube {
  readonly patches: { ref: string; body: Record<string, unknown>; dryRun: boolean }[] = [];
  /** Objects (`Kind ns/name`) the instant operator leaves alone, e.g. a VMCluster that stays `expanding`. */
  readonly heldBack = new Set<string>();
  /** Spec fields (top level) a VMCluster keeps; others are pruned as a structural schema would. */
  knownVMClusterFields: Set<string> | undefined;
  /** Errors for the next writes of a kind (once each). */
  readonly failNextPatch = new Map<string, KubeError>();
  #version = 100;

  private stored(ref: ObjectRef): KubeObject | undefined {
    return this.objects.get(`${ref.apiVersion}|${ref.kind}|${ref.namespace}|${ref.name}`);
  }

  override put(object: KubeObject & { apiVersion: string; kind: string }): this {
    object.metadata.resourceVersion ??= String(this.#version++);
    object.metadata.generation ??= 1;
    object.metadata.uid ??= `uid-${object.metadata.name}`;
    return super.put(object);
  }

  override async mergePatch(
    ref: ObjectRef,
    patch: Record<string, unknown>,
    resourceVersion?: string,
    options?: PatchOptions,
  ): Promise<KubeObject> {
    const failure = this.failNextPatch.get(ref.kind);
    if (failure !== undefined) {
      this.failNextPatch.delete(ref.kind);
      throw failure;
    }
    const what = `${ref.kind} ${ref.namespace}/${ref.name}`;
    const current = this.stored(ref);
    if (current === undefined) throw new KubeError('notFound', `patching ${what}: HTTP 404`, 404);
    if (resourceVersion !== undefined && resourceVersion !== current.metadata.resourceVersion) {
      throw new KubeError('conflict', `patching ${what}: HTTP 409: the object has been modified`, 409);
    }
    this.patches.push({ ref: what, body: structuredClone(patch), dryRun: options?.dryRun === true });
    const merged = mergePatch(current as unknown as JsonValue, patch as JsonValue) as unknown as KubeObject;
    if (ref.kind === 'VMCluster' && this.knownVMClusterFields !== undefined && isJsonObject(merged.spec)) {
      for (const field of Object.keys(merged.spec)) {
        if (!this.knownVMClusterFields.has(field)) delete merged.spec[field];
      }
    }
    const specChanged = JSON.stringify(merged.spec ?? {}) !== JSON.stringify(current.spec ?? {});
    merged.metadata.generation = (current.metadata.generation ?? 1) + (specChanged ? 1 : 0);
    merged.metadata.resourceVersion = String(this.#version++);
    if (!this.heldBack.has(what) && ['VMCluster', 'VMSingle', 'VLCluster', 'VMUser'].includes(ref.kind)) {
      merged.status = {
        ...(merged.status ?? {}),
        updateStatus: 'operational',
        observedGeneration: merged.metadata.generation,
      };
    }
    if (options?.dryRun) return structuredClone(merged);
    this.objects.set(`${ref.apiVersion}|${ref.kind}|${ref.namespace}|${ref.name}`, merged);
    return structuredClone(merged);
  }

  override async list(
    apiVersion: string,
    kind: string,
    namespace: string,
    labelSelector?: string,
  ): Promise<KubeObject[]> {
    if (namespace !== '') return super.list(apiVersion, kind, namespace, labelSelector);
    const namespaces = new Set([...this.objects.values()].map((o) => o.metadata.namespace ?? ''));
    const all: KubeObject[] = [];
    for (const each of namespaces) all.push(...(await super.list(apiVersion, kind, each, labelSelector)));
    return all;
  }

  /** Sets a VMCluster's status as the operator would. */
  setStatus(kind: string, name: string, status: Record<string, unknown>): void {
    const object = this.stored({
      apiVersion: kind === 'Rollout' ? 'argoproj.io/v1alpha1' : vmApi,
      kind,
      namespace: ns,
      name,
    });
    if (object === undefined) throw new Error(`no ${kind} ${name}`);
    object.status = { ...(object.status ?? {}), ...status };
    object.metadata.resourceVersion = String(this.#version++);
  }

  getStored(kind: string, name: string, apiVersion = vmApi): KubeObject {
    const object = this.stored({ apiVersion, kind, namespace: ns, name });
    if (object === undefined) throw new Error(`no ${kind} ${name}`);
    return structuredClone(object);
  }
}

/** A vmauth /metrics page that reports a reload in the current second: evidence for any write before it (vmauth stamps reloads to the second). */
export async function startVmauthFixture(): Promise<{ port: number; close(): Promise<void> }> {
  const server: Server = createServer((_request, response) => {
    const at = Math.floor(Date.now() / 1000);
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

/** A vmauth /metrics fixture for the file's tests: started before them, closed after. */
export function useVmauthFixture(): { readonly port: number } {
  let fixture: Awaited<ReturnType<typeof startVmauthFixture>> | undefined;
  before(async () => {
    fixture = await startVmauthFixture();
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

/** Three operational zones behind VMUser vmauth-read, one vmauth pod on `vmauthPort`. */
export function threeZones(vmauthPort: number): MemoryCluster {
  const kube = new MemoryCluster();
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
  // vmauth pods when no Rollout's spec document names them (plugin/zones/record-trust.ts).
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
 * The step plugin (its own reconciler off, short in-call waits) and a reconciler over `hub` and `clusters`
 * (listing `namespaces` only, when given, as a namespace-scoped install does).
 */
export function zonePlugins(hub: MemoryCluster, clusters: ClusterClients, namespaces?: readonly string[]) {
  const plugin = createZoneStepPlugin({
    kube: hub,
    clusters,
    reconciler: false,
    logger: silentLogger,
    inCallWaitMs: 1_000,
  });
  return {
    plugin,
    reconciler: new ZoneReconciler({
      kube: hub,
      clusters,
      logger: silentLogger,
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
