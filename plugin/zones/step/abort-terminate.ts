// Abort and Terminate. The controller calls each once, never retries it and never accepts Running, so neither
// waits: each writes what must still happen into the VMCluster (the rollback request, the handoff) in one guarded
// patch (the step plugin retries transient API faults around it, plugin/zones/step/outcome.ts), and the background reconciler finishes it — after a restart of the
// plugin or the controller too. Should even that fail, the reconciler finds the zone from its lease and rollback
// record alone (plugin/zones/reconciler/walk-ending.ts).

import type { StepResult } from '../../rollouts/types.ts';
import { describeChangedFields } from '../moves/change.ts';
import { handOver } from '../moves/hand-over.ts';
import { readsCarry } from '../moves/lease.ts';
import { emitZoneEvent } from '../state/events.ts';
import { describeCluster } from '../state/messages.ts';
import { describeHolder, type RollbackRecord, sameRevision, sameRollout } from '../state/zone-annotations.ts';
import { reconcilerMovesNext, zoneIntent } from '../state/zone-intent.ts';
import type { LoadedCluster } from '../state/zone-object.ts';
import type { ZoneDeps } from './deps.ts';
import { type StatusDocument, successful } from './outcome.ts';
import { lostRace } from './step-waits.ts';
import type { ZoneTarget } from './target.ts';
import { loadCluster } from './zone-action.ts';

async function handTargetOver(
  deps: ZoneDeps,
  target: ZoneTarget,
  cluster: LoadedCluster,
  by: string,
  rollback: RollbackRecord | undefined,
): Promise<void> {
  const handed = await handOver(
    deps.kube,
    cluster,
    {
      zone: target.config.zone,
      cluster: target.cluster,
      holder: target.who,
      by,
      ...readsCarry(target),
      rollback,
    },
    deps.now(),
  );
  // The zone changed hands since it was read (moves/conflict.ts): Abort and Terminate decide again on it as it is.
  if (handed.kind === 'lost') lostRace(target.config.zone, describeCluster(target.cluster));
  await emitZoneEvent(
    deps.kube,
    deps.logger,
    {
      reason: rollback === undefined ? 'ZoneHandedOver' : 'ZoneRollbackRequested',
      action: by.startsWith('Terminate') ? 'Terminate' : 'Abort',
      note: `zone ${target.config.zone}: ${by}; the vmzones reconciler ${rollback === undefined ? 'restores its reads once it is complete and releases it' : 'rolls it back, then restores its reads once it is complete'}`,
      holder: target.who,
      zone: target.config.zone,
      cluster: target.cluster,
    },
    deps.now(),
  );
  deps.logger.info('zone handed to the reconciler', {
    zone: target.config.zone,
    by,
    rollback: rollback !== undefined,
  });
}

function revertText(rollback: RollbackRecord): string {
  return describeChangedFields(rollback.changes);
}

function status(target: ZoneTarget, operation: string, extra: StatusDocument = {}): StatusDocument {
  return {
    zone: target.config.zone,
    action: target.config.action,
    operation,
    vmcluster: `${target.cluster.namespace}/${target.cluster.name}`,
    ...extra,
  };
}

/** A rollback of this revision's apply that is still in place. */
function undoable(cluster: LoadedCluster, target: ZoneTarget): RollbackRecord | undefined {
  const rollback = cluster.state.rollback;
  return rollback !== undefined &&
    sameRevision(rollback, target.who) &&
    rollback.phase === 'applied' &&
    rollback.changes.length > 0
    ? rollback
    : undefined;
}

/** What Abort and Terminate start from: the zone, its VMCluster as messages name it, its state now. */
async function loadZone(deps: ZoneDeps, target: ZoneTarget) {
  const zone = target.config.zone;
  const cluster = await loadCluster(deps.kube, target.cluster, zone);
  return { zone, name: describeCluster(target.cluster), cluster, state: cluster.state };
}

