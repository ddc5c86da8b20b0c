// Reading a zone's VMCluster with its vmzones state, and the guarded writes of that state.

import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from '../goplugin/index.ts';
import { KubeError, type KubeObject, type KubeObjects, type ObjectRef } from '../kube/objects.ts';
import { required, type StatusDocument } from './outcome.ts';
import {
  annotationValue,
  describeHolder,
  type Lease,
  leaseAnnotation,
  type Maintenance,
  maintenanceAnnotation,
  maintenanceLabel,
  type RolloutIdentity,
  timestamp,
  type ZoneState,
  zoneState,
} from './state.ts';
import type { ZoneTarget } from './target.ts';

export interface ZoneDeps {
  kube: KubeObjects;
  now(): Date;
  logger: Logger;
  /** How long a Run may wait in the call for something that usually comes quickly (a vmauth reload, the end of
   *  a short grace period) before it returns Running, which costs a controller round trip of at least 16 s. */
  inCallWaitMs: number;
}

/** Polls `check` until it returns a value or `deps.inCallWaitMs` has passed; the last answer is returned. */
export async function waitInCall<T>(
  deps: ZoneDeps,
  check: () => Promise<T>,
  done: (value: T) => boolean,
): Promise<T> {
  const deadline = Date.now() + deps.inCallWaitMs;
  for (;;) {
    const value = await check();
    if (done(value) || Date.now() + inCallPollMs > deadline) return value;
    await sleep(inCallPollMs);
  }
}

const inCallPollMs = 250;

export interface LoadedCluster {
  object: KubeObject;
  state: ZoneState;
  resourceVersion: string;
  generation: number;
}

export function describeCluster(ref: ObjectRef): string {
  return `VMCluster ${ref.namespace}/${ref.name}`;
}

/** The VMCluster and its vmzones annotations; missing → StepFailure naming the zone. */
export async function loadCluster(kube: KubeObjects, ref: ObjectRef, zone: string): Promise<LoadedCluster> {
  const object = await required(kube.get(ref), `${describeCluster(ref)} of zone ${zone} does not exist`);
  return {
    object,
    state: zoneState(object),
    resourceVersion: object.metadata.resourceVersion ?? '',
    generation: object.metadata.generation ?? 0,
  };
}

/** What every read action starts from: the status document naming the zone and its VMCluster, and the cluster now. */
export interface ZoneActionStart {
  zone: string;
  name: string;
  status: StatusDocument;
  cluster: LoadedCluster;
  state: ZoneState;
}

export async function openZoneAction(
  kube: KubeObjects,
  target: ZoneTarget,
  action: string,
): Promise<ZoneActionStart> {
  const zone = target.config.zone;
  const cluster = await loadCluster(kube, target.cluster, zone);
  return {
    zone,
    name: describeCluster(target.cluster),
    status: { zone, action, vmcluster: `${target.cluster.namespace}/${target.cluster.name}` },
    cluster,
    state: cluster.state,
  };
}

/** Who handed the zone to the reconciler, since when, and what it is doing: for "waiting" messages. */
export function describeHandoff(handoff: NonNullable<ZoneState['handoff']>): string {
  return `(${handoff.by}, since ${handoff.requestedAt})${handoff.message ? `: ${handoff.message}` : ''}`;
}

export interface ClusterPatch {
  annotations?: Record<string, string | null>;
  labels?: Record<string, string | null>;
  spec?: Record<string, unknown>;
}

/** One merge patch of metadata (and spec), refused by the API server (409) if the VMCluster changed since read. */
export async function patchCluster(
  kube: KubeObjects,
  ref: ObjectRef,
  patch: ClusterPatch,
  resourceVersion: string | undefined,
  dryRun = false,
): Promise<KubeObject> {
  const metadata: Record<string, unknown> = {};
  if (patch.annotations) metadata.annotations = patch.annotations;
  if (patch.labels) metadata.labels = patch.labels;
  const body: Record<string, unknown> = { metadata };
  if (patch.spec) body.spec = patch.spec;
  return kube.mergePatch(ref, body, resourceVersion, { dryRun });
}

export function leasePatch(who: RolloutIdentity, zone: string, now: Date, reason: string): ClusterPatch {
  const lease: Lease = { ...who, since: timestamp(now) };
  const maintenance: Maintenance = { zone, since: timestamp(now), reason };
  return {
    annotations: {
      [leaseAnnotation]: annotationValue(lease),
      [maintenanceAnnotation]: annotationValue(maintenance),
    },
    labels: { [maintenanceLabel]: 'true' },
  };
}

export const releasePatch: ClusterPatch = {
  annotations: { [leaseAnnotation]: null, [maintenanceAnnotation]: null },
  labels: { [maintenanceLabel]: null },
};

/** Whether the Rollout that holds a lease still exists (same uid); a lease of a deleted Rollout is stale. */
export async function holderExists(kube: KubeObjects, holder: RolloutIdentity): Promise<boolean> {
  const [namespace = '', name = ''] = holder.rollout.split('/');
  try {
    const rollout = await kube.get({ apiVersion: 'argoproj.io/v1alpha1', kind: 'Rollout', namespace, name });
    return rollout.metadata.uid === holder.uid;
  } catch (err) {
    if (err instanceof KubeError && err.kind === 'notFound') return false;
    throw err;
  }
}

export function leasedByOther(ref: ObjectRef, zone: string, lease: Lease): string {
  return `${describeCluster(ref)} (zone ${zone}) is leased by ${describeHolder(lease)} since ${lease.since}: two Rollouts must not change a zone at once; wait for that Rollout to finish or abort it`;
}
