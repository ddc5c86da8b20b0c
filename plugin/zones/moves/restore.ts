// Restore reads: put back exactly what the drain removed from each balancer, then wait until every vmauth replica
// serves the zone again. The first act is a guarded write on the VMCluster (maintenance.restoringSince), made on
// the object the caller decided on: a takeover by a step that lands between that decision and the restore makes
// this write lose with 409, so the balancer is never touched for a zone that changed hands (issue 21 item 2).

import { evidenceCheck, latestChange, readLayer, restoreLayer, routingTo } from '../../vm/read-layer.ts';
import { DrainRecordMismatchError, describeRecordObject } from '../../vm/read-routing.ts';
import { timestamp } from '../state/zone-annotations.ts';
import type { LoadedCluster } from '../state/zone-object.ts';
import { guardedWrite } from './conflict.ts';
import type { ZoneReads } from './drain.ts';
import { waitInCall } from './in-call-wait.ts';
import { maintenancePatch, maintenanceRecord, wantsPatch } from './lease.ts';
import type { MoveDeps } from './move-deps.ts';
import { done, failedMove, lost, type MoveOutcome, waiting } from './outcome.ts';
import { transition } from './transition.ts';

/** `by` is also the maintenance reason, should the zone carry no maintenance mark. */
export type RestoreRequest = ZoneReads;

export interface RestoreOutcome extends MoveOutcome {
  /** The balancers written by this call. */
  restored?: string[];
  /** The balancers that route reads to the zone, in words. */
  serving?: string;
  /** The layer as read after the restore, in words. */
  balancers?: string;
  evidence?: string;
  /** The zone's object after this move's own write, to guard the release on. */
  cluster?: LoadedCluster;
}

export async function restoreReadsMove(
  deps: MoveDeps,
  request: RestoreRequest,
  cluster: LoadedCluster,
): Promise<RestoreOutcome> {
  const { zone } = request;
  const { maintenance, lease } = cluster.state;
  let held = cluster;
  if (maintenance?.restoringSince === undefined) {
    const now = deps.now();
    const mark = maintenancePatch({
      ...(maintenance ?? maintenanceRecord(zone, now, request.by)),
      restoringSince: timestamp(now),
    });
    // The intent in the same write (state/zone-intent.ts): the holder wants the zone back in reads.
    const marked = await transition(deps.kube, request.ref, cluster, {
      ...mark,
      annotations: { ...mark.annotations, ...wantsPatch(cluster.state, 'restored') },
    });
    if (marked.kind === 'lost') return lost(`zone ${zone} changed hands before its reads were put back`);
    held = marked.cluster;
  }
  let layer = await readLayer(deps, request.reads);
  let restored: string[];
  try {
    // A balancer written meanwhile is a 409, whose meaning is decided in one place (moves/conflict.ts): the zone
    // changed hands (lost: nothing more is put back), or the restore goes on from a fresh reading.
    const written = await guardedWrite(deps.kube, request.ref, held, async (current, attempt) => {
      if (attempt > 0) layer = await readLayer(deps, request.reads);
      return restoreLayer(layer, zone, deps, current.object.metadata.uid);
    });
    if (written.kind === 'lost') return lost(`zone ${zone} changed hands while its reads were put back`);
    restored = written.value.map((b) => b.describe);
  } catch (err) {
    // A record of another object of this name: refused, never restored for this one (a zone is its object).
    if (err instanceof DrainRecordMismatchError)
      return { ...failedMove(err.message, 'RecordRefused'), cluster: held };
    throw err;
  }
  // Read again only after a write: a replayed Run that finds the zone back already wrote nothing since `layer`.
  const after = restored.length > 0 ? await readLayer(deps, request.reads) : layer;
  const routed = routingTo(after, zone);
  if (routed.length === 0) {
    // A record of this zone's name for another object is never restored for this one (a zone is its object).
    const others = after.balancers.flatMap((b) =>
      Object.values(b.routing.drained)
        .filter((r) => r.zone === zone)
        .map((r) => `${b.describe} holds the drain record of ${describeRecordObject(r)}, not of this object`),
    );
    return {
      ...failedMove(
        `what the drain removed is back in ${after.describe}, yet no balancer routes reads to zone ${zone}${others.length === 0 ? '' : ` (${others.join('; ')})`}`,
        'RestoreUnrouted',
      ),
      restored,
      balancers: after.describe,
      cluster: held,
    };
  }
  const leasedSince = new Date(lease?.since ?? 0);
  // The balancers changed during this lease must prove they serve the zone again; one whose routing was last
  // changed before the lease never stopped serving it.
  const changed = routed.filter((b) => (b.routing.changedAt?.getTime() ?? -1) >= leasedSince.getTime());
  const since = latestChange(changed) ?? leasedSince;
  const serving = routed.map((b) => b.describe).join(', ');
  const evidence = await waitInCall(
    { ...deps, inCallWaitMs: deps.inCallWaitMs ?? 0 },
    evidenceCheck(changed, leasedSince),
    (e) => e.state !== 'waiting',
    (e) => e.nextChange?.(),
  );
  const base = { restored, serving, balancers: after.describe, cluster: held };
  if (evidence.state === 'waiting') return { ...waiting(evidence.message, 'vmauth', { since }), ...base };
  return { ...done(evidence.message, { since }), ...base, evidence: evidence.message };
}
