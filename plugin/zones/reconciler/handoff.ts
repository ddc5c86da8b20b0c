// Handing a zone to the background reconciler: one guarded patch writes what must still happen (the handoff, and
// the rollback request when the change is to be undone) onto the zone's VMCluster, so that it survives any restart.
// Abort, Terminate and the reconciler's own discovery of walks that ended without them all hand over through here.

import type { KubeObjects, ObjectRef } from '../../kube/objects.ts';
import { leaseRecord } from '../moves/lease.ts';
import {
  annotationValue,
  type Handoff,
  handoffAnnotation,
  leaseAnnotation,
  pendingLabel,
  type ReadsRecord,
  type RollbackRecord,
  type RolloutIdentity,
  rollbackAnnotation,
  timestamp,
  type ZoneIdentity,
  zoneIdentity,
} from '../state/zone-annotations.ts';
import type { LoadedCluster } from '../state/zone-object.ts';
import { patchCluster } from '../state/zone-object.ts';
import { storedFields } from './record-trust.ts';

export interface HandoffRequest {
  zone: string;
  cluster: ObjectRef;
  holder: RolloutIdentity;
  /** Who hands over and why, in words (kept in the handoff for `kubectl get vmcluster -o yaml` readers). */
  by: string;
  reads: ReadsRecord;
  drainGracePeriod: string;
  vmagents: string[] | undefined;
  vmagentsCluster?: string | undefined;
  vminsertHosts?: string[] | undefined;
  /** The applied change to undo first, if any. */
  rollback: RollbackRecord | undefined;
}

function handoffFor(
  request: HandoffRequest,
  existing: Handoff | undefined,
  object: ZoneIdentity,
  now: Date,
): Handoff {
  return {
    zone: request.zone,
    object,
    holder: existing?.holder ?? request.holder,
    requestedAt: existing?.requestedAt ?? timestamp(now),
    by: existing ? `${existing.by}; ${request.by}` : request.by,
    rollback: (existing?.rollback ?? false) || request.rollback !== undefined,
    ...storedFields({
      reads: request.reads,
      drainGracePeriod: request.drainGracePeriod,
      vmagents: request.vmagents,
      vmagentsCluster: request.vmagentsCluster,
      vminsertHosts: request.vminsertHosts,
    }),
  };
}

/** Writes the handoff (guarded by the resourceVersion `cluster` was read at); a 409 means: read again, retry. */
export async function handOver(
  kube: KubeObjects,
  cluster: LoadedCluster,
  request: HandoffRequest,
  now: Date,
): Promise<void> {
  const { state } = cluster;
  const object = zoneIdentity(cluster.object);
  const annotations: Record<string, string | null> = {
    [handoffAnnotation]: annotationValue(handoffFor(request, state.handoff, object, now)),
  };
  if (request.rollback !== undefined) {
    annotations[rollbackAnnotation] = annotationValue({
      ...request.rollback,
      phase: 'requested',
      requestedAt: timestamp(now),
    });
  }
  if (state.lease === undefined) {
    annotations[leaseAnnotation] = annotationValue(leaseRecord(request.holder, request.zone, object, now));
  }
  await patchCluster(
    kube,
    request.cluster,
    { annotations, labels: { [pendingLabel]: 'true' } },
    cluster.resourceVersion,
  );
}
