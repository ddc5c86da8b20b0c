// Drain reads: the one sequence that takes a zone out of reads, for the step's drainReads and for the
// reconciler's rollback alike — drain budget (never the last zone, never while another zone is unhealthy), the
// zones that keep serving current (the step's: serving-zones.ts), maintenance mark, drain, evidence that every
// vmauth replica serves that, grace period for queries in flight.

import type { KubeObjects, ObjectRef } from '../../kube/objects.ts';
import { type QueriesInFlight, type QueryPods, readQueriesInFlight } from '../../vm/queries-in-flight.ts';
import type { ReadBalancerConfig } from '../../vm/read-backends.ts';
import {
  type BalancerState,
  drainedFrom,
  drainLayer,
  drainRecordOf,
  evidenceCheck,
  lastZoneThrough,
  latestChange,
  layerDrainBlocker,
  type ReadLayer,
  readLayer,
  restoreLayer,
  routingTo,
} from '../../vm/read-layer.ts';
import { type DrainActor, drainKeyOf, drainRecordFor } from '../../vm/read-routing.ts';
import { type DisruptionBudget, defaultDisruptionBudget, graceWindow } from '../../vm/read-safety.ts';
import { vmauthPodsOfBalancer } from '../../vm/vmauth-pods.ts';
import { readVmauthRequests, vmauthRequestsMetric } from '../../vm/vmauth-requests.ts';
import { type RolloutIdentity, sameRollout } from '../state/zone-annotations.ts';
import type { ClusterPatch, LoadedCluster } from '../state/zone-object.ts';
import { guardedWrite } from './conflict.ts';
import { waitInCall } from './in-call-wait.ts';
import { maintenancePatch, maintenanceRecord } from './lease.ts';
import type { MoveDeps } from './move-deps.ts';
import { blocked, done, failedMove, lost, type MoveOutcome, waiting } from './outcome.ts';
import { type ServingCheck, servingZonesBehind } from './serving-zones.ts';
import { transition } from './transition.ts';

/** The zone a reads move acts on: its object, its balancers, and who acts, in words (for the records). */
export interface ZoneReads {
  zone: string;
  ref: ObjectRef;
  reads: readonly ReadBalancerConfig[];
  by: string;
}

