// What the reconciler does for one handed-over zone: the same moves as the steps (zones/moves/), in this order,
// each decided from the VMCluster and the read balancer as they are now (so a restart anywhere resumes):
//   lease → [rollback requested: drain reads → revert] → await operational → await vmagent queues drained →
//   restore reads → release (lease, maintenance mark, handoff).
// Every write on the VMCluster is guarded by the resourceVersion the pass decided on: a step that takes the zone
// back meanwhile makes the reconciler's next write lose, and the reconciler touches nothing more (issue 21 item 2).

import type { Logger } from '../../goplugin/index.ts';
import type { NamespaceAllowance } from '../../kube/allowed-namespaces.ts';
import type { ClusterClients } from '../../kube/cluster-registry.ts';
import { parseGoDurationMs } from '../../kube/go-duration.ts';
import type { KubeObjects, ObjectRef } from '../../kube/objects.ts';
import { drainedFrom, readLayer } from '../../vm/read-layer.ts';
import { awaitOperational, awaitQueueDrained } from '../moves/await-operational.ts';
import { drainReadsMove, type MoveDeps } from '../moves/drain.ts';
import { maintenancePatch, maintenanceRecord, takeLease } from '../moves/lease.ts';
import type { ZoneQueueCheck } from '../moves/queue-check.ts';
import { release } from '../moves/release.ts';
import { restoreReadsMove } from '../moves/restore.ts';
import { revertMove } from '../moves/revert.ts';
import { emitZoneEvent } from '../state/events.ts';
import { describeCluster } from '../state/messages.ts';
import {
  annotationValue,
  describeHolder,
  type Handoff,
  handoffAnnotation,
  pendingLabel,
  recordedBalancers,
  sameRevision,
  sameRollout,
  timestamp,
  zoneState,
} from '../state/zone-annotations.ts';
import { isConflict, loadedCluster, patchCluster } from '../state/zone-object.ts';
import { RecordRefusedError, trustedHandoff } from './record-trust.ts';
import { holderExists } from './walk-ending.ts';

/** done: released; working: in progress; blocked: cannot move now (waits for another zone or Rollout). */
export type ZoneProgress = 'done' | 'working' | 'blocked';

export interface FinishDeps {
  /** The zone's objects, each in its own cluster (vm/cluster-routing.ts). */
  kube: KubeObjects;
  clusters: ClusterClients;
  logger: Logger;
  now(): Date;
  sleep(ms: number): Promise<void>;
  /** Without it (tests of the decisions), a zone is complete once operational. */
  queueCheck?: ZoneQueueCheck;
  /** What the handoff is checked against (zones/reconciler/record-trust.ts): the plugin's `--allowed-namespaces`, and the
   *  registered cluster the zone object lives in (undefined = the controller's own). */
  records: { allowance: NamespaceAllowance; zoneCluster: string | undefined };
}

