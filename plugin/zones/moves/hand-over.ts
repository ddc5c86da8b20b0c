// Handing a zone to the background reconciler: one guarded patch writes what must still happen (the handoff, and
// the rollback request when the change is to be undone) onto the zone's VMCluster, so that it survives any restart.
// Abort, Terminate and the reconciler's own discovery of walks that ended without them all hand over through here.
// A 409 is decided where every zone write's is (moves/conflict.ts): the zone changed hands since the caller read it
// (lost: the caller decides again), or someone wrote only a progress note (the reconciler's message, its queue
// check's rounds), and the handoff is written again on the fresh read, keeping that note.

import type { KubeObjects, ObjectRef } from '../../kube/objects.ts';
import { storedFields } from '../state/trusted-reads.ts';
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
import { handedOverIntent } from '../state/zone-intent.ts';
import { type LoadedCluster, loadedCluster, patchCluster } from '../state/zone-object.ts';
import { guardedWrite } from './conflict.ts';
import { intentPatch, leaseRecord } from './lease.ts';
import type { TransitionResult } from './transition.ts';

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

/** The fields of a handoff the reconciler writes as it goes: not a hand-over's to drop. */
function progressNote(existing: Handoff | undefined): Pick<Handoff, 'queueState' | 'message' | 'updatedAt'> {
  if (existing === undefined) return {};
  const { queueState, message, updatedAt } = existing;
  return {
    ...(queueState === undefined ? {} : { queueState }),
    ...(message === undefined ? {} : { message }),
    ...(updatedAt === undefined ? {} : { updatedAt }),
  };
}

function handoffFor(
  request: HandoffRequest,
  existing: Handoff | undefined,
  object: ZoneIdentity,
  now: Date,
): Handoff {
  return {
    // What the reconciler wrote into the handoff (its progress note, its queue check's rounds) stays.
    ...progressNote(existing),
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

/** Writes the handoff, guarded by the resourceVersion `cluster` was read at; a 409 as moves/conflict.ts decides:
 *  lost (the zone changed hands: nothing written, the caller decides again on the zone as returned), or written on
 *  a fresh read, built on that read's handoff. */
export async function handOver(
  kube: KubeObjects,
  cluster: LoadedCluster,
  request: HandoffRequest,
  now: Date,
): Promise<TransitionResult> {
  const object = zoneIdentity(cluster.object);
  const written = await guardedWrite(kube, request.cluster, cluster, async (current) => {
    const { state } = current;
    const handoff = handoffFor(request, state.handoff, object, now);
    // The intent, stored once in the lease (state/zone-intent.ts): the reconciler moves next, for this holder.
    const intent = handedOverIntent(handoff.rollback);
    const annotations: Record<string, string | null> = {
      [handoffAnnotation]: annotationValue(handoff),
      ...(state.lease === undefined
        ? {
            [leaseAnnotation]: annotationValue(
              leaseRecord(request.holder, request.zone, object, now, intent),
            ),
          }
        : intentPatch(state.lease, intent)),
    };
    if (request.rollback !== undefined) {
      annotations[rollbackAnnotation] = annotationValue({
        ...request.rollback,
        phase: 'requested',
        requestedAt: timestamp(now),
      });
    }
    return loadedCluster(
      await patchCluster(
        kube,
        request.cluster,
        { annotations, labels: { [pendingLabel]: 'true' } },
        current.resourceVersion,
      ),
    );
  });
  return written.kind === 'lost' ? written : { kind: 'written', cluster: written.value };
}
