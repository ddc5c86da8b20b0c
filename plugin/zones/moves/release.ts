// Release a zone: lease and maintenance mark go (and, for the reconciler, the handoff and a finished rollback
// request), in one guarded write on the VMCluster as it was when the release was decided.

import type { KubeObjects, ObjectRef } from '../../kube/objects.ts';
import {
  handoffAnnotation,
  leaseAnnotation,
  maintenanceAnnotation,
  maintenanceLabel,
  pendingLabel,
  rollbackAnnotation,
} from '../state/zone-annotations.ts';
import type { ClusterPatch, LoadedCluster } from '../state/zone-object.ts';
import { type TransitionResult, transition } from './transition.ts';

export interface ReleaseRequest {
  /** The reconciler finishes a handoff: it goes too, with the pending label. */
  handoff?: boolean;
  /** A rollback that was reverted is done: its record goes. */
  rollbackDone?: boolean;
}

export function releasePatch(request: ReleaseRequest = {}): ClusterPatch {
  return {
    annotations: {
      [leaseAnnotation]: null,
      [maintenanceAnnotation]: null,
      ...(request.handoff ? { [handoffAnnotation]: null } : {}),
      ...(request.rollbackDone ? { [rollbackAnnotation]: null } : {}),
    },
    labels: { [maintenanceLabel]: null, ...(request.handoff ? { [pendingLabel]: null } : {}) },
  };
}

export function release(
  kube: KubeObjects,
  ref: ObjectRef,
  cluster: LoadedCluster,
  request: ReleaseRequest = {},
): Promise<TransitionResult> {
  return transition(kube, ref, cluster, releasePatch(request));
}
