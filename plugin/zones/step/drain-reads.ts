// drainReads: take the zone's vmselect out of the read balancer and stay Running until every vmauth replica
// serves the routing without it, plus the grace period for queries in flight. Replay-safe: the balancer records
// what was removed, so a replayed Run finds the zone already out and only waits. The sequence itself is the drain
// move (zones/moves/drain.ts), shared with the reconciler; this maps its outcome to a step result.

import type { StepResult } from '../../rollouts/types.ts';
import { zoneQueryPods } from '../../vm/queries-in-flight.ts';
import { drainedFrom, readLayer } from '../../vm/read-layer.ts';
import { drainReadsMove } from '../moves/drain.ts';
import { readsCarry, stepLeasePatch, takeLease } from '../moves/lease.ts';
import { outcomeFailureCode } from '../moves/outcome.ts';
import { release } from '../moves/release.ts';
import { holderExists } from '../reconciler/walk-ending.ts';
import { emitZoneEvent } from '../state/events.ts';
import { describeHandoff, leasedByOther } from '../state/messages.ts';
import {
  describeHolder,
  sameRevision,
  sameRollout,
  timestamp,
  zoneIdentity,
} from '../state/zone-annotations.ts';
import type { ZoneDeps } from './deps.ts';
import { running, StepFailure, successful } from './outcome.ts';
import { lostRace, waitForReconciler } from './step-waits.ts';
import type { ZoneTarget } from './target.ts';
import { pastDeadline, stepState, waitingSince, waitStatus } from './wait-deadline.ts';
import { loadCluster, openZoneAction } from './zone-action.ts';

/** Gives the zone back (lease and maintenance mark go) when nothing of it is drained: a guarded write on the zone as
 *  it is now, lost (and left) when someone else wrote meanwhile. */
async function giveBack(deps: ZoneDeps, target: ZoneTarget): Promise<void> {
  const now = await loadCluster(deps.kube, target.cluster, target.config.zone);
  if (!sameRollout(now.state.lease, target.who) || now.state.handoff !== undefined) return;
  await release(deps.kube, target.cluster, now);
}

/** How much later than RequeueAfter the controller calls Run again (measured by npm run bench, dead time). */
const controllerRequeueLagMs = 5_000;

