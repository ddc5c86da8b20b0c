// What the reconciler does for one handed-over zone: the same moves as the steps (zones/moves/), in this order,
// each decided from the VMCluster and the read balancer as they are now (so a restart anywhere resumes):
//   lease → [rollback requested: drain reads → revert] → await operational → await vmagent queues drained →
//   restore reads → release (lease, maintenance mark, handoff).
// Every write on the VMCluster is guarded by the resourceVersion the pass decided on: a step that takes the zone
// back meanwhile makes the reconciler's next write lose, and the reconciler touches nothing more (issue 21 item 2).

import { isFinalCode } from '../../goplugin/failure-codes.ts';
import type { Logger } from '../../goplugin/index.ts';
import type { NamespaceAllowance } from '../../kube/allowed-namespaces.ts';
import type { ClusterClients } from '../../kube/cluster-registry.ts';
import { parseGoDurationMs } from '../../kube/go-duration.ts';
import type { KubeObjects, ObjectRef } from '../../kube/objects.ts';
import { type BringBackProgress, bringBack } from '../moves/bring-back.ts';
import { maintenancePatch, maintenanceRecord, takeLease } from '../moves/lease.ts';
import type { MoveDeps } from '../moves/move-deps.ts';
import type { ZoneQueueCheck } from '../moves/queue-check.ts';
import { revertMove } from '../moves/revert.ts';
import { type TakeOutProgress, takeOut } from '../moves/take-out.ts';
import { emitZoneEvent } from '../state/events.ts';
import { holderExists } from '../state/holder.ts';
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
import { handedOverIntent, zoneIntent } from '../state/zone-intent.ts';
import { isConflict, loadedCluster, patchCluster } from '../state/zone-object.ts';
import { RecordRefusedError, trustedHandoff } from './record-trust.ts';

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
    // Held for the handoff's holder, with the intent its hand-over asked for (state/zone-intent.ts).
    const taken = await takeLease(kube, ref, cluster, {
      holder: handoff.holder,
      zone,
      now: deps.now(),
      intent: handedOverIntent(handoff.rollback),
    });
    if (taken.kind === 'lost') return lostTo('lease');
    cluster = taken.cluster;
  }

  // From here the zone is held for the handoff's holder: its stored intent decides the next move.
  const intent = zoneIntent(cluster.state);
  const rollback = cluster.state.rollback;
  if (
    intent?.wants === 'rolledBack' &&
    rollback !== undefined &&
    sameRevision(rollback, handoff.holder) &&
    rollback.phase === 'requested'
  ) {
    // The same take-out as the step's drainReads (zones/moves/take-out.ts), without a deadline: the reconciler is
    // what finishes zones, so it waits on; the zone stays held for its holder while the budget refuses.
    const drain = await takeOut(
      moveDeps,
      {
        zone,
        ref,
        reads,
        by: `rollback of ${describeHolder(handoff.holder)}`,
        holder: handoff.holder,
        graceMs: parseGoDurationMs(handoff.drainGracePeriod),
        // The holder's own budget, as its step would drain under (the default when no spec document names the
        // zone): the default of one zone out would refuse the rollback while another walk's admitted wave holds
        // the room it reserved for this very zone (docs/reliability.md, "A rollback beside another walk's wave").
        ...(handoff.budget === undefined ? {} : { budget: handoff.budget }),
        hold: (found) =>
          found.state.maintenance === undefined
            ? maintenancePatch(maintenanceRecord(zone, deps.now(), `rollback (${handoff.by})`))
            : undefined,
        leaseOnlyWhileDrained: false,
      },
      cluster,
    );
    const rolledBack = await rollbackDrainNote(deps, drain, zone, note, lostTo);
    if (rolledBack !== undefined) return rolledBack;
    const reverted = await revertMove(kube, ref, drain.cluster ?? cluster, rollback, deps.now());
    if (reverted.kind === 'lost') return lostTo('revert');
    return note(`${reverted.message} on ${name}; waiting until it is operational`, 'working');
  }

  // Operational, its vmagent queues delivered, its reads put back with vmauth's proof, released: the same
  // bringing-back as the step's restoreReads (zones/moves/bring-back.ts), guarded on the object this pass read.
  const progress = await bringBack(
    moveDeps,
    {
      zone,
      ref,
      reads,
      by: `reconciler (${handoff.by})`,
      queues: handoff,
      releases: (held) => ({ handoff: true, rollbackDone: held.state.rollback?.phase === 'reverted' }),
    },
    cluster,
  );
  switch (progress.phase) {
    case 'lost':
      return lostTo(progress.lostAt);
    case 'waiting': {
      if (progress.waitsOn === 'operational') {
        return note(`reads of zone ${zone} stay drained: ${progress.message}`, 'working');
      }
      if (progress.waitsOn === 'queues') {
        await saveQueueState(deps, ref, progress.queueState);
        return note(
          `${name} is operational; reads come back once its vmagent queues have drained: ${progress.message}`,
          'working',
        );
      }
      const back =
        progress.restored.length > 0 ? `put zone ${zone} back into ${progress.restored.join(', ')}; ` : '';
      return note(
        `${name} is operational; ${back}waiting until vmauth serves reads of zone ${zone} again: ${progress.message}`,
        'working',
      );
    }
    case 'failed':
      return failedToBringBack(deps, ref, handoff, progress);
    default:
      break;
  }
  const wasReverted = progress.held.state.rollback?.phase === 'reverted';
  // The holder's namespace hears of it only while that Rollout exists (it held the lease this pass released).
  const holderLive = await holderExists(kube, handoff.holder);
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

