// Revert: put back the values the applied change replaced, in the same guarded write that marks the rollback
// record reverted. Only fields that still hold the value vmzones wrote go back: a later edit by someone else is
// not ours to undo.

import type { KubeObjects, ObjectRef } from '../../kube/objects.ts';
import { deepEqual, revertPatch, valueAt } from '../state/merge-patch.ts';
import {
  annotationValue,
  type RollbackRecord,
  rollbackAnnotation,
  timestamp,
} from '../state/zone-annotations.ts';
import type { LoadedCluster } from '../state/zone-object.ts';
import { done, lost, type MoveOutcome } from './outcome.ts';
import { transition } from './transition.ts';

export interface RevertOutcome extends MoveOutcome {
  /** How many of the recorded fields went back. */
  reverted?: number;
}

export async function revertMove(
  kube: KubeObjects,
  ref: ObjectRef,
  cluster: LoadedCluster,
  rollback: RollbackRecord,
  now: Date,
): Promise<RevertOutcome> {
  const stillOurs = rollback.changes.filter((c) => deepEqual(valueAt(cluster.object.spec, c.path), c.after));
  const revert = revertPatch(stillOurs.map((c) => ({ path: c.path, before: c.before, after: c.after })));
  const written = await transition(kube, ref, cluster, {
    annotations: {
      [rollbackAnnotation]: annotationValue({ ...rollback, phase: 'reverted', revertedAt: timestamp(now) }),
    },
    ...(stillOurs.length > 0 ? { spec: revert } : {}),
  });
  if (written.kind === 'lost') return lost(`zone ${rollback.zone} changed hands before its rollback`);
  const others =
    stillOurs.length < rollback.changes.length ? ' (the others were changed by someone else since)' : '';
  return {
    ...done(`rolled back ${stillOurs.length} of ${rollback.changes.length} fields${others}`),
    reverted: stillOurs.length,
  };
}
