// apply: merge the zone's overrides into its VMCluster spec (RFC 7396, field manager vmzones), recording the value
// every changed field had before — in the step status for humans and, in the same guarded write as the change,
// in the VMCluster's rollback annotation, so that no crash can separate the change from how to undo it.

import type { StepResult } from '../../rollouts/types.ts';
import { changeMove, describeChangedFields, fieldName } from '../moves/change.ts';
import { outcomeFailureCode } from '../moves/outcome.ts';
import { emitZoneEvent } from '../state/events.ts';
import type { FieldChange } from '../state/merge-patch.ts';
import { describeCluster, leasedByOther } from '../state/messages.ts';
import {
  describeHolder,
  fieldChanges,
  type RollbackRecord,
  sameRevision,
  sameRollout,
} from '../state/zone-annotations.ts';
import type { ZoneDeps } from './deps.ts';
import { type StatusDocument, StepFailure, successful } from './outcome.ts';
import { lostRace } from './step-waits.ts';
import type { ZoneTarget } from './target.ts';
import { handoffOpening, openZoneAction } from './zone-action.ts';

const maxChangedStatusChars = 3000;

export { fieldName };

/** How a field changed, without its value: values stay only in the rollback record on the zone object (a value
 *  under a neutral key, e.g. an extraEnvs entry httpAuth_password, is no less secret than one under a named key). */
export type FieldChangeKind = 'set' | 'changed' | 'removed';

function changeKind(change: FieldChange): FieldChangeKind {
  if (change.before === undefined) return 'set';
  return change.after === undefined ? 'removed' : 'changed';
}

/** `{"spec.clusterVersion": "changed"}`, or only the field names when there are too many for the Rollout status. */
export function changedSummary(changes: readonly FieldChange[]): Record<string, FieldChangeKind> | string[] {
  const full: Record<string, FieldChangeKind> = {};
  for (const c of changes) full[fieldName(c.path)] = changeKind(c);
  return JSON.stringify(full).length <= maxChangedStatusChars ? full : changes.map((c) => fieldName(c.path));
}

function describeChanges(changes: readonly FieldChange[]): string {
  if (changes.length === 0) return 'no field differs from the overrides, nothing changed';
  return `${describeChangedFields(changes)} (the values are in the rollback record, annotation vmzones.io/rollback on the zone object)`;
}

function appliedResult(target: ZoneTarget, record: RollbackRecord, replayed: boolean): StepResult {
  const changes = fieldChanges(record);
  const status: StatusDocument = {
    zone: target.config.zone,
    action: 'apply',
    vmcluster: `${target.cluster.namespace}/${target.cluster.name}`,
    generation: record.generation,
    appliedAt: record.appliedAt,
    changed: changedSummary(changes),
  };
  const name = describeCluster(target.cluster);
  const message =
    changes.length === 0
      ? `zone ${target.config.zone}: ${name} already matches the overrides (generation ${record.generation}); nothing changed`
      : `zone ${target.config.zone}: ${name} changed at generation ${record.generation}: ${describeChanges(changes)}. The operator rolls it out; restoreReads waits until it is operational`;
  const chained =
    record.overRevision === undefined
      ? ''
      : `; an undo goes back to stable revision ${record.stableRevision ?? '?'}'s values, past the unfinished walk of revision ${record.overRevision}`;
  return successful(
    replayed ? `${message}${chained} (already applied at ${record.appliedAt})` : `${message}${chained}`,
    status,
  );
}

export async function applyZone(deps: ZoneDeps, target: ZoneTarget, previous?: unknown): Promise<StepResult> {
  const { kube } = deps;
  const opened = await openZoneAction(kube, target, 'apply');
  const { zone, name, cluster, state } = opened;
  const handoff = handoffOpening(deps, target, previous, opened, false);
  if (handoff !== undefined && 'wait' in handoff) return handoff.wait;
  if (
    state.rollback !== undefined &&
    sameRevision(state.rollback, target.who) &&
    state.rollback.phase === 'applied'
  ) {
    return appliedResult(target, state.rollback, true);
  }
  if (!sameRevision(state.lease, target.who)) {
    if (state.lease !== undefined && !sameRollout(state.lease, target.who)) {
      throw new StepFailure('LeaseHeld', leasedByOther(target.cluster, zone, state.lease));
    }
    throw new StepFailure(
      'NotDrained',
      `drainReads for zone ${zone} has not run for this revision: ${name} holds no lease of ${describeHolder(target.who)}; nothing was changed`,
    );
  }
  const changed = await changeMove(deps, target, cluster);
  if (changed.kind === 'lost') return lostRace(zone, name);
  if (changed.kind !== 'done' || changed.record === undefined)
    throw new StepFailure(outcomeFailureCode(changed), changed.message);
  const record = changed.record;
  const now = deps.now();
  const result = appliedResult(target, record, false);
  await emitZoneEvent(
    kube,
    deps.logger,
    {
      reason: 'ZoneChanged',
      action: 'Apply',
      note: result.message ?? '',
      holder: target.who,
      zone,
      cluster: target.cluster,
      detail: String(record.generation),
    },
    now,
  );
  return result;
}
