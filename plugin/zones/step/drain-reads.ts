// drainReads: take the zone's vmselect out of the read balancer and stay Running until every vmauth replica
// serves the routing without it, plus the grace period for queries in flight. Replay-safe: the balancer records
// what was removed, so a replayed Run finds the zone already out and only waits. The sequence itself, with every
// deadline, is the take-out move (zones/moves/take-out.ts), shared with the reconciler; this maps its one progress
// value to a step result, in one place.

import type { StepResult } from '../../rollouts/types.ts';
import { zoneQueryPods } from '../../vm/queries-in-flight.ts';
import { readsCarry, stepLeasePatch, takeLease } from '../moves/lease.ts';
import { type ServingZone, servingInCallMs } from '../moves/serving-zones.ts';
import { type TakeOutProgress, type TakeOutWait, takeOut } from '../moves/take-out.ts';
import { zoneWorkload, zoneWriters } from '../spec.ts';
import { emitZoneEvent } from '../state/events.ts';
import { describeCluster } from '../state/messages.ts';
import { describeHolder, sameRevision, timestamp, zoneIdentity } from '../state/zone-annotations.ts';
import type { ZoneDeps } from './deps.ts';
import { running, type StatusDocument, StepFailure, successful } from './outcome.ts';
import { lostRace } from './step-waits.ts';
import type { ZoneTarget } from './target.ts';
import { previousTime, type StepState, stepState, waitStatus } from './wait-deadline.ts';
import { handoffOpening, openZoneAction } from './zone-action.ts';

/** The step status state of each wait of the move (docs/step-plugin.md). */
const waitStates = {
  lease: 'waitingForLease',
  budget: 'waitingForOtherZones',
  serving: 'waitingForServingZones',
  vmauth: 'waitingForVmauth',
  queries: 'queriesInFlight',
  grace: 'grace',
} as const satisfies Record<TakeOutWait, StepState>;

/** The wait the previous Run's status records, and since when: the move goes on from it. */
function previousWait(previous: unknown): { waitsOn: TakeOutWait; since: Date } | undefined {
  const state =
    typeof previous === 'object' && previous !== null ? (previous as { state?: unknown }).state : undefined;
  const waitsOn = (Object.keys(waitStates) as TakeOutWait[]).find((w) => waitStates[w] === state);
  const since = previousTime(previous, 'waitingSince');
  return waitsOn === undefined || since === undefined ? undefined : { waitsOn, since };
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
  const { zone, name: clusterName, status } = opened;
  let cluster = opened.cluster;

  let tookBack = '';
  const handoff = handoffOpening(deps, target, previous, opened, true);
  if (handoff !== undefined && 'wait' in handoff) return handoff.wait;
  if (handoff !== undefined) {
    const taken = await takeLease(kube, target.cluster, cluster, {
      holder: target.who,
      zone,
      now: deps.now(),
      // The step moves next again: the intent stored in the lease (state/zone-intent.ts).
      intent: { wants: 'drained', nextMove: 'step' },
      carry: readsCarry(target),
      takeBack: true,
    });
    if (taken.kind === 'lost') lostRace(zone, clusterName);
    cluster = taken.cluster;
    tookBack = ` (took the zone back from the vmzones reconciler: ${handoff.takeBack.by})`;
  }

  const by = `drainReads by ${describeHolder(target.who)}`;
  const prior = previousWait(previous);
  const progress = await takeOut(
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
      hold: (found) =>
        sameRevision(found.state.lease, target.who) && found.state.maintenance !== undefined
          ? undefined
          : stepLeasePatch(target, zoneIdentity(found.object), deps.now(), by),
      ...(deps.serving === undefined
        ? {}
        : {
            serving: {
              zones: servingZonesOf(target),
              readings: deps.serving.readings,
              ...(deps.serving.queueCheck === undefined ? {} : { queueCheck: deps.serving.queueCheck }),
              inCallMs: servingInCallMs,
            },
          }),
      leaseOnlyWhileDrained: true,
      readyTimeout: { ms: target.readyTimeoutMs, text: target.spec.readyTimeout },
      ...(prior === undefined ? {} : { previous: prior }),
    },
    cluster,
  );
  return stepResultOf(deps, target, progress, status, tookBack);
}