/** Advances one VMCluster's handed-over work as far as it can go now. */
export async function finishZone(deps: FinishDeps, ref: ObjectRef): Promise<ZoneProgress> {
  const { kube } = deps;
  const name = describeCluster(ref);
  // The one read every decision of this pass is made on (and every write guarded by).
  let cluster = loadedCluster(await kube.get(ref));
  // Acts only on what the holder's spec document or the checks say, never on the annotation as written.
  const handoff = await trustedHandoff(deps, ref, cluster.object, cluster.state.handoff);
  if (handoff === undefined) {
    await patchCluster(kube, ref, { labels: { [pendingLabel]: null } }, cluster.resourceVersion);
    return 'done';
  }
  const zone = handoff.zone;
  const reads = recordedBalancers(handoff.reads);
  const moveDeps: MoveDeps & { queueCheck?: ZoneQueueCheck } = { ...deps, inCallWaitMs: 0 };
  // Progress goes into the handoff annotation, for `kubectl get vmcluster -o yaml` readers.
  const note = (message: string, progress: ZoneProgress) =>
    noteProgress(deps, ref, handoff, message, progress);
  // A lost guarded write: the zone changed hands (a step took it back); the next pass decides from scratch.
  const lostTo = (what: string): ZoneProgress => {
    deps.logger.info('reconciler: zone changed hands; deciding again next pass', {
      zone,
      vmcluster: name,
      what,
    });
    return 'working';
  };

  const lease = cluster.state.lease;
  if (lease !== undefined && !sameRollout(lease, handoff.holder) && (await holderExists(kube, lease))) {
    return note(`waiting: ${name} is leased by ${describeHolder(lease)} since ${lease.since}`, 'blocked');
  }
  if (lease === undefined || !sameRollout(lease, handoff.holder)) {
    const taken = await takeLease(kube, ref, cluster, { holder: handoff.holder, zone, now: deps.now() });
    if (taken.kind === 'lost') return lostTo('lease');
    cluster = taken.cluster;
  }

  const rollback = cluster.state.rollback;
  if (
    handoff.rollback &&
    rollback !== undefined &&
    sameRevision(rollback, handoff.holder) &&
    rollback.phase === 'requested'
  ) {
    const drain = await drainReadsMove(
      moveDeps,
      {
        zone,
        ref,
        reads,
        by: `rollback of ${describeHolder(handoff.holder)}`,
        holder: handoff.holder,
        graceMs: parseGoDurationMs(handoff.drainGracePeriod),
        mark:
          cluster.state.maintenance === undefined
            ? maintenancePatch(maintenanceRecord(zone, deps.now(), `rollback (${handoff.by})`))
            : undefined,
      },
      cluster,
    );
    // Not routed anywhere and never drained: nothing to take out, the rollback goes on.
    const nothingToDrain = drain.kind === 'failed' && drain.code === 'NotRouted';
    if (drain.kind === 'lost') return lostTo('drain');
    if (drain.kind === 'blocked') {
      return drain.code === 'LastServingZone'
        ? note(
            `waiting: zone ${zone}: ${drain.message}; it cannot be rolled back until another zone serves reads`,
            'blocked',
          )
        : note(`waiting to roll back zone ${zone}: ${drain.message}`, 'blocked');
    }
    if (drain.kind === 'waiting') {
      return note(
        drain.code === 'grace'
          ? `rollback: grace period for queries in flight until ${timestamp(drain.until ?? deps.now())}`
          : `rollback: waiting until vmauth serves reads without zone ${zone}: ${drain.message}`,
        'working',
      );
    }
    if (drain.kind === 'failed' && !nothingToDrain) return note(`rollback: ${drain.message}`, 'working');
    const reverted = await revertMove(kube, ref, drain.cluster ?? cluster, rollback, deps.now());
    if (reverted.kind === 'lost') return lostTo('revert');
    return note(`${reverted.message} on ${name}; waiting until it is operational`, 'working');
  }

  const operational = await awaitOperational(moveDeps, ref);
  if (operational.kind !== 'done') {
    if (operational.kind === 'failed') {
      deps.logger.warn('reconciler: zone failed; its reads stay drained', {
        zone,
        message: operational.message,
      });
    }
    return note(`reads of zone ${zone} stay drained: ${operational.message}`, 'working');
  }
  // Complete again: operational and every vmagent queue for it delivered (the vmagentQueueDrained evidence). Once
  // the restore has begun (its guarded write made), the queues were checked already.
  if (cluster.state.maintenance?.restoringSince === undefined) {
    const layer = await readLayer(deps, reads);
    if (drainedFrom(layer, zone).length > 0) {
      const queues = await awaitQueueDrained(moveDeps, ref, handoff);
      if (queues.kind !== 'done') {
        await saveQueueState(deps, ref, queues.state);
        return note(
          queues.kind === 'failed'
            ? `reads of zone ${zone} stay drained: ${queues.message}; check the zone's data, then restore its reads by hand`
            : `${name} is operational; reads come back once its vmagent queues have drained: ${queues.message}`,
          'working',
        );
      }
    }
  }
  // Guarded on the object this pass read before the queue check: a takeover since makes it lose (item 2).
  const restore = await restoreReadsMove(
    moveDeps,
    { zone, ref, reads, by: `reconciler (${handoff.by})` },
    cluster,
  );
  if (restore.kind === 'lost') return lostTo('restore');
  if (restore.kind === 'failed' && restore.code === 'RecordRefused') {
    throw new RecordRefusedError(
      { ref, cluster: deps.records.zoneCluster },
      zone,
      handoff.holder,
      restore.message,
    );
  }
  if (restore.kind === 'failed') {
    // Never "finished": the zone keeps its lease and maintenance mark, and a person is told on the zone object.
    const message = `zone ${zone}: ${restore.message}; check the balancers by hand`;
    await emitZoneEvent(
      kube,
      deps.logger,
      {
        reason: 'ZoneRestoreFailed',
        action: 'Reconcile',
        note: message,
        holder: handoff.holder,
        zone,
        cluster: ref,
        detail: handoff.requestedAt,
        zoneObjectOnly: true,
      },
      deps.now(),
    );
    return note(`reads of zone ${zone} are not restored: ${restore.message}`, 'blocked');
  }
  if (restore.kind === 'waiting') {
    const back =
      restore.restored !== undefined && restore.restored.length > 0
        ? `put zone ${zone} back into ${restore.restored.join(', ')}; `
        : '';
    return note(
      `${name} is operational; ${back}waiting until vmauth serves reads of zone ${zone} again: ${restore.message}`,
      'working',
    );
  }
  const held = restore.cluster ?? cluster;
  const wasReverted = held.state.rollback?.phase === 'reverted';
  // The holder's namespace hears of it only while that Rollout exists (it held the lease this pass took for it).
  const holderLive = await holderExists(kube, handoff.holder);
  const released = await release(kube, ref, held, { handoff: true, rollbackDone: wasReverted });
  if (released.kind === 'lost') return lostTo('release');
  await emitZoneEvent(
    kube,
    deps.logger,
    {
      reason: wasReverted ? 'ZoneRolledBack' : 'ZoneFinished',
      action: 'Reconcile',
      // Words of vmzones' own only: the handoff's `by` is a record's text (kept on the zone object itself).
      note: `zone ${zone}: ${name} ${wasReverted ? 'was rolled back and ' : ''}serves reads again; lease and maintenance released by the vmzones reconciler for ${describeHolder(handoff.holder)}`,
      holder: handoff.holder,
      zone,
      cluster: ref,
      detail: handoff.requestedAt,
      zoneObjectOnly: !holderLive,
    },
    deps.now(),
  );
  deps.logger.info('reconciler: zone finished', {
    zone,
    vmcluster: `${ref.namespace}/${ref.name}`,
    rolledBack: wasReverted,
    why: handoff.by,
  });
  return 'done';
}

