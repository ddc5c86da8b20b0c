// Abort and Terminate. The controller calls each once and never accepts Running, so neither waits: they write
// what must still happen into the VMCluster (the rollback request, the handoff) in one guarded patch, and the
// background reconciler finishes it — after a restart of the plugin or the controller too.

import { setTimeout as sleep } from 'node:timers/promises';
import type { StepResult } from '../rollouts/types.ts';
import { fieldName } from './apply.ts';
import { describeCluster, type LoadedCluster, loadCluster, patchCluster, type ZoneDeps } from './cluster.ts';
import { isConflict, type StatusDocument, showValue, successful } from './outcome.ts';
import {
  annotationValue,
  describeHolder,
  type Handoff,
  handoffAnnotation,
  type Lease,
  leaseAnnotation,
  pendingLabel,
  type RollbackRecord,
  rollbackAnnotation,
  sameRevision,
  sameRollout,
  timestamp,
} from './state.ts';
import type { ZoneTarget } from './target.ts';

const conflictAttempts = 5;

/** Abort and Terminate are never retried by the controller: re-read and retry conflicts here. */
async function withConflictRetries<T>(work: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await work();
    } catch (err) {
      if (!isConflict(err) || attempt >= conflictAttempts) throw err;
      await sleep(200 * attempt);
    }
  }
}

function handoffFor(
  target: ZoneTarget,
  existing: Handoff | undefined,
  by: string,
  rollback: boolean,
  now: Date,
): Handoff {
  return {
    zone: target.config.zone,
    holder: existing?.holder ?? target.who,
    requestedAt: existing?.requestedAt ?? timestamp(now),
    by: existing ? `${existing.by}; ${by}` : by,
    rollback: (existing?.rollback ?? false) || rollback,
    reads: target.reads,
    drainGracePeriod: target.drainGracePeriod,
  };
}

async function handOver(
  deps: ZoneDeps,
  target: ZoneTarget,
  cluster: LoadedCluster,
  by: string,
  rollback: RollbackRecord | undefined,
): Promise<void> {
  const now = deps.now();
  const { state } = cluster;
  const annotations: Record<string, string | null> = {
    [handoffAnnotation]: annotationValue(handoffFor(target, state.handoff, by, rollback !== undefined, now)),
  };
  if (rollback !== undefined) {
    annotations[rollbackAnnotation] = annotationValue({
      ...rollback,
      phase: 'requested',
      requestedAt: timestamp(now),
    });
  }
  if (state.lease === undefined) {
    const lease: Lease = { ...target.who, since: timestamp(now) };
    annotations[leaseAnnotation] = annotationValue(lease);
  }
  await patchCluster(
    deps.kube,
    target.cluster,
    { annotations, labels: { [pendingLabel]: 'true' } },
    cluster.resourceVersion,
  );
  deps.logger.info('zone handed to the reconciler', {
    zone: target.config.zone,
    by,
    rollback: rollback !== undefined,
  });
}

function revertText(rollback: RollbackRecord): string {
  const shown = rollback.changes
    .slice(0, 5)
    .map((c) => `${fieldName(c.path)}=${showValue(c.before)}`)
    .join(', ');
  return rollback.changes.length > 5 ? `${shown} and ${rollback.changes.length - 5} more` : shown;
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

export async function abortStep(deps: ZoneDeps, target: ZoneTarget): Promise<StepResult> {
  const zone = target.config.zone;
  const name = describeCluster(target.cluster);
  return withConflictRetries(async () => {
    const cluster = await loadCluster(deps.kube, target.cluster, zone);
    const { state } = cluster;
    if (state.lease !== undefined && !sameRollout(state.lease, target.who)) {
      // Another Rollout took the zone after us; it changes the zone next, and waiting for it could deadlock.
      return successful(
        `zone ${zone}: not rolled back: ${name} is now leased by ${describeHolder(state.lease)} since ${state.lease.since}`,
        status(target, 'Abort'),
      );
    }
    const rollback = undoable(cluster, target);
    const how = `the vmzones reconciler takes zone ${zone} out of reads if it serves any, waits for vmauth, puts back ${rollback ? revertText(rollback) : ''} on ${name}, waits until it is operational, then restores its reads and releases the lease`;

    if (target.config.action === 'apply') {
      if (rollback === undefined) {
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
      await handOver(deps, target, cluster, `Abort of apply by ${describeHolder(target.who)}`, rollback);
      return successful(
        `zone ${zone}: rollback requested: ${how}`,
        status(target, 'Abort', { rollback: 'requested' }),
      );
    }

    if (target.config.action === 'drainReads') {
      if (state.handoff !== undefined && (state.handoff.rollback || rollback === undefined)) {
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
      await handOver(deps, target, cluster, `Abort of drainReads by ${describeHolder(target.who)}`, rollback);
      return successful(
        rollback
          ? `zone ${zone}: rollback requested (apply had not reported success): ${how}`
          : `zone ${zone}: handed to the vmzones reconciler, which restores its reads once ${name} is operational and releases the lease`,
        status(target, 'Abort', { handoff: 'requested' }),
      );
    }

    return successful(
      `zone ${zone}: nothing to undo for restoreReads; the aborts of apply and drainReads hand the zone over`,
      status(target, 'Abort'),
    );
  });
}

export async function terminateStep(deps: ZoneDeps, target: ZoneTarget): Promise<StepResult> {
  const zone = target.config.zone;
  const name = describeCluster(target.cluster);
  return withConflictRetries(async () => {
    const cluster = await loadCluster(deps.kube, target.cluster, zone);
    const { state } = cluster;
    if (target.config.action === 'apply' || !sameRollout(state.lease, target.who)) {
      return successful(`zone ${zone}: nothing to hand over on ${name}`, status(target, 'Terminate'));
    }
    if (state.handoff === undefined) {
      await handOver(
        deps,
        target,
        cluster,
        `Terminate of ${target.config.action} (full promotion) by ${describeHolder(target.who)}`,
        undefined,
      );
    }
    return successful(
      `zone ${zone}: stopped waiting; the vmzones reconciler restores reads once ${name} is operational and releases the lease`,
      status(target, 'Terminate', { handoff: 'requested' }),
    );
  });
}
