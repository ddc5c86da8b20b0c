// Whether the Rollout revision that holds a zone (its lease) or changed it (its rollback record) is still walking
// it. The controller finishes a step plugin's work only through Run, Abort and Terminate, and several endings of a
// rollout call none of them for the zone in hand: `promote --full` during an analysis or a pause, a new revision
// (a new commit), a template reverted to the stable one, a deleted Rollout, an Abort lost to a crash. Each is read
// here from the Rollout itself, so the reconciler can finish what no step will (docs/step-plugin.md, "Endings").

import { stepPluginName } from '../../rollouts/plugin-names.ts';
import type { RolloutProgress } from '../../rollouts/rollout-object.ts';
import { describeHolder, type RolloutIdentity } from '../state/zone-annotations.ts';
import { configZones } from '../step/actions.ts';

/** walking: leave the zone to the steps; finish: bring it back with the change it has; rollback: undo first. */
export type WalkVerdict =
  | { verdict: 'walking' }
  | { verdict: 'finish'; why: string }
  | { verdict: 'rollback'; why: string };

/** The index of the last vmzones step of `zone` (its restoreReads, or its wave's), or -1 when the Rollout has none. */
function lastStepOf(progress: RolloutProgress, zone: string): number {
  let last = -1;
  progress.steps.forEach((step, index) => {
    if (step.plugin?.name === stepPluginName && configZones(step.plugin.config)?.includes(zone)) {
      last = index;
    }
  });
  return last;
}

/**
 * What should become of a zone that `holder` leased (`leased`) or only changed and released (its rollback record
 * is still `applied`). `progress` is the holder's Rollout, `undefined` when deleted. `changedOver` is the stable
 * revision the holder's rollback record says it changed the zone over, when it has one.
 */
export function walkVerdict(
  holder: RolloutIdentity,
  zone: string,
  leased: boolean,
  progress: RolloutProgress | undefined,
  changedOver?: string,
): WalkVerdict {
  const who = describeHolder(holder);
  if (progress === undefined) {
    // Nobody asks for the change to be undone; the zone keeps it and comes back (docs/step-plugin.md, "Endings").
    return leased ? { verdict: 'finish', why: `${who} was deleted mid-walk` } : { verdict: 'walking' };
  }
  const revision = holder.revision;
  if (progress.currentRevision !== '' && progress.currentRevision !== revision) {
    if (
      progress.currentRevision === progress.stableRevision &&
      progress.stableRevision !== revision &&
      (changedOver === undefined || changedOver === progress.stableRevision)
    ) {
      // Back to the stable template (a Git revert): the controller skips every step, so nobody else undoes it.
      // A stable revision other than the one the change was made over moved forward (a later revision promoted,
      // e.g. `promote --full` before its walk reached this zone): that undoes nothing (a soak finding, issue 25).
      return {
        verdict: 'rollback',
        why: `${who} was abandoned: the Rollout went back to its stable revision ${progress.stableRevision}`,
      };
    }
    // A newer revision walks the zones again; a zone in hand comes back with what it has until its turn.
    return leased
      ? { verdict: 'finish', why: `${who} was superseded by revision ${progress.currentRevision}` }
      : { verdict: 'walking' };
  }
  if (!leased) return { verdict: 'walking' };
  if (progress.aborted) return { verdict: 'rollback', why: `${who} was aborted` };
  if (progress.stableRevision === revision) {
    return { verdict: 'finish', why: `${who} was promoted to stable before zone ${zone} was finished` };
  }
  const last = lastStepOf(progress, zone);
  if (progress.currentStepIndex > last) {
    return {
      verdict: 'finish',
      why: `${who} moved past the steps of zone ${zone} (now at step ${progress.currentStepIndex + 1}) while it held the zone`,
    };
  }
  return { verdict: 'walking' };
}