export async function drainReads(
  deps: ZoneDeps,
  target: ZoneTarget,
  previous?: unknown,
): Promise<StepResult> {
  const { kube } = deps;
  const opened = await openZoneAction(kube, target, 'drainReads');
  const { zone, name: clusterName, status, state } = opened;
  let cluster = opened.cluster;

  let tookOver = '';
  if (state.handoff !== undefined) {
    // A zone an older revision of this Rollout left in hand (superseded, promoted past) is this walk's to take
    // again; a rollback, another Rollout's work, or reads being put back right now are finished by the
    // reconciler first.
    const restoring = state.maintenance?.restoringSince !== undefined;
    if (state.handoff.rollback || !sameRollout(state.handoff.holder, target.who) || restoring) {
      return waitForReconciler(
        deps,
        target,
        previous,
        state.handoff,
        `zone ${zone}: waiting for the vmzones reconciler to finish earlier work on ${clusterName} ${describeHandoff(state.handoff)}${restoring ? ' (it is putting reads back)' : ''}`,
        status,
      );
    }
    const taken = await takeLease(kube, target.cluster, cluster, {
      holder: target.who,
      zone,
      now: deps.now(),
      carry: readsCarry(target),
      takeBack: true,
    });
    if (taken.kind === 'lost') lostRace(zone, clusterName);
    cluster = taken.cluster;
    tookOver = ` (took the zone back from the vmzones reconciler: ${state.handoff.by})`;
  }
  const lease = cluster.state.lease;
  if (lease !== undefined && !sameRollout(lease, target.who)) {
    if (await holderExists(kube, lease)) {
      // Another live walk holds the zone: wait for it to let go (two Rollouts over shared zones both finish, one
      // after the other), bounded by readyTimeout, naming the holder.
      const since = waitingSince(previous, 'waitingForLease', deps.now());
      const refused = leasedByOther(target.cluster, zone, lease);
      if (!pastDeadline(since, target.readyTimeoutMs, deps.now())) {
        return running(
          `zone ${zone}: waiting for ${clusterName}: it is leased by ${describeHolder(lease)} since ${lease.since}; drains once that walk releases it (waiting since ${timestamp(since)}, at most readyTimeout ${target.spec.readyTimeout})`,
          { ...status, ...waitStatus('waitingForLease', since) },
        );
      }
      await emitZoneEvent(
        kube,
        deps.logger,
        {
          reason: 'ZoneLeaseRefused',
          action: 'DrainReads',
          note: refused,
          holder: target.who,
          zone,
          cluster: target.cluster,
          detail: lease.since,
        },
        deps.now(),
      );
      throw new StepFailure(
        'LeaseHeld',
        `${refused} (waited since ${timestamp(since)}, readyTimeout ${target.spec.readyTimeout})`,
      );
    }
    tookOver = ` (took over the lease of ${describeHolder(lease)}, which no longer exists)`;
  }

  const by = `drainReads by ${describeHolder(target.who)}`;
  const now = deps.now();
  const needsLease = !sameRevision(lease, target.who) || cluster.state.maintenance === undefined;
  const leaseTaken = needsLease && !sameRollout(lease, target.who);
  let outcome: Awaited<ReturnType<typeof drainReadsMove>>;
  try {
    outcome = await drainReadsMove(
      deps,
      {
        zone,
        ref: target.cluster,
        reads: target.reads,
        by,
        holder: target.who,
        graceMs: target.drainGraceMs,
        budget: target.budget,
        wave: target.wave,
        ...(target.drainQueryCheck === 'inFlight'
          ? {
              queries: {
                kube: await deps.clusters.client(target.zone.cluster),
                pods: zoneQueryPods(target.zone.kind.kind, target.zone.namespace, target.zone.vmcluster),
              },
            }
          : {}),
        mark: needsLease ? stepLeasePatch(target, zoneIdentity(cluster.object), now, by) : undefined,
      },
      cluster,
    );
  } catch (err) {
    // Taken out of one balancer and refused by the next (drainLayer put back what it took), or a write that lost
    // to another drain: a lease this call took for a drain that did not happen protects nothing, so it goes; a
    // retry takes it again once the budget admits the drain.
    const drainedSomewhere = drainedFrom(await readLayer(deps, target.reads), zone).length > 0;
    if (leaseTaken && !drainedSomewhere) await giveBack(deps, target);
    throw err;
  }
  if (outcome.layer !== undefined) status.balancer = outcome.layer.describe;
  if (needsLease && outcome.kind !== 'blocked' && outcome.kind !== 'failed') {
    deps.logger.info('zone leased', { zone, vmcluster: status.vmcluster, holder: target.who.rollout });
  }
  switch (outcome.kind) {
    case 'lost':
      return lostRace(zone, clusterName);
    case 'failed':
      throw new StepFailure(
        outcomeFailureCode(outcome),
        `${outcome.message} (${clusterName}), so there is nothing to drain; check the zone's vmselectHosts`,
      );
    case 'blocked': {
      if (outcome.code === 'LastServingZone')
        throw new StepFailure('LastServingZone', `refusing to drain zone ${zone}: ${outcome.message}`);
      // A lease left by an earlier try whose drain never happened (its write lost to another drain) protects
      // nothing while the budget refuses the drain: it goes, so that another walk is not kept waiting for it.
      // The layer as the move read it, unless it undid a part since (no extra read per waiting Run).
      const layer =
        outcome.undone === undefined && outcome.layer !== undefined
          ? outcome.layer
          : await readLayer(deps, target.reads);
      const stillOut = drainedFrom(layer, zone).map((b) => b.describe);
      const changedByUs = sameRevision(cluster.state.rollback, target.who);
      if (stillOut.length === 0 && !changedByUs && sameRollout(cluster.state.lease, target.who)) {
        await giveBack(deps, target);
      }
      const undone = outcome.undone === undefined ? '' : `; its drain from ${outcome.undone} was undone`;
      const since = waitingSince(previous, 'waitingForOtherZones', deps.now());
      if (pastDeadline(since, target.readyTimeoutMs, deps.now())) {
        throw new StepFailure(
          'DrainBudget',
          `zone ${zone}: not drained within readyTimeout ${target.spec.readyTimeout} (waiting since ${timestamp(since)}): ${outcome.message}${undone}. ${stillOut.length > 0 ? `It is still out of ${stillOut.join(', ')}; the rollout aborts and vmzones puts it back` : 'It serves reads as before'}`,
        );
      }
      return running(`zone ${zone}: not drained yet: ${outcome.message}${undone}`, {
        ...status,
        ...waitStatus('waitingForOtherZones', since),
      });
    }
    default:
      break;
  }
  status.drainedAt = timestamp(outcome.drainedAt ?? now);
  const what = `zone ${zone}: ${clusterName} was taken out of ${outcome.balancers} at ${status.drainedAt}${tookOver}`;
  if (outcome.kind === 'waiting' && outcome.code === 'vmauth') {
    const since = outcome.since ?? now;
    if (pastDeadline(since, target.readyTimeoutMs, deps.now())) {
      throw new StepFailure(
        'ReloadUnproven',
        `${what}; vmauth did not confirm serving that within readyTimeout ${target.spec.readyTimeout}: ${outcome.message}. The rollout aborts and vmzones puts the zone back`,
      );
    }
    return running(`${what}; waiting until every vmauth replica serves that: ${outcome.message}`, {
      ...status,
      ...stepState('waitingForVmauth'),
    });
  }
  const graceUntil = outcome.graceUntil ?? now;
  status.reloadedAt = timestamp(outcome.servedSince ?? now);
  status.graceUntil = timestamp(graceUntil);
  const current = deps.now();
  if (outcome.queries !== undefined) status.queries = outcome.queries;
  if (outcome.kind === 'waiting' && outcome.code === 'queries') {
    return running(
      `${what}; ${outcome.evidence}; ${outcome.message}; the drain ends once none are, at the latest when the grace period ${target.drainGracePeriod} ends at ${timestamp(graceUntil)}`,
      { ...status, ...stepState('queriesInFlight') },
      // Looked at again as soon as the controller allows (running() raises this to its minimum).
      0,
    );
  }
  if (outcome.kind === 'waiting') {
    const why = outcome.queries === undefined ? '' : ` (${outcome.queries})`;
    return running(
      `${what}; ${outcome.evidence}; grace period ${target.drainGracePeriod} for queries in flight until ${timestamp(graceUntil)}${why}`,
      { ...status, ...stepState('grace') },
      // The controller runs a Running step again about 5 s after RequeueAfter; ask that much earlier and let the
      // in-call wait sleep off the rest, so the step ends at the end of the grace rather than up to 5 s later.
      graceUntil.getTime() - current.getTime() - controllerRequeueLagMs,
    );
  }
  if (outcome.queriesDoneAt !== undefined) status.queriesDoneAt = timestamp(outcome.queriesDoneAt);
  const ended =
    outcome.queriesDoneAt !== undefined
      ? `${outcome.queries}, so the drain ends before the grace period ${target.drainGracePeriod} (upper bound, until ${timestamp(graceUntil)})`
      : `grace period ${target.drainGracePeriod} over${outcome.queries === undefined ? '' : ` (${outcome.queries})`}`;
  const message = `${what}; ${outcome.evidence}; ${ended}. ${clusterName} is leased by ${describeHolder(target.who)} and in maintenance`;
  await emitZoneEvent(
    kube,
    deps.logger,
    {
      reason: 'ZoneDrained',
      action: 'DrainReads',
      note: message,
      holder: target.who,
      zone,
      cluster: target.cluster,
      detail: status.drainedAt as string,
    },
    current,
  );
  return successful(message, { ...status, ...stepState('drained') });
}