/** Writes the reconciler's progress into the handoff (skipped when unchanged; a 409 leaves it to the next pass). */
async function noteProgress(
  deps: FinishDeps,
  ref: ObjectRef,
  handoff: Handoff,
  message: string,
  progress: ZoneProgress,
): Promise<ZoneProgress> {
  if (handoff.message === message) return progress;
  deps.logger.info('reconciler', { vmcluster: `${ref.namespace}/${ref.name}`, zone: handoff.zone, message });
  await updateHandoff(deps, ref, (current) => ({ ...current, message, updatedAt: timestamp(deps.now()) }));
  return progress;
}

/** Keeps the queue check's rounds in the handoff, so that the next pass (of any process) goes on from them. */
function saveQueueState(deps: FinishDeps, ref: ObjectRef, queueState: unknown): Promise<void> {
  return updateHandoff(deps, ref, (current) => ({ ...current, queueState }));
}

async function updateHandoff(
  deps: FinishDeps,
  ref: ObjectRef,
  change: (current: Handoff) => Handoff,
): Promise<void> {
  const latest = await deps.kube.get(ref);
  const current = zoneState(latest).handoff;
  if (current === undefined) return;
  try {
    await patchCluster(
      deps.kube,
      ref,
      { annotations: { [handoffAnnotation]: annotationValue(change(current)) } },
      latest.metadata.resourceVersion,
    );
  } catch (err) {
    // The operator wrote status meanwhile; the next pass writes it again.
    if (!isConflict(err)) throw err;
  }
}
