// Is a zone operational with its change applied to every pod? The one check behind the vmclusterReady gate and the
// step's await-operational move. The operator's status (vmcluster.ts) comes first; then, where the operator may
// report `operational` while some storage pods still run the old spec, those pods' revisions.
//
// Why: since operator v0.75.1 (#2665), with a storage StatefulSet's default rollingUpdateStrategy `OnDelete`, the
// operator neither waits for nor updates the storage pods whose node IDs are listed in both
// maintenanceInsertNodeIDs and maintenanceSelectNodeIDs: their spec (and volume) changes are deferred until they
// leave maintenance, and the object is `operational` meanwhile (v0.75.1 release notes). Nothing in the status says
// so (StatusMetadata: updateStatus, reason, observedGeneration, conditions). What says so is Kubernetes' own record:
// the StatefulSet controller labels each pod `controller-revision-hash: <revision>` and writes the revision of the
// current template to `status.updateRevision`; the operator itself takes a pod whose label differs from it for one
// still to update (operator v0.74.1 internal/controller/operator/factory/reconcile/statefulset.go:253-300 and
// waitForPodReady, :412-437). `status.currentRevision` is no evidence: Kubernetes does not move it under OnDelete,
// and the operator moves it to updateRevision only after all pods are updated (patchSTSCurrentRevision, :231-251).
//
// Up to v0.74.1 `operational` under OnDelete means every pod was updated and Ready at the update revision
// (performRollingUpdateOnSts, :316-394), and under RollingUpdate that updatedReplicas and readyReplicas equal the
// replicas (waitForStatefulSetReady, :40-73). So the pods are read only where a deferral can happen (node IDs in
// both maintenance lists, OnDelete): other zones cost no extra API calls, and need no RBAC on StatefulSets.

import { z } from 'zod';
import { type KubeObject, type KubeObjects, namespacedName } from '../kube/objects.ts';
import { listSelectedPods } from './pods.ts';
import { zoneComponentSelector } from './queries-in-flight.ts';
import { type VMClusterReadiness, vmclusterReadiness } from './vmcluster.ts';
import { type ZoneKindName, zoneKindOf } from './zone-kinds.ts';

/** The pod label the StatefulSet controller stamps with the revision a pod was created from. */
export const podRevisionLabel = 'controller-revision-hash';

/** The zone kinds with storage nodes in a StatefulSet, and where their spec and names say so. */
const storageOf: Partial<Record<ZoneKindName, { field: 'vmstorage' | 'vlstorage'; prefix: 'vm' | 'vl' }>> = {
  VMCluster: { field: 'vmstorage', prefix: 'vm' },
  VLCluster: { field: 'vlstorage', prefix: 'vl' },
};

const nodeIdsSchema = z.array(z.number().int().nonnegative()).nullish();
const storageSpecSchema = z.looseObject({
  maintenanceInsertNodeIDs: nodeIdsSchema,
  maintenanceSelectNodeIDs: nodeIdsSchema,
  rollingUpdateStrategy: z.string().nullish(),
});
const zoneSpecSchema = z.looseObject({
  useLegacyNaming: z.boolean().nullish(),
  vmstorage: storageSpecSchema.nullish(),
  vlstorage: storageSpecSchema.nullish(),
});

const statefulSetSchema = z.looseObject({
  metadata: z.looseObject({ generation: z.number().int().optional() }),
  status: z
    .looseObject({
      observedGeneration: z.number().int().nullish(),
      updateRevision: z.string().nullish(),
    })
    .nullish(),
});

/** A storage pod that does not run the StatefulSet's current template. */
export interface DeferredPod {
  pod: string;
  /** The ordinal, which is the node ID the maintenance lists name. */
  nodeId: number | undefined;
  revision: string | undefined;
  /** In both maintenance lists: the operator defers it on purpose. */
  inMaintenance: boolean;
  why: string;
}

export interface ZoneReadiness extends VMClusterReadiness {
  /** Storage pods whose change is not applied although the operator reports operational; empty when none. */
  deferredPods: DeferredPod[];
}

/** Where a zone's storage pods may be behind although it is operational (undefined where they cannot be; a string
 *  says why the spec cannot be read). */
interface Deferrable {
  component: string;
  statefulSet: string;
  labelSelector: string;
  maintenanceNodeIds: number[];
}

