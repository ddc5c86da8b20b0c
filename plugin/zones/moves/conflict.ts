// What a 409 means, decided in one place for every move: a guarded write (the zone's object, a balancer) refused
// because someone wrote since the move's reading. The move reads the zone's object again: if its hands changed (a
// new holder, a handoff, a takeover, a new generation) the move lost and its caller decides again from the zone as
// it is now; otherwise the conflict was a status write or another zone's drain, and the write is tried again on a
// fresh read, a bounded number of times (issue 35: a 409 handled in one place).

import type { KubeObjects, ObjectRef } from '../../kube/objects.ts';
import type { ZoneState } from '../state/zone-annotations.ts';
import { zoneIntent } from '../state/zone-intent.ts';
import { isConflict, type LoadedCluster, loadedCluster } from '../state/zone-object.ts';

/** Who holds the zone and what is asked of it: what a concurrent move changes, unlike a status write. */
export function handsOf(state: ZoneState): string {
  const { lease, handoff, rollback, maintenance } = state;
  const intent = zoneIntent(state);
  return JSON.stringify({
    lease: lease && [lease.uid, lease.revision, lease.since],
    // What is wanted and who moves next (state/zone-intent.ts): a hand-over or a take-back changes hands.
    intent: intent && [intent.wants, intent.nextMove],
    handoff: handoff && [handoff.holder.uid, handoff.holder.revision, handoff.requestedAt],
    rollback: rollback && [rollback.uid, rollback.revision, rollback.phase],
    maintenance: maintenance && [maintenance.since, maintenance.restoringSince],
  });
}

/** lost: the zone changed hands (or spec) since `decidedOn`; retry: it did not, the write may be tried again. */
export type ConflictMeaning = 'lost' | 'retry';

/** What a conflict means for a move that decided on `decidedOn`, given the zone's object read again. */
export function conflictMeaning(decidedOn: LoadedCluster, reread: LoadedCluster): ConflictMeaning {
  // A spec change (a new generation) is a change of what the move decided on, too.
  return handsOf(reread.state) !== handsOf(decidedOn.state) || reread.generation !== decidedOn.generation
    ? 'lost'
    : 'retry';
}

/** Attempts of a guarded write in all: the first and two more on fresh reads. */
export const guardedWriteAttempts = 3;

export type GuardedResult<T> = { kind: 'written'; value: T } | { kind: 'lost'; cluster: LoadedCluster };

/**
 * Runs `write` (given the zone's object it decides on, first `decidedOn`); on a 409 reads the zone's object again
 * and either returns lost or runs `write` again on that reading. A 409 on the last attempt propagates (a transient
 * fault: the step's in-call retry, or the reconciler's next pass, decides again from scratch); any other error
 * propagates at once.
 */
export async function guardedWrite<T>(
  kube: KubeObjects,
  ref: ObjectRef,
  decidedOn: LoadedCluster,
  write: (current: LoadedCluster, attempt: number) => Promise<T>,
): Promise<GuardedResult<T>> {
  let current = decidedOn;
  for (let attempt = 0; ; attempt++) {
    try {
      return { kind: 'written', value: await write(current, attempt) };
    } catch (err) {
      if (!isConflict(err) || attempt + 1 >= guardedWriteAttempts) throw err;
      const reread = loadedCluster(await kube.get(ref));
      if (conflictMeaning(decidedOn, reread) === 'lost') return { kind: 'lost', cluster: reread };
      current = reread;
    }
  }
}
