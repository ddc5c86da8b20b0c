// Every change of a zone's state is one merge patch on its VMCluster guarded by the resourceVersion it was decided
// on. A 409 means someone wrote meanwhile: what that means (lost, or written again on a fresh read) is decided in
// one place, moves/conflict.ts (issue 21 item 2, issue 35).

import type { KubeObjects, ObjectRef } from '../../kube/objects.ts';
import { type ClusterPatch, type LoadedCluster, loadedCluster, patchCluster } from '../state/zone-object.ts';
import { guardedWrite } from './conflict.ts';

export type TransitionResult =
  | { kind: 'written'; cluster: LoadedCluster }
  | { kind: 'lost'; cluster: LoadedCluster };

/** Writes `patch` on the zone as `decidedOn` was; on 409, again on the re-read object if the hands are the same. */
export async function transition(
  kube: KubeObjects,
  ref: ObjectRef,
  decidedOn: LoadedCluster,
  patch: ClusterPatch,
): Promise<TransitionResult> {
  const written = await guardedWrite(kube, ref, decidedOn, async (current) =>
    loadedCluster(await patchCluster(kube, ref, patch, current.resourceVersion)),
  );
  return written.kind === 'lost' ? written : { kind: 'written', cluster: written.value };
}
