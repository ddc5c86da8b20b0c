// Every change of a zone's state is one merge patch on its VMCluster guarded by the resourceVersion it was decided
// on. A 409 means someone wrote meanwhile: the loser re-reads, and writes again only if the zone is still in the
// same hands (the operator's status writes change the resourceVersion, not who holds the zone); otherwise the
// move is lost and its caller decides again from the zone as it is now (issue 21 item 2).

import type { KubeObjects, ObjectRef } from '../../kube/objects.ts';
import type { ZoneState } from '../state/zone-annotations.ts';
import {
  type ClusterPatch,
  isConflict,
  type LoadedCluster,
  loadedCluster,
  patchCluster,
} from '../state/zone-object.ts';

/** Who holds the zone and what is asked of it: what a concurrent move changes, unlike a status write. */
export function handsOf(state: ZoneState): string {
  const { lease, handoff, rollback, maintenance } = state;
  return JSON.stringify({
    lease: lease && [lease.uid, lease.revision, lease.since],
    handoff: handoff && [handoff.holder.uid, handoff.holder.revision, handoff.requestedAt, handoff.rollback],
    rollback: rollback && [rollback.uid, rollback.revision, rollback.phase],
    maintenance: maintenance && [maintenance.since, maintenance.restoringSince],
  });
}

export type TransitionResult =
  | { kind: 'written'; cluster: LoadedCluster }
  | { kind: 'lost'; cluster: LoadedCluster };

/** Writes `patch` on the zone as `decidedOn` was; on 409, once more on the re-read object if the hands are the same. */
export async function transition(
  kube: KubeObjects,
  ref: ObjectRef,
  decidedOn: LoadedCluster,
  patch: ClusterPatch,
): Promise<TransitionResult> {
  let current = decidedOn;
  for (let attempt = 0; ; attempt++) {
    try {
      return {
        kind: 'written',
        cluster: loadedCluster(await patchCluster(kube, ref, patch, current.resourceVersion)),
      };
    } catch (err) {
      if (!isConflict(err) || attempt >= 2) throw err;
      const reread = loadedCluster(await kube.get(ref));
      // A spec change (a new generation) is a change of what the move decided on, too.
      if (handsOf(reread.state) !== handsOf(decidedOn.state) || reread.generation !== decidedOn.generation) {
        return { kind: 'lost', cluster: reread };
      }
      current = reread;
    }
  }
}
