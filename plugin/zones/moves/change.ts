// Change (apply): merge the zone's overrides into its spec, and record in the same guarded write the value every
// changed field had before (the rollback record), so that no crash can separate the change from how to undo it.
// Refused while the zone serves reads, and when the API server would reject or silently prune a field.

import type { Logger } from '../../goplugin/index.ts';
import { KubeError, type KubeObject, type ObjectRef } from '../../kube/objects.ts';
import { readLayer, routingTo } from '../../vm/read-layer.ts';
import { deepEqual, diffMergePatch, type JsonObject, valueAt } from '../state/merge-patch.ts';
import { describeCluster } from '../state/messages.ts';
import {
  annotationValue,
  type RollbackRecord,
  type RolloutIdentity,
  rollbackAnnotation,
  timestamp,
  zoneIdentity,
} from '../state/zone-annotations.ts';
import { type LoadedCluster, patchCluster } from '../state/zone-object.ts';
import { type ReadsSource, readsCarry, wantsPatch } from './lease.ts';
import type { MoveDeps } from './move-deps.ts';
import { done, failedMove, lost, type MoveOutcome } from './outcome.ts';
import { overUnfinishedWalk, rollbackChanges } from './superseded-changes.ts';
import { transition } from './transition.ts';

export function fieldName(path: readonly string[]): string {
  return ['spec', ...path].join('.');
}

/** The fields a change touched, by name (at most 5, then how many more): what messages, statuses and events say
 *  of a change; its values stay only in the rollback record on the zone object. */
export function describeChangedFields(changes: readonly { path: readonly string[] }[]): string {
  const shown = changes
    .slice(0, 5)
    .map((c) => fieldName(c.path))
    .join(', ');
  return `${shown}${changes.length > 5 ? ` and ${changes.length - 5} more fields` : ''}`;
}

/** What a change is made from: the walk's zone, its object, its overrides and who changes it (a ZoneTarget). */
export interface ChangeTarget extends ReadsSource {
  config: { zone: string };
  cluster: ObjectRef;
  zone: { patch: JsonObject };
  who: RolloutIdentity;
  /** The Rollout's stable revision: the values an undo goes back to (superseded-changes.ts). */
  stableRevision: string | undefined;
}

export interface ChangeOutcome extends MoveOutcome {
  record?: RollbackRecord;
}

export async function changeMove(
  deps: MoveDeps & { logger: Logger },
  target: ChangeTarget,
  cluster: LoadedCluster,
): Promise<ChangeOutcome> {
  const { kube } = deps;
  const zone = target.config.zone;
  const name = describeCluster(target.cluster);
  const { state } = cluster;
  const serving = routingTo(await readLayer(deps, target.reads), zone);
  if (serving.length > 0) {
    return failedMove(
      `zone ${zone} serves reads again through ${serving.map((b) => b.describe).join(', ')} (was it put back by hand or by a sync?); refusing to change ${name} while it serves reads`,
      'ServesReads',
    );
  }
  const spec = (cluster.object.spec ?? {}) as JsonObject;
  const changes = diffMergePatch(spec, target.zone.patch);
  const record: RollbackRecord = {
    ...target.who,
    zone,
    object: zoneIdentity(cluster.object),
    phase: 'applied',
    appliedAt: timestamp(deps.now()),
    // A spec change bumps metadata.generation by one; corrected below if the API server says otherwise.
    generation: cluster.generation + (changes.length > 0 ? 1 : 0),
    changes: rollbackChanges(changes, spec, state.rollback, target.who, target.stableRevision),
    ...(target.stableRevision === undefined ? {} : { stableRevision: target.stableRevision }),
    ...(overUnfinishedWalk(state.rollback, target.who, target.stableRevision)
      ? { overRevision: state.rollback.revision }
      : {}),
    ...readsCarry(target),
  };
  const patch = {
    // The rollback record and the intent (state/zone-intent.ts: the holder wants it changed) in the same write.
    annotations: { [rollbackAnnotation]: annotationValue(record), ...wantsPatch(state, 'changed') },
    ...(changes.length > 0 ? { spec: target.zone.patch } : {}),
  };
  if (changes.length > 0) {
    let dryRun: KubeObject;
    try {
      dryRun = await patchCluster(kube, target.cluster, patch, cluster.resourceVersion, true);
    } catch (err) {
      if (err instanceof KubeError && (err.kind === 'invalid' || err.kind === 'forbidden')) {
        return failedMove(
          `the API server rejects the overrides for ${name} (zone ${zone}): ${err.message}; nothing was changed`,
          'OverridesRejected',
        );
      }
      throw err;
    }
    // The VMCluster schema prunes fields it does not know (a typo such as clusterVerison) without an error: a
    // change that would silently not happen is refused, so that success always means the spec holds the overrides.
    const dropped = changes.filter((c) => !deepEqual(valueAt(dryRun.spec, c.path), c.after));
    if (dropped.length > 0) {
      return failedMove(
        `the API server would not keep ${dropped.map((c) => fieldName(c.path)).join(', ')} of the overrides for ${name} (zone ${zone}): not in the VMCluster schema, or changed by a defaulting webhook; check the field names. Nothing was changed`,
        'OverridesPruned',
      );
    }
  }
  const written = await transition(kube, target.cluster, cluster, patch);
  if (written.kind === 'lost') return lost(`zone ${zone} changed hands before its change`);
  deps.logger.info('zone changed', { zone, vmcluster: name, fields: changes.length });
  const generation = written.cluster.generation || record.generation;
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
  return { ...done(`changed ${changes.length} fields`), record };
}