function deferrable(zone: KubeObject): Deferrable | string | undefined {
  const kind = zoneKindOf(zone.kind ?? 'VMCluster');
  const storage = kind === undefined ? undefined : storageOf[kind.kind];
  if (storage === undefined) return undefined;
  const parsed = zoneSpecSchema.safeParse(zone.spec ?? {});
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return `cannot read spec.${issue?.path.join('.') ?? ''}: ${issue?.message ?? 'invalid'}`;
  }
  const spec = parsed.data[storage.field];
  // The operator's default for its StatefulSets is OnDelete (build/defaults.go:150-153, v0.74.1).
  if (spec == null || (spec.rollingUpdateStrategy ?? 'OnDelete') !== 'OnDelete') return undefined;
  const select = new Set(spec.maintenanceSelectNodeIDs ?? []);
  const both = [...new Set(spec.maintenanceInsertNodeIDs ?? [])].filter((id) => select.has(id));
  if (both.length === 0) return undefined;
  const name = zone.metadata.name ?? '';
  const component = `${storage.prefix}storage`;
  return {
    component,
    // ClusterPrefixedName / ClusterSuffixedName and ClusterSelectorLabels (api/operator/v1beta1/vmextra_types.go).
    statefulSet: parsed.data.useLegacyNaming === true ? `${name}-${component}` : `${component}-${name}`,
    labelSelector: zoneComponentSelector(component, name),
    maintenanceNodeIds: both.sort((a, b) => a - b),
  };
}

function ordinalOf(pod: string): number | undefined {
  const match = /-(\d+)$/.exec(pod);
  return match === null ? undefined : Number(match[1]);
}

function describeDeferred(pods: DeferredPod[], total: number, component: string): string {
  const each = pods.map((p) => `${p.pod} (${p.why})`).join('; ');
  return `the change is deferred on ${pods.length} of ${total} ${component} pods: ${each}`;
}

/**
 * The zone's readiness (vmclusterReadiness) and, once the operator says operational, whether any storage pod's
 * change is deferred. `kube` is the zone's cluster. Deferred pods keep the zone `progressing`, named with why.
 */
export async function zoneReadiness(
  kube: KubeObjects,
  zone: KubeObject,
  atLeastGeneration?: number,
): Promise<ZoneReadiness> {
  const readiness = vmclusterReadiness(zone, atLeastGeneration);
  if (readiness.state !== 'ready') return { ...readiness, deferredPods: [] };
  const check = deferrable(zone);
  if (check === undefined) return { ...readiness, deferredPods: [] };
  const name = `${zone.kind ?? 'VMCluster'} ${namespacedName(zone.metadata)}`;
  const notYet = (waitingFor: string, deferredPods: DeferredPod[] = []): ZoneReadiness => ({
    ...readiness,
    state: 'progressing',
    message: `${name} is operational at generation ${readiness.observedGeneration}, but ${waitingFor}`,
    deferredPods,
  });
  if (typeof check === 'string') return notYet(check);

  const namespace = zone.metadata.namespace ?? '';
  const sts = statefulSetSchema.safeParse(
    await kube.get({ apiVersion: 'apps/v1', kind: 'StatefulSet', namespace, name: check.statefulSet }),
  );
  const stsName = `StatefulSet ${namespace}/${check.statefulSet}`;
  if (!sts.success) return notYet(`${stsName} cannot be read: ${sts.error.issues[0]?.message ?? 'invalid'}`);
  const generation = sts.data.metadata.generation ?? 0;
  const observed = sts.data.status?.observedGeneration ?? 0;
  const updateRevision = sts.data.status?.updateRevision ?? '';
  // Until the StatefulSet controller observed the operator's last write, updateRevision may be the old template's.
  if (observed < generation || updateRevision === '') {
    return notYet(
      `waiting for the StatefulSet controller to observe ${stsName} generation ${generation} (observed: ${observed})`,
    );
  }
  const { active } = await listSelectedPods(kube, namespace, check.labelSelector);
  const maintenance = new Set(check.maintenanceNodeIds);
  const deferredPods: DeferredPod[] = [];
  for (const pod of active) {
    const revision = pod.metadata?.labels?.[podRevisionLabel] ?? undefined;
    if (revision === updateRevision) continue;
    const podName = pod.metadata?.name ?? '';
    const nodeId = ordinalOf(podName);
    const inMaintenance = nodeId !== undefined && maintenance.has(nodeId);
    const at = `at revision ${revision ?? 'none'}, not the update revision ${updateRevision}`;
    deferredPods.push({
      pod: podName,
      nodeId,
      revision,
      inMaintenance,
      why: inMaintenance
        ? `node ID ${nodeId} is in maintenanceInsertNodeIDs and maintenanceSelectNodeIDs: with rollingUpdateStrategy OnDelete the operator (>= v0.75.1) defers its change until it leaves maintenance; ${at}`
        : `node ID ${nodeId ?? '?'}: ${at}`,
    });
  }
  if (deferredPods.length > 0)
    return notYet(describeDeferred(deferredPods, active.length, check.component), deferredPods);
  return {
    ...readiness,
    message: `${readiness.message}; every ${check.component} pod (${active.length}, node IDs ${check.maintenanceNodeIds.join(', ')} in maintenance included) runs the update revision ${updateRevision}`,
    deferredPods: [],
  };
}
