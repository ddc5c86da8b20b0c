// Await operational: the zone's object is operational at (at least) the generation of the change with no storage
// pod's change deferred (the check the vmclusterReady gate takes, vm/zone-readiness.ts), and — where the
// reconciler brings a zone back after a rollback or an unfinished walk — every vmagent queue for it has delivered
// what piled up (the vmagentQueueDrained evidence, zones/moves/queue-check.ts).

import type { ObjectRef } from '../../kube/objects.ts';
import { operatorFailure } from '../../vm/operator-failure.ts';
import { defaultZoneKind, zoneKindOf } from '../../vm/zone-kinds.ts';
import { zoneReadiness } from '../../vm/zone-readiness.ts';
import type { Handoff } from '../state/zone-annotations.ts';
import { waitInCall } from './in-call-wait.ts';
import type { MoveDeps } from './move-deps.ts';
import { done, failedMove, type MoveOutcome, waiting } from './outcome.ts';
import type { ZoneQueueCheck } from './queue-check.ts';

/** done: operational; waiting: the operator is still at it, or says `failed` but may still recover (then `since`
 *  says since when it has said so: vm/operator-failure.ts); failed: the operator's failure is final. `failingSince`
 *  is the `since` of an earlier reading's failure, carried by the caller. */
export async function awaitOperational(
  deps: MoveDeps,
  ref: ObjectRef,
  generation?: number,
  failingSince?: Date,
): Promise<MoveOutcome> {
  const readiness = await waitInCall(
    { ...deps, inCallWaitMs: deps.inCallWaitMs ?? 0 },
    async () => {
      const zone = await deps.kube.get(ref);
      return {
        ...(await zoneReadiness(deps.kube, zone, generation)),
        resourceVersion: zone.metadata.resourceVersion,
      };
    },
    (r) => r.state !== 'progressing',
    // The zone's object is watched (the reconciler's caches): read it again when the operator wrote its status.
    (r) => deps.kube.changeOf?.(ref, r.resourceVersion),
  );
  if (readiness.state === 'failed') {
    const failure = operatorFailure(readiness.reason, failingSince?.getTime(), deps.now().getTime());
    const message = `${readiness.message}; ${failure.why}`;
    if (failure.final) return failedMove(message, 'ZoneFailed');
    return waiting(message, 'operational', { since: new Date(failure.failingSince) });
  }
  if (readiness.state !== 'ready') return waiting(readiness.message, 'operational');
  return done(readiness.message);
}

export interface QueueOutcome extends MoveOutcome {
  /** The check's rounds so far, to keep for the next reading. */
  state?: unknown;
}

/** One reading of the queue check for the zone the handoff names; done when there is nothing to check. */
export async function awaitQueueDrained(
  deps: MoveDeps & { queueCheck?: ZoneQueueCheck },
  ref: ObjectRef,
  handoff: Handoff,
): Promise<QueueOutcome> {
  if (deps.queueCheck === undefined || (handoff.vmagents?.length ?? 0) === 0)
    return done('no vmagent queue to check');
  const kind = zoneKindOf(ref.kind) ?? defaultZoneKind;
  const reading = await deps.queueCheck(
    {
      zone: deps.kube,
      vmagents: await deps.clusters.client(handoff.vmagentsCluster),
      vmagentsCluster: await deps.clusters.registration(handoff.vmagentsCluster),
    },
    {
      namespace: ref.namespace,
      vmcluster: ref.name,
      // Absent means VMCluster, as in the records handed over before zone kinds.
      ...(kind === defaultZoneKind ? {} : { kind: kind.kind }),
      vmagents: handoff.vmagents ?? [],
      ...(handoff.vminsertHosts === undefined ? {} : { vminsertHosts: handoff.vminsertHosts }),
    },
    handoff.queueState,
    deps.now().getTime(),
  );
  if (reading.verdict === 'pass') return done(reading.message);
  const outcome =
    reading.verdict === 'fail' ? failedMove(reading.message, 'DataLost') : waiting(reading.message, 'queues');
  return { ...outcome, state: reading.state };
}
