// The undo of a change made over an unfinished walk. When a new revision (a new commit) supersedes a walk, the
// zones that walk changed keep its change until the new walk reaches them; the new walk's apply must then record
// how to get back to the *stable* spec, not to the superseded walk's, which no one chose to keep. So an apply
// whose zone carries the rollback record of an earlier revision of the same Rollout that never became stable
// (the stable revision is still the one that record saw) takes that record's "before" values: for the fields
// both change, and for the fields only the earlier walk changed (if they still hold its value). Without this,
// an abort or a Git revert after a superseded walk would leave the zone on the superseded walk's spec.

import { deepEqual, type FieldChange, type JsonObject, valueAt } from '../state/merge-patch.ts';
import {
  changeRecords,
  type RollbackRecord,
  type RolloutIdentity,
  sameRollout,
} from '../state/zone-annotations.ts';

type ChangeRecord = RollbackRecord['changes'][number];

/** True when `previous` was written by an earlier revision of the same Rollout whose walk never became stable. */
export function overUnfinishedWalk(
  previous: RollbackRecord | undefined,
  who: RolloutIdentity,
  stableRevision: string | undefined,
): previous is RollbackRecord {
  return (
    previous !== undefined &&
    previous.phase === 'applied' &&
    sameRollout(previous, who) &&
    previous.revision !== who.revision &&
    stableRevision !== undefined &&
    previous.stableRevision === stableRevision &&
    previous.revision !== stableRevision
  );
}

const samePath = (a: readonly string[], b: readonly string[]) =>
  a.length === b.length && a.every((part, i) => part === b[i]);
const overlaps = (a: readonly string[], b: readonly string[]) =>
  a.slice(0, Math.min(a.length, b.length)).every((part, i) => part === b[i]);

/**
 * The changes to record for `changes` (this apply's diff against `spec`, the VMCluster's spec before it):
 * chained onto `previous` when it is the record of an unfinished walk, else as they are. A change whose recorded
 * "before" equals its "after" (the new walk puts the stable value back) has nothing to undo and is left out.
 */
export function rollbackChanges(
  changes: readonly FieldChange[],
  spec: JsonObject,
  previous: RollbackRecord | undefined,
  who: RolloutIdentity,
  stableRevision: string | undefined,
): ChangeRecord[] {
  const fresh = changeRecords(changes);
  if (!overUnfinishedWalk(previous, who, stableRevision)) return fresh;
  const chained: ChangeRecord[] = fresh.map((change) => {
    const earlier = previous.changes.find((e) => samePath(e.path, change.path));
    if (earlier === undefined) return change;
    const { before: _current, ...rest } = change;
    return earlier.before === undefined ? rest : { ...rest, before: earlier.before };
  });
  for (const earlier of previous.changes) {
    // A field a fresh change covers in part is left to that change (its "before" is today's value there).
    if (fresh.some((c) => overlaps(c.path, earlier.path))) continue;
    // Changed by someone else since the earlier walk wrote it: not ours to undo.
    if (!deepEqual(valueAt(spec, earlier.path), earlier.after)) continue;
    chained.push(earlier);
  }
  return chained.filter((c) => !deepEqual(c.before, c.after));
}