/** What the rollback's take-out means for this pass: undefined to go on to the revert (drained, or never routed:
 *  nothing to take out), else the pass's progress (waiting, blocked by another zone, lost). */
function rollbackDrainNote(
  deps: Pick<FinishDeps, 'now'>,
  drain: TakeOutProgress,
  zone: string,
  note: (message: string, progress: ZoneProgress) => Promise<ZoneProgress>,
  lostTo: (what: string) => ZoneProgress,
): Promise<ZoneProgress> | ZoneProgress | undefined {
  switch (drain.phase) {
    case 'done':
      return undefined;
    case 'lost':
      return lostTo('drain');
    case 'failed':
      if (drain.code === 'NotRouted') return undefined;
      if (drain.code === 'LastServingZone') {
        return note(
          `waiting: ${drain.message}; it cannot be rolled back until another zone serves reads`,
          'blocked',
        );
      }
      // A failure that needs a human (failure-codes.ts failureFinality) blocks the zone; another is tried again.
      return note(`rollback: ${drain.message}`, drain.final ? 'blocked' : 'working');
    case 'waiting':
      if (drain.waitsOn === 'lease' || drain.waitsOn === 'budget') {
        return note(`waiting to roll back zone ${zone}: ${drain.message}`, 'blocked');
      }
      return note(
        drain.waitsOn === 'vmauth'
          ? `rollback: waiting until vmauth serves reads without zone ${zone}: ${drain.message}`
          : `rollback: grace period for queries in flight until ${timestamp(drain.until ?? deps.now())}`,
        'working',
      );
  }
}

/** A zone that cannot be brought back: a failed zone or queue check stays drained (said in the handoff); a drain
 *  record of another object is refused (a Warning on the zone object); a restore that leaves the zone unrouted is a
 *  failure too, never "finished" (the zone stays held, a ZoneRestoreFailed Warning on the zone object). */
async function failedToBringBack(
  deps: FinishDeps,
  ref: ObjectRef,
  handoff: Handoff,
  failure: Extract<BringBackProgress, { phase: 'failed' }>,
): Promise<ZoneProgress> {
  const zone = handoff.zone;
  const note = (message: string, progress: ZoneProgress) =>
    noteProgress(deps, ref, handoff, message, progress);
  if (failure.failedAt === 'operational') {
    deps.logger.warn('reconciler: zone failed; its reads stay drained', { zone, message: failure.message });
    return note(`reads of zone ${zone} stay drained: ${failure.message}`, 'working');
  }
  if (failure.failedAt === 'queues') {
    await saveQueueState(deps, ref, failure.queueState);
    return note(
      `reads of zone ${zone} stay drained: ${failure.message}; check the zone's data, then restore its reads by hand`,
      'working',
    );
  }
  if (failure.code === 'RecordRefused') {
    throw new RecordRefusedError(
      { ref, cluster: deps.records.zoneCluster },
      zone,
      handoff.holder,
      failure.message,
    );
  }
  // A restore failure that may clear (failure-codes.ts failureFinality) is tried again next pass, without a Warning.
  if (!isFinalCode(failure.code)) {
    return note(`reads of zone ${zone} are not restored yet: ${failure.message}`, 'working');
  }
  await emitZoneEvent(
    deps.kube,
    deps.logger,
    {
      reason: 'ZoneRestoreFailed',
      action: 'Reconcile',
      note: `zone ${zone}: ${failure.message}; check the balancers by hand`,
      holder: handoff.holder,
      zone,
      cluster: ref,
      detail: handoff.requestedAt,
      zoneObjectOnly: true,
    },
    deps.now(),
  );
  return note(`reads of zone ${zone} are not restored: ${failure.message}`, 'blocked');
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