export interface DrainRequest extends ZoneReads {
  /** Whose lease the drain is made under (the step's Rollout, or the holder the reconciler acts for): recorded in
   *  each balancer's drain record with the zone object's uid. */
  holder: RolloutIdentity;
  /** The grace period for queries in flight: the whole wait, or its upper bound when `queries` is given. */
  graceMs: number;
  /** The zone disruption budget (vm/read-safety.ts); default one zone out per balancer, never the last serving. */
  budget?: DisruptionBudget;
  /** Every zone of the step's wave, admitted by the budget whole (vm/read-safety.ts drainBlocker); default the
   *  zone alone. The reconciler's rollbacks drain one zone each, not a wave: they hold no part of a wave while
   *  waiting for the rest, so they keep the one-zone check. */
  wave?: readonly string[];
  /** The zone's query pods, read once vmauth serves the drain: the drain ends as soon as they show no query in
   *  flight (vm/queries-in-flight.ts). Absent: the whole grace period is waited. */
  queries?: ZoneQueries;
  /** The zones that keep serving, checked once the budget admits the drain: their writers' queues drained and
   *  their storage writable (serving-zones.ts). Absent (the reconciler's rollbacks): operational is enough. */
  serving?: ServingCheck;
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
  /** What the zone's query pods showed, in words, when they were read. */
  queries?: string;
  /** When the drain ended on the zone's own reading, before graceUntil. */
  queriesDoneAt?: Date;
  /** The layer as first read (for the step's give-back after a refused drain). */
  layer?: ReadLayer;
  /** A drain blocked part-way through the balancers put back what it had taken: those balancers, in words. */
  undone?: string;
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

/** Whether the drain may be written on `layer`: undefined when admitted, else the outcome that refuses it (not
 *  routed, the last zone, the budget), a refused drain having put back what this holder had taken. */
async function admission(
  deps: MoveDeps,
  request: DrainRequest,
  cluster: LoadedCluster,
  layer: ReadLayer,
): Promise<DrainOutcome | undefined> {
  const { zone } = request;
  const routed = routingTo(layer, zone).length > 0;
  if (!routed && drainedFrom(layer, zone).length === 0) {
    return {
      ...failedMove(
        `${layer.describe} ${request.reads.length === 1 ? 'does' : 'do'} not route reads to zone ${zone}`,
        'NotRouted',
      ),
      layer,
    };
  }
  if (!routed) return undefined;
  const last = lastZoneThrough(layer, zone);
  // The last one only while others are out (another walk's drain through that balancer): a wait for them (the
  // budget below says so), not a refusal — the other walk puts its zone back (found by the model test,
  // test/unit/zones/zone-model.test.ts).
  const othersOut =
    last !== undefined &&
    Object.keys(last.routing.drained).some((key) => key !== drainKeyOf(last.config, zone));
  if (last !== undefined && !othersOut) {
    return {
      ...blocked(`it is the last zone that serves reads through ${last.describe}`, 'LastServingZone'),
      layer,
    };
  }
  const overBudget = await layerDrainBlocker(deps.clusters, layer, zone, request.budget, request.wave);
  // Only a drain the budget admits asks whether the zones that keep serving are current (their pods are read).
  const behind =
    overBudget === undefined && request.serving !== undefined
      ? await servingZonesBehind(deps, request.serving, layer, zone, request.wave)
      : undefined;
  const blocker = overBudget ?? behind;
  if (blocker === undefined) return undefined;
  // Out of some balancers already (a drain cut short by a crash, or refused part-way) but not admitted for the
  // rest: put back what this holder took, so that no zone stays half drained while its walk waits. Never once
  // the holder changed the zone (a balancer re-synced after apply): its reads come back by restoreReads only.
  const changed = cluster.state.rollback !== undefined && sameRollout(cluster.state.rollback, request.holder);
  const ours = changed
    ? []
    : drainedFrom(layer, zone).filter(
        (b) => drainRecordFor(b.routing, b.config, zone)?.holder?.uid === request.holder.uid,
      );
  const uid = cluster.object.metadata.uid;
  const undone = (await restoreLayer({ ...layer, balancers: ours }, zone, deps, uid)).map((b) => b.describe);
  return {
    ...blocked(blocker, overBudget === undefined ? 'ServingZoneBehind' : 'DrainBudget'),
    layer,
    ...(undone.length === 0 ? {} : { undone: undone.join(', ') }),
  };
}

export async function drainReadsMove(
  deps: MoveDeps,
  request: DrainRequest,
  cluster: LoadedCluster,
): Promise<DrainOutcome> {
  const { zone } = request;
  let layer = await readLayer(deps, request.reads);
  const refused = await admission(deps, request, cluster, layer);
  if (refused !== undefined) return refused;
  const routed = routingTo(layer, zone).length > 0;
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
  // Written only on the reading the budget was checked on. A balancer written since is a 409, whose meaning is
  // decided in one place (moves/conflict.ts): the zone changed hands (lost), or the drain is admitted again on a
  // fresh reading and written on it.
  if (routed) {
    const drained = await guardedWrite(deps.kube, request.ref, held, async (current, attempt) => {
      if (attempt > 0) {
        layer = await readLayer(deps, request.reads);
        const again = await admission(deps, request, current, layer);
        // Refused on the fresh reading: the zone as it is now (held by this move's own mark) goes with it.
        if (again !== undefined) return { ...again, cluster: current };
      }
      held = current;
      await drainLayer(layer, zone, drainActor(request, current), deps);
      return undefined;
    });
    if (drained.kind === 'lost') {
      return { ...lost(`zone ${zone} changed hands while it was taken out of reads`), layer };
    }
    if (drained.value !== undefined) return drained.value;
  }

  // Read again only after a write: a replayed Run that finds the zone out already wrote nothing since `layer`.
  const after = routed ? await readLayer(deps, request.reads) : layer;
  const changed = drainedFrom(after, zone);
  const drainedAt = new Date(drainRecordOf(after, zone)?.at ?? deps.now().toISOString());
  const since = latestChange(changed) ?? drainedAt;
  const balancers = changed.map((b) => b.describe).join(', ') || after.describe;
  const evidence = await waitInCall(
    { ...deps, inCallWaitMs: deps.inCallWaitMs ?? 0 },
    evidenceCheck(changed, drainedAt),
    (e) => e.state !== 'waiting',
    (e) => e.nextChange?.(),
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
  let queries: string | undefined;
  if (request.queries !== undefined && now < graceUntil) {
    // First vmauth's own requests, then the zone's: a request vmauth accepted before its reload may still retry on
    // the zone (docs/step-plugin.md, "When the drain ends"), so the zone's readings count only after vmauth's.
    const old =
      evidence.state === 'ready'
        ? await watchOldRequests(deps, changed, graceUntil)
        : unprovenReload(evidence.message);
    const watched = old.state === 'idle' ? await watchQueries(deps, request.queries, graceUntil) : old;
    now = deps.now();
    queries = old.state === 'idle' ? `${old.message}; then ${watched.message}` : watched.message;
    if (watched.state === 'idle') return { ...done(evidence.message), ...proof, queries, queriesDoneAt: now };
    if (watched.state === 'busy' && now < graceUntil) {
      return { ...waiting(watched.message, 'queries', { since, until: graceUntil }), ...proof, queries };
    }
  }
  const remainingMs = graceUntil.getTime() - now.getTime();
  if (remainingMs > 0 && remainingMs <= (deps.inCallWaitMs ?? 0)) {
    await deps.sleep(remainingMs);
    now = deps.now();
  }
  const noted = queries === undefined ? proof : { ...proof, queries };
  if (now < graceUntil)
    return { ...waiting(evidence.message, 'grace', { since, until: graceUntil }), ...noted };
  return { ...done(evidence.message), ...noted };
}

/** What the drain records name: the words, the zone object's uid, the lease holder, the budget. */
function drainActor(request: DrainRequest, cluster: LoadedCluster): DrainActor {
  return {
    by: request.by,
    uid: cluster.object.metadata.uid,
    holder: { rollout: request.holder.rollout, uid: request.holder.uid },
    budget: request.budget ?? defaultDisruptionBudget,
  };
}

/** The zone's query pods and the client of the cluster they run in. */
export interface ZoneQueries {
  kube: KubeObjects;
  pods: QueryPods;
}

/** How often vmauth's pods are read while some still execute requests (each needs one reading of 0). */
export const vmauthReadingSpacingMs = 250;

type Watched = { state: QueriesInFlight['state']; message: string };

function unprovenReload(message: string): Watched {
  return {
    state: 'unknown',
    message: `no proof that vmauth loaded the drain (${message}), so its requests in flight prove nothing and the whole grace period is waited`,
  };
}

/**
 * Reads every vmauth pod of the changed balancers, after each proved it serves the drain, until each has shown no
 * request executing in two readings at least 0.5 s apart (idle: no request it accepted under the config before the
 * drain is left to retry on the zone; vm/vmauth-requests.ts says why that reading is the one; the second closes the
 * instant between a request's arrival and its taking a slot), or the in-call wait or the grace period is over
 * (busy), or a pod gives no figure (unknown: the caller waits the whole grace period, and says why). A busy reading
 * between the two does not start again: it counts requests that took their slot, and one of the old config that
 * did is either counted later or done.
 */
async function watchOldRequests(
  deps: MoveDeps,
  balancers: readonly BalancerState[],
  graceUntil: Date,
): Promise<Watched> {
  const until = Math.min(deps.now().getTime() + (deps.inCallWaitMs ?? 0), graceUntil.getTime());
  const groups = await Promise.all(
    balancers.map(async (b) => ({ kube: b.kube, pods: await vmauthPodsOfBalancer(b.kube, b.config) })),
  );
  // Per pod, its first and latest reading of 0.
  const idleAt = new Map<string, [Date, Date]>();
  for (;;) {
    const readings = await Promise.all(groups.map((g) => readVmauthRequests(g.kube, g.pods)));
    const at = deps.now();
    const unknown = readings.filter((r) => r.state === 'unknown');
    if (unknown.length > 0) {
      return {
        state: 'unknown',
        message: `no reading of vmauth's requests in flight (${unknown.map((r) => r.message).join('; ')}), so the whole grace period is waited`,
      };
    }
    const pods = readings.flatMap((r, i) => r.pods.map((p) => ({ ...p, key: `${i} ${p.pod}` })));
    for (const p of pods) if (p.inFlight === 0) idleAt.set(p.key, [idleAt.get(p.key)?.[0] ?? at, at]);
    const busy = pods.filter((p) => {
      const [first, last] = idleAt.get(p.key) ?? [];
      return (
        first === undefined || last === undefined || last.getTime() - first.getTime() < idleReadingSpacingMs
      );
    });
    if (busy.length === 0) {
      return {
        state: 'idle',
        message: `no request left in vmauth from before the drain: each of the ${pods.length} vmauth pod${pods.length === 1 ? '' : 's'} showed none in flight (${vmauthRequestsMetric} 0) in 2 readings ${idleReadingSpacingMs / 1000} s apart after its reload`,
      };
    }
    if (at.getTime() + vmauthReadingSpacingMs > until) {
      return {
        state: 'busy',
        message: `vmauth still executes requests, any of which may have been accepted before the drain and may retry on the zone: ${busy.map((p) => `${p.pod}: ${p.inFlight}`).join(', ')} (${vmauthRequestsMetric})`,
      };
    }
    await deps.sleep(vmauthReadingSpacingMs);
  }
}

/** Readings of the query pods that end the drain: this many in a row, each showing none in flight. */
export const idleReadingsNeeded = 2;
/** At least this far apart: a request vmauth forwarded just before its reload is counted by the pod only once it
 *  holds a query slot (after its headers arrived, milliseconds later inside a cluster); a second reading half a
 *  second later sees it (docs/step-plugin.md, "When the drain ends"). */
export const idleReadingSpacingMs = 500;

/**
 * Reads the zone's query pods inside the call until two readings in a row, 0.5 s apart, show none in flight (idle),
 * or the in-call wait or the grace period is over (busy: some were in flight at the last reading), or a pod gives
 * no figure (unknown: the caller waits the whole grace period, and says why).
 */
async function watchQueries(deps: MoveDeps, queries: ZoneQueries, graceUntil: Date): Promise<Watched> {
  const until = Math.min(deps.now().getTime() + (deps.inCallWaitMs ?? 0), graceUntil.getTime());
  const idleAt: Date[] = [];
  for (;;) {
    const reading = await readQueriesInFlight(queries.kube, queries.pods);
    const at = deps.now();
    if (reading.state === 'unknown') {
      return {
        state: 'unknown',
        message: `no reading of the queries in flight (${reading.message}), so the whole grace period is waited`,
      };
    }
    if (reading.state === 'busy') idleAt.length = 0;
    else idleAt.push(at);
    const first = idleAt[0];
    if (
      first !== undefined &&
      idleAt.length >= idleReadingsNeeded &&
      at.getTime() - first.getTime() >= idleReadingSpacingMs * (idleReadingsNeeded - 1)
    ) {
      return {
        state: 'idle',
        message: `${reading.message} in ${idleAt.length} readings from ${first.toISOString()} to ${at.toISOString()}`,
      };
    }
    if (at.getTime() + idleReadingSpacingMs > until) {
      return reading.state === 'busy'
        ? { state: 'busy', message: `queries still in flight: ${reading.message}` }
        : {
            state: 'busy',
            message: `${reading.message} in ${idleAt.length} reading (${idleReadingsNeeded} needed, ${idleReadingSpacingMs / 1000} s apart)`,
          };
    }
    await deps.sleep(idleReadingSpacingMs);
  }
}
