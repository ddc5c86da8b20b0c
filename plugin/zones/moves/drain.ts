// Drain reads: the one sequence that takes a zone out of reads, for the step's drainReads and for the
// reconciler's rollback alike — drain budget (never the last zone, never while another zone is unhealthy),
// maintenance mark, drain, evidence that every vmauth replica serves that, grace period for queries in flight.

import type { Clock } from '../../goplugin/index.ts';
import type { ClusterClients } from '../../kube/cluster-registry.ts';
import type { KubeObjects, ObjectRef } from '../../kube/objects.ts';
import type { ReadBalancerConfig } from '../../vm/read-backends.ts';
import {
  drainedFrom,
  drainLayer,
  drainRecordOf,
  lastZoneThrough,
  latestChange,
  layerDrainBlocker,
  layerEvidence,
  type ReadLayer,
  readLayer,
  routingTo,
} from '../../vm/read-layer.ts';
import { graceWindow } from '../../vm/read-safety.ts';
import type { ClusterPatch, LoadedCluster } from '../state/zone-object.ts';
import { waitInCall } from '../step/deps.ts';
import { maintenancePatch, maintenanceRecord } from './lease.ts';
import { blocked, done, failedMove, lost, type MoveOutcome, waiting } from './outcome.ts';
import { transition } from './transition.ts';

export interface MoveDeps extends Clock {
  /** The zone's objects, each in its own cluster (vm/cluster-routing.ts). */
  kube: KubeObjects;
  clusters: ClusterClients;
  /** How long to wait inside the call for quick evidence (the reconciler: 0, it looks again next pass). */
  inCallWaitMs?: number;
}

/** The zone a reads move acts on: its object, its balancers, and who acts, in words (for the records). */
export interface ZoneReads {
  zone: string;
  ref: ObjectRef;
  reads: readonly ReadBalancerConfig[];
  by: string;
}

export interface DrainRequest extends ZoneReads {
  graceMs: number;
  /** The guarded write that holds the zone before anything is drained (lease and/or maintenance mark), made
   *  only once the drain budget allows the drain; undefined when the zone is held already. */
  mark: ClusterPatch | undefined;
}

export interface DrainOutcome extends MoveOutcome {
  /** The balancers the zone was taken out of, in words. */
  balancers?: string;
  drainedAt?: Date;
  /** What proved that vmauth serves the drain, in words. */
  evidence?: string;
  servedSince?: Date;
  graceUntil?: Date;
  /** The layer as first read (for the step's give-back after a refused drain). */
  layer?: ReadLayer;
  /** The zone's object after this move's own write, to guard the next move on. */
  cluster?: LoadedCluster;
}

/** The routing a proof was made for: every balancer's last change, and whether the zone is routed anywhere. */
function routingKey(layer: ReadLayer, zone: string): string {
  return JSON.stringify([
    routingTo(layer, zone).map((b) => b.describe),
    layer.balancers.map((b) => b.routing.changedAt?.getTime() ?? null),
  ]);
}

export async function drainReadsMove(
  deps: MoveDeps,
  request: DrainRequest,
  cluster: LoadedCluster,
): Promise<DrainOutcome> {
  const { zone } = request;
  const layer = await readLayer(deps, request.reads);
  const routed = routingTo(layer, zone).length > 0;
  if (!routed && drainedFrom(layer, zone).length === 0) {
    return {
      ...failedMove(
        `${layer.describe} ${request.reads.length === 1 ? 'does' : 'do'} not route reads to zone ${zone}`,
        'notRouted',
      ),
      layer,
    };
  }
  if (routed) {
    const last = lastZoneThrough(layer, zone);
    if (last !== undefined) {
      return {
        ...blocked(`it is the last zone that serves reads through ${last.describe}`, 'lastZone'),
        layer,
      };
    }
    const blocker = await layerDrainBlocker(deps.clusters, layer, zone);
    if (blocker !== undefined) return { ...blocked(blocker, 'otherZones'), layer };
  }
  // A restore that was started and given up (its step failed, the walk was aborted) leaves its mark: a new drain
  // clears it, so that the next restore starts with its own guarded write again.
  const mark =
    request.mark ??
    (cluster.state.maintenance?.restoringSince === undefined
      ? undefined
      : maintenancePatch(maintenanceRecord(zone, deps.now(), request.by)));
  let held = cluster;
  if (mark !== undefined) {
    const marked = await transition(deps.kube, request.ref, cluster, mark);
    if (marked.kind === 'lost') return { ...lost(`zone ${zone} changed hands before it was marked`), layer };
    held = marked.cluster;
  }
  if (routed) await drainLayer(layer, zone, request.by, deps);

  const after = await readLayer(deps, request.reads);
  const changed = drainedFrom(after, zone);
  const drainedAt = new Date(drainRecordOf(after, zone)?.at ?? deps.now().toISOString());
  const since = latestChange(changed) ?? drainedAt;
  const balancers = changed.map((b) => b.describe).join(', ') || after.describe;
  const evidence = await waitInCall(
    { ...deps, inCallWaitMs: deps.inCallWaitMs ?? 0 },
    () => layerEvidence(changed, drainedAt),
    (e) => e.state !== 'waiting',
  );
  const base = { balancers, drainedAt, layer, cluster: held };
  if (evidence.state === 'waiting') return { ...waiting(evidence.message, 'vmauth', { since }), ...base };
  // Never report drained on a proof of another routing: had the zone been put back (or drained anew) while the
  // pods were read, the proof is of a routing that no longer holds (issue 21 item 2).
  const proven = await readLayer(deps, request.reads);
  if (routingKey(proven, zone) !== routingKey(after, zone) || routingTo(proven, zone).length > 0) {
    return {
      ...waiting(`the routing of zone ${zone} changed while vmauth was checked; checking again`, 'vmauth', {
        since,
      }),
      ...base,
    };
  }
  const { servedSince, graceUntil } = graceWindow(evidence, since, request.graceMs);
  const proof = { ...base, evidence: evidence.message, servedSince, graceUntil };
  let now = deps.now();
  const remainingMs = graceUntil.getTime() - now.getTime();
  if (remainingMs > 0 && remainingMs <= (deps.inCallWaitMs ?? 0)) {
    await deps.sleep(remainingMs);
    now = deps.now();
  }
  if (now < graceUntil)
    return { ...waiting(evidence.message, 'grace', { since, until: graceUntil }), ...proof };
  return { ...done(evidence.message), ...proof };
}