/** The spec's zones as zones that may keep serving while this one is drained: each object and its writers. */
function servingZonesOf(target: ZoneTarget): ServingZone[] {
  return Object.entries(target.spec.zones).map(([zone, entry]) => {
    const { kind, name } = zoneWorkload(entry);
    const writers = zoneWriters(target.spec, kind);
    return {
      zone,
      cluster: entry.cluster,
      kind: kind.kind,
      namespace: target.zone.namespace,
      name,
      writers: writers.names,
      writersCluster: writers.cluster,
      ...(entry.vminsertHosts === undefined ? {} : { vminsertHosts: entry.vminsertHosts }),
    };
  });
}

/** The one mapping of the move's progress to a step result: waits Running (their state and since when in the
 *  status), a failure Failed with its code, a lost write decided again, done Successful with its event. */
async function stepResultOf(
  deps: ZoneDeps,
  target: ZoneTarget,
  progress: TakeOutProgress,
  status: StatusDocument,
  tookBack: string,
): Promise<StepResult> {
  const zone = target.config.zone;
  const name = describeCluster(target.cluster);
  if (progress.layer !== undefined) status.balancer = progress.layer;
  if (progress.held) {
    deps.logger.info('zone leased', { zone, vmcluster: status.vmcluster, holder: target.who.rollout });
  }
  if (progress.drainedAt !== undefined) status.drainedAt = timestamp(progress.drainedAt);
  if (progress.servedSince !== undefined) status.reloadedAt = timestamp(progress.servedSince);
  if (progress.graceUntil !== undefined) status.graceUntil = timestamp(progress.graceUntil);
  if (progress.queries !== undefined) status.queries = progress.queries;
  const drained = `${progress.drained ?? ''}${tookBack}`;
  switch (progress.phase) {
    case 'lost':
      return lostRace(zone, name);
    case 'failed':
      if (progress.code === 'LeaseHeld' && progress.heldBy !== undefined) {
        await emitZoneEvent(
          deps.kube,
          deps.logger,
          {
            reason: 'ZoneLeaseRefused',
            action: 'DrainReads',
            note: progress.message,
            holder: target.who,
            zone,
            cluster: target.cluster,
            detail: progress.heldBy.since,
          },
          deps.now(),
        );
      }
      throw new StepFailure(progress.code, progress.message);
    case 'waiting': {
      const waitState = waitStatus(waitStates[progress.waitsOn], progress.since);
      if (
        progress.waitsOn === 'lease' ||
        progress.waitsOn === 'budget' ||
        progress.waitsOn === 'serving' ||
        progress.waitsOn === 'vmauth'
      ) {
        return running(progress.message, { ...status, ...waitState });
      }
      const graceUntil = progress.until ?? deps.now();
      if (progress.waitsOn === 'queries') {
        return running(
          `${drained}; ${progress.evidence}; ${progress.message}; the drain ends once none are, at the latest when the grace period ${target.drainGracePeriod} ends at ${timestamp(graceUntil)}`,
          { ...status, ...waitState },
          // Looked at again as soon as the controller allows (running() raises this to its minimum).
          0,
        );
      }
      const why = progress.queries === undefined ? '' : ` (${progress.queries})`;
      return running(
        `${drained}; ${progress.evidence}; grace period ${target.drainGracePeriod} for queries in flight until ${timestamp(graceUntil)}${why}`,
        { ...status, ...waitState },
        // The controller runs a Running step again about 5 s after RequeueAfter; ask that much earlier and let the
        // in-call wait sleep off the rest, so the step ends at the end of the grace rather than up to 5 s later.
        graceUntil.getTime() - deps.now().getTime() - controllerRequeueLagMs,
      );
    }
    default:
      break;
  }
  if (progress.queriesDoneAt !== undefined) status.queriesDoneAt = timestamp(progress.queriesDoneAt);
  const graceUntil = timestamp(progress.graceUntil ?? deps.now());
  const ended =
    progress.queriesDoneAt !== undefined
      ? `${progress.queries}, so the drain ends before the grace period ${target.drainGracePeriod} (upper bound, until ${graceUntil})`
      : `grace period ${target.drainGracePeriod} over${progress.queries === undefined ? '' : ` (${progress.queries})`}`;
  const message = `${drained}; ${progress.evidence}; ${ended}. ${name} is leased by ${describeHolder(target.who)} and in maintenance`;
  await emitZoneEvent(
    deps.kube,
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
    deps.now(),
  );
  return successful(message, { ...status, ...stepState('drained') });
}
