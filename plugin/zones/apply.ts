// apply: merge the zone's overrides into its VMCluster spec (RFC 7396, field manager vmzones), recording the value
// every changed field had before — in the step status for humans and, in the same guarded write as the change,
// in the VMCluster's rollback annotation, so that no crash can separate the change from how to undo it.

import { KubeError, type KubeObject } from '../kube/objects.ts';
import { redactFieldValue, showFieldValue } from '../kube/redact.ts';
import type { StepResult } from '../rollouts/types.ts';
import type { ZoneDeps } from './deps.ts';
import { emitZoneEvent } from './events.ts';
import { deepEqual, diffMergePatch, type FieldChange, type JsonObject, valueAt } from './merge-patch.ts';
import { describeCluster, leasedByOther } from './messages.ts';
import { running, type StatusDocument, StepFailure, successful } from './outcome.ts';
import { readLayer, routingTo } from './read-layer.ts';
import {
  annotationValue,
  describeHolder,
  fieldChanges,
  type RollbackRecord,
  readsRecord,
  rollbackAnnotation,
  sameRevision,
  sameRollout,
  timestamp,
} from './state.ts';
import { overUnfinishedWalk, rollbackChanges } from './superseded-changes.ts';
import { agentsCluster, type ZoneTarget } from './target.ts';
import { loadCluster, patchCluster } from './vmcluster-state.ts';

const maxChangedStatusChars = 3000;

export function fieldName(path: readonly string[]): string {
  return ['spec', ...path].join('.');
}

/** `{"spec.clusterVersion": {from, to}}`, or only the field names when the values would bloat the Rollout status. */
export function changedSummary(changes: readonly FieldChange[]): Record<string, unknown> | string[] {
  const full: Record<string, unknown> = {};
  for (const c of changes) {
    // Not null: the API server drops nulls from the Rollout status.
    full[fieldName(c.path)] = {
      from: redactFieldValue(c.path, c.before) ?? '(unset)',
      to: redactFieldValue(c.path, c.after) ?? '(deleted)',
    };
  }
  return JSON.stringify(full).length <= maxChangedStatusChars ? full : changes.map((c) => fieldName(c.path));
}

function describeChanges(changes: readonly FieldChange[]): string {
  if (changes.length === 0) return 'no field differs from the overrides, nothing changed';
  const shown = changes
    .slice(0, 5)
    .map(
      (c) => `${fieldName(c.path)} ${showFieldValue(c.path, c.before)} → ${showFieldValue(c.path, c.after)}`,
    )
    .join(', ');
  return `${shown}${changes.length > 5 ? ` and ${changes.length - 5} more fields` : ''}`;
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

export async function applyZone(deps: ZoneDeps, target: ZoneTarget): Promise<StepResult> {
  const { kube } = deps;
  const zone = target.config.zone;
  const name = describeCluster(target.cluster);
  const cluster = await loadCluster(kube, target.cluster, zone);
  const { state } = cluster;

  if (state.handoff !== undefined) {
    return running(
      `zone ${zone}: waiting for the vmzones reconciler to finish earlier work on ${name} (${state.handoff.by}, since ${state.handoff.requestedAt})`,
      {
        zone,
        action: 'apply',
        vmcluster: `${target.cluster.namespace}/${target.cluster.name}`,
        state: 'waitingForHandoff',
      },
    );
  }
  if (
    state.rollback !== undefined &&
    sameRevision(state.rollback, target.who) &&
    state.rollback.phase === 'applied'
  ) {
    return appliedResult(target, state.rollback, true);
  }
  if (!sameRevision(state.lease, target.who)) {
    if (state.lease !== undefined && !sameRollout(state.lease, target.who)) {
      throw new StepFailure(leasedByOther(target.cluster, zone, state.lease));
    }
    throw new StepFailure(
      `drainReads for zone ${zone} has not run for this revision: ${name} holds no lease of ${describeHolder(target.who)}; nothing was changed`,
    );
  }
  const serving = routingTo(await readLayer(deps, target.reads), zone);
  if (serving.length > 0) {
    throw new StepFailure(
      `zone ${zone} serves reads again through ${serving.map((b) => b.describe).join(', ')} (was it put back by hand or by a sync?); refusing to change ${name} while it serves reads`,
    );
  }

  const changes = diffMergePatch((cluster.object.spec ?? {}) as JsonObject, target.zone.patch);
  const now = deps.now();
  const record: RollbackRecord = {
    ...target.who,
    zone,
    phase: 'applied',
    appliedAt: timestamp(now),
    // A spec change bumps metadata.generation by one; corrected below if the API server says otherwise.
    generation: cluster.generation + (changes.length > 0 ? 1 : 0),
    changes: rollbackChanges(
      changes,
      (cluster.object.spec ?? {}) as JsonObject,
      state.rollback,
      target.who,
      target.stableRevision,
    ),
    ...(target.stableRevision === undefined ? {} : { stableRevision: target.stableRevision }),
    ...(overUnfinishedWalk(state.rollback, target.who, target.stableRevision)
      ? { overRevision: state.rollback.revision }
      : {}),
    reads: readsRecord(target.reads),
    drainGracePeriod: target.drainGracePeriod,
    vmagents: target.vmagents,
    ...agentsCluster(target),
  };
  const patch = {
    annotations: { [rollbackAnnotation]: annotationValue(record) },
    ...(changes.length > 0 ? { spec: target.zone.patch } : {}),
  };
  if (changes.length > 0) {
    let dryRun: KubeObject;
    try {
      dryRun = await patchCluster(kube, target.cluster, patch, cluster.resourceVersion, true);
    } catch (err) {
      if (err instanceof KubeError && (err.kind === 'invalid' || err.kind === 'forbidden')) {
        throw new StepFailure(
          `the API server rejects the overrides for ${name} (zone ${zone}): ${err.message}; nothing was changed`,
        );
      }
      throw err;
    }
    // The VMCluster schema prunes fields it does not know (a typo such as clusterVerison) without an error: a
    // change that would silently not happen is refused, so that success always means the spec holds the overrides.
    const dropped = changes.filter((c) => !deepEqual(valueAt(dryRun.spec, c.path), c.after));
    if (dropped.length > 0) {
      throw new StepFailure(
        `the API server would not keep ${dropped.map((c) => fieldName(c.path)).join(', ')} of the overrides for ${name} (zone ${zone}): not in the VMCluster schema, or changed by a defaulting webhook; check the field names. Nothing was changed`,
      );
    }
  }
  const written = await patchCluster(kube, target.cluster, patch, cluster.resourceVersion);
  deps.logger.info('zone changed', { zone, vmcluster: name, fields: changes.length });
  const generation = written.metadata.generation ?? record.generation;
  if (generation !== record.generation) {
    record.generation = generation;
    // Unguarded: only our own annotation changes, and the operator writes status right after a spec change.
    await patchCluster(
      kube,
      target.cluster,
      { annotations: { [rollbackAnnotation]: annotationValue(record) } },
      undefined,
    );
  }
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
