// restoreReads: once the zone's VMCluster is operational at the applied generation, put back exactly what
// drainReads removed from the read balancer, wait until every vmauth replica serves it, then release the lease
// and the maintenance mark. Replay-safe: a zone that serves reads and holds no lease of ours is already restored.
// Bringing the zone back (zones/moves/bring-back.ts: operational, restore, release) is the reconciler's too; this
// maps its progress to a step result, with a deadline on every wait.

import type { StepResult } from '../../rollouts/types.ts';
import { drainedFrom, readLayer, routingTo } from '../../vm/read-layer.ts';
import { bringBack } from '../moves/bring-back.ts';
import { emitZoneEvent } from '../state/events.ts';
import { leasedByOther } from '../state/messages.ts';
import { describeHolder, sameRevision, sameRollout, timestamp } from '../state/zone-annotations.ts';
import type { ZoneDeps } from './deps.ts';
import { running, StepFailure, successful } from './outcome.ts';
import { lostRace } from './step-waits.ts';
import type { ZoneTarget } from './target.ts';
import { previousTime, stepState, stepWait } from './wait-deadline.ts';
import { handoffOpening, openZoneAction } from './zone-action.ts';

export async function restoreReads(
  deps: ZoneDeps,
  target: ZoneTarget,
  previous?: unknown,
): Promise<StepResult> {
  const { kube } = deps;
  const opened = await openZoneAction(kube, target, 'restoreReads');
  const { zone, name, status, cluster, state } = opened;
  const handoff = handoffOpening(deps, target, previous, opened, false);
  if (handoff !== undefined && 'wait' in handoff) return handoff.wait;
  if (!sameRevision(state.lease, target.who)) {
    const layer = await readLayer(deps, target.reads);
    const serving = routingTo(layer, zone);
    if (serving.length > 0 && drainedFrom(layer, zone).length === 0 && state.lease === undefined) {
      return successful(
        `zone ${zone}: ${name} serves reads through ${serving.map((b) => b.describe).join(', ')} and holds no lease; nothing left to restore`,
        { ...status, ...stepState('restored') },
      );
    }
    // A wave's restore runs each zone again while another still waits: a zone this step restored and released
    // already may since be leased by another walk (two Rollouts over shared zones, found on the sandbox by
    // test/e2e/zones/shared-zones.test.ts): done, not a conflict. Only a release this step made counts (its own
    // previous status), never a lease it does not hold.
    const before =
      typeof previous === 'object' && previous !== null ? (previous as Record<string, unknown>) : {};
    if (before.state === 'restored' && typeof before.releasedAt === 'string') {
      return successful(
        `zone ${zone}: ${name} was restored and released by this step at ${before.releasedAt}${state.lease === undefined ? '' : `; ${describeHolder(state.lease)} holds it since ${state.lease.since}`}`,
        { ...status, ...stepState('restored'), releasedAt: before.releasedAt },
      );
    }
    if (state.lease !== undefined && !sameRollout(state.lease, target.who)) {
      throw new StepFailure('LeaseHeld', leasedByOther(target.cluster, zone, state.lease));
    }
    throw new StepFailure(
      'NotDrained',
      `drainReads for zone ${zone} has not run for this revision: ${name} holds no lease of ${describeHolder(target.who)}`,
    );
  }

  const applied = sameRevision(state.rollback, target.who) ? state.rollback : undefined;
  status.generation = applied?.generation ?? cluster.generation;
  // The operator usually finishes within seconds of the first look: the move waits a little in the call.
  const failingSince = previousTime(previous, 'failingSince');
  const progress = await bringBack(
    deps,
    {
      zone,
      ref: target.cluster,
      reads: target.reads,
      by: `restoreReads by ${describeHolder(target.who)}`,
      ...(applied === undefined ? {} : { generation: applied.generation }),
      ...(failingSince === undefined ? {} : { failingSince }),
      releases: () => ({}),
    },
    cluster,
  );
  if ((progress.phase === 'waiting' || progress.phase === 'done') && progress.restored.length > 0) {
    deps.logger.info('zone put back into reads', { zone, balancer: progress.restored.join(', ') });
  }
  switch (progress.phase) {
    case 'lost':
      return lostRace(zone, name);
    case 'failed':
      if (progress.failedAt === 'operational') {
        throw new StepFailure(
          progress.code,
          `zone ${zone}: ${progress.message}. Its reads stay drained; the rollout aborts and vmzones rolls the zone back, restoring its reads once it is operational again`,
        );
      }
      throw new StepFailure(
        progress.code,
        `zone ${zone}: ${progress.message}${progress.code === 'RestoreUnrouted' ? '; check the balancers by hand' : ''}`,
      );
    case 'waiting': {
      if (progress.waitsOn === 'vmauth') {
        const since = progress.since ?? deps.now();
        if (progress.operational !== undefined) status.operational = progress.operational;
        status.restoredAt = timestamp(since);
        const what = `zone ${zone}: ${name} is operational and was put back into ${progress.serving} at ${timestamp(since)}`;
        // Past the deadline the zone serves reads again; its lease and maintenance mark stay, so that the reconciler
        // (after the abort) or a retry of this step finishes it once vmauth proves it.
        return stepWait(
          deps.now(),
          {
            since,
            timeoutMs: target.readyTimeoutMs,
            code: 'ReloadUnproven',
            late: `${what}; vmauth did not confirm serving that within readyTimeout ${target.spec.readyTimeout}: ${progress.message}`,
          },
          () =>
            running(`${what}; waiting until every vmauth replica serves that: ${progress.message}`, {
              ...status,
              ...stepState('waitingForVmauth'),
            }),
        );
      }
      const started = applied?.appliedAt ?? state.lease?.since ?? timestamp(deps.now());
      return stepWait(
        deps.now(),
        {
          since: new Date(started),
          timeoutMs: target.readyTimeoutMs,
          code: 'ReadyTimeout',
          late: `zone ${zone}: ${name} did not become operational within readyTimeout ${target.spec.readyTimeout} (since ${started}): ${progress.message}. Its reads stay drained`,
        },
        () =>
          running(
            `zone ${zone}: reads stay drained until ${name} is operational at generation ${status.generation}; ${progress.message} (since ${started}, readyTimeout ${target.spec.readyTimeout})`,
            {
              ...status,
              ...stepState('waitingForVMCluster'),
              since: started,
              // A failure the operator may still recover from: since when it has said so (vm/operator-failure.ts).
              ...(progress.failingSince === undefined
                ? {}
                : { failingSince: timestamp(progress.failingSince) }),
            },
          ),
      );
    }
    default:
      break;
  }
  status.operational = progress.operational;
  status.restoredAt = timestamp(progress.restoredAt);
  deps.logger.info('zone released', { zone, vmcluster: name });
  const message = `zone ${zone}: ${name} is operational at generation ${status.generation} and serves reads through ${progress.serving} again (${progress.evidence}); lease and maintenance released`;
  await emitZoneEvent(
    kube,
    deps.logger,
    {
      reason: 'ZoneRestored',
      action: 'RestoreReads',
      note: message,
      holder: target.who,
      zone,
      cluster: target.cluster,
      detail: String(status.generation),
    },
    deps.now(),
  );
  return successful(message, { ...status, ...stepState('restored'), releasedAt: timestamp(deps.now()) });
}