export async function abortStep(deps: ZoneDeps, target: ZoneTarget): Promise<StepResult> {
  const { zone, name, cluster, state } = await loadZone(deps, target);
  const { action } = target.config;
  if (state.lease !== undefined && !sameRollout(state.lease, target.who)) {
    // Another Rollout took the zone after us; it changes the zone next, and waiting for it could deadlock.
    return successful(
      `zone ${zone}: not rolled back: ${name} is now leased by ${describeHolder(state.lease)} since ${state.lease.since}`,
      status(target, 'Abort'),
    );
  }
  const rollback = undoable(cluster, target);

  if (action === 'apply' && rollback === undefined) {
    const record = state.rollback;
    const why =
      record === undefined
        ? 'no change of this revision is recorded'
        : !sameRevision(record, target.who)
          ? `the recorded change belongs to ${describeHolder(record)}`
          : record.phase !== 'applied'
            ? `its rollback was already ${record.phase} (${record.requestedAt ?? record.revertedAt ?? ''})`
            : 'apply changed no field';
    return successful(`zone ${zone}: nothing to roll back on ${name}: ${why}`, status(target, 'Abort'));
  }
  if (action === 'drainReads') {
    const intent = zoneIntent(state);
    if (
      state.handoff !== undefined &&
      intent?.nextMove === 'reconciler' &&
      (intent.wants === 'rolledBack' || rollback === undefined)
    ) {
      return successful(
        `zone ${zone}: already handed to the vmzones reconciler (${state.handoff.by}); it restores reads once ${name} is operational`,
        status(target, 'Abort', { handoff: state.handoff.requestedAt }),
      );
    }
    if (!sameRollout(state.lease, target.who) && rollback === undefined) {
      return successful(
        `zone ${zone}: nothing to undo: ${name} holds no lease of ${describeHolder(target.who)}, so this Rollout has not drained its reads`,
        status(target, 'Abort'),
      );
    }
  }
  if (action !== 'apply' && action !== 'drainReads') {
    return successful(
      `zone ${zone}: nothing to undo for restoreReads; the aborts of apply and drainReads hand the zone over`,
      status(target, 'Abort'),
    );
  }

  // apply with a change to undo, or drainReads while this Rollout holds the zone: the reconciler takes it over.
  await handTargetOver(
    deps,
    target,
    cluster,
    `Abort of ${action} by ${describeHolder(target.who)}`,
    rollback,
  );
  const how = `the vmzones reconciler takes zone ${zone} out of reads if it serves any, waits for vmauth, puts back the earlier values of ${rollback ? revertText(rollback) : ''} on ${name}, waits until it is operational and its vmagent queues have drained, then restores its reads and releases the lease`;
  if (action === 'apply') {
    return successful(
      `zone ${zone}: rollback requested: ${how}`,
      status(target, 'Abort', { rollback: 'requested' }),
    );
  }
  return successful(
    rollback
      ? `zone ${zone}: rollback requested (apply had not reported success): ${how}`
      : `zone ${zone}: handed to the vmzones reconciler, which restores its reads once ${name} is operational and releases the lease`,
    status(target, 'Abort', { handoff: 'requested' }),
  );
}

/** `promote --full` while this zone's step runs: the zone keeps the change it has and comes back to reads. */
export async function terminateStep(deps: ZoneDeps, target: ZoneTarget): Promise<StepResult> {
  const { zone, name, cluster, state } = await loadZone(deps, target);
  if (target.config.action === 'apply' || !sameRollout(state.lease, target.who)) {
    return successful(`zone ${zone}: nothing to hand over on ${name}`, status(target, 'Terminate'));
  }
  if (!reconcilerMovesNext(state)) {
    await handTargetOver(
      deps,
      target,
      cluster,
      `Terminate of ${target.config.action} (full promotion) by ${describeHolder(target.who)}`,
      undefined,
    );
  }
  const applied = sameRevision(state.rollback, target.who) && state.rollback?.phase === 'applied';
  return successful(
    `zone ${zone}: stopped waiting (full promotion); the vmzones reconciler restores reads once ${name} is operational and releases the lease. ${name} ${applied ? 'keeps the change of this revision' : 'was not changed by this revision'}; zones after it in the walk keep their previous spec until a later revision walks them`,
    status(target, 'Terminate', { handoff: 'requested' }),
  );
}
