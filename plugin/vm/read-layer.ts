// A zone's reads may go through several balancers (e.g. a vmauth in each cluster, each balancing over every zone,
// docs/multicluster.md). A zone is out of reads only when no balancer routes to it, and back only when each one
// that had it routes to it again. This reads and changes the balancers together, each through the API server of
// the cluster it runs in, so that drainReads, restoreReads, applyChange and the reconciler treat one balancer and
// several alike.

import type { Clock } from '../goplugin/index.ts';
import type { ClusterClients } from '../kube/cluster-registry.ts';
import { firstChange, type KubeObject, type KubeObjects } from '../kube/objects.ts';
import { processSharedReads } from '../kube/shared-reads.ts';
import { clusterClientFor } from './cluster-routing.ts';
import { balancerKey, describeBalancer, type ReadBalancerConfig } from './read-backends.ts';
import { type ReadEvidence, readEvidence } from './read-evidence.ts';
import {
  type DrainActor,
  type DrainRecord,
  drainRecordFor,
  drainZone,
  type ReadRouting,
  readBalancer,
  restoreZone,
} from './read-routing.ts';
import { type BudgetReads, type DisruptionBudget, drainBlocker } from './read-safety.ts';

export interface BalancerState {
  config: ReadBalancerConfig;
  /** The client of the cluster the balancer runs in. */
  kube: KubeObjects;
  routing: ReadRouting;
  /** The balancer's object as read for `routing`. */
  object?: KubeObject;
  /** "VMUser vm/vmauth-read", with " in cluster <name>" for a balancer in a registered cluster. */
  describe: string;
}

export interface ReadLayer {
  balancers: BalancerState[];
  /** Every balancer, in words. */
  describe: string;
}

/** Where the balancers are reached: `kube` for one in the controller's own cluster, `clusters` for the others. */
export interface ReadLayerClients {
  kube: KubeObjects;
  clusters: Pick<ClusterClients, 'client' | 'registration'>;
}

/** "VMUser vm/vmauth-read", with " in cluster <name>" for a balancer in a registered cluster. */
export function describeBalancerConfig(config: ReadBalancerConfig): string {
  return `${describeBalancer(config.ref)}${config.cluster === undefined ? '' : ` in cluster ${config.cluster}`}`;
}

function joinWords(items: readonly string[]): string {
  return items.length <= 1 ? (items[0] ?? '') : `${items.slice(0, -1).join(', ')} and ${items.at(-1)}`;
}

/** Reads every balancer's routing now; a missing balancer object is a KubeError `notFound`, as for one. */
export async function readLayer(
  clients: ReadLayerClients,
  configs: readonly ReadBalancerConfig[],
): Promise<ReadLayer> {
  const balancers = await Promise.all(
    configs.map(async (config): Promise<BalancerState> => {
      const kube =
        config.cluster === undefined
          ? clients.kube
          : await clusterClientFor(
              clients.clusters,
              config.cluster,
              config.ref.namespace,
              'the read balancer (vmauth)',
            );
      const { object, routing } = await readBalancer(kube, config);
      return { config, kube, routing, object, describe: describeBalancerConfig(config) };
    }),
  );
  return { balancers, describe: joinWords(balancers.map((b) => b.describe)) };
}

/** The balancers that route reads to `zone` now. */
export function routingTo(layer: ReadLayer, zone: string): BalancerState[] {
  return layer.balancers.filter((b) => b.routing.routed.includes(zone));
}

/** The balancers that hold vmzones' record of having taken the object `zone` names out (records are keyed by
 *  the zone's object, not its name: read-routing.ts drainRecordFor). */
export function drainedFrom(layer: ReadLayer, zone: string): BalancerState[] {
  return layer.balancers.filter((b) => drainRecordFor(b.routing, b.config, zone) !== undefined);
}

/**
 * The zones that serve reads: some balancer routes to each and none holds vmzones' record of taking it out (a
 * drain part-way through the balancers counts as drained).
 */
export function servingZones(layer: ReadLayer): string[] {
  const routed = new Set(layer.balancers.flatMap((b) => b.routing.routed));
  return [...routed].filter((zone) => drainedFrom(layer, zone).length === 0);
}

/** The first drain record of `zone` (when it was taken out), if any balancer has one. */
export function drainRecordOf(layer: ReadLayer, zone: string): DrainRecord | undefined {
  const first = drainedFrom(layer, zone)[0];
  return first === undefined ? undefined : drainRecordFor(first.routing, first.config, zone);
}

/** The balancers in one order every drain takes them in (by the balancer object's identity), so that two drains
 *  over the same balancers meet first on the same one: one of them wins it, the other has written nothing. */
export function canonicalOrder(balancers: readonly BalancerState[]): BalancerState[] {
  return [...balancers].sort((a, b) => (balancerKey(a.config) < balancerKey(b.config) ? -1 : 1));
}

/** A balancer through which `zone` is the only zone serving reads: draining it there would leave none. */
export function lastZoneThrough(layer: ReadLayer, zone: string): BalancerState | undefined {
  return routingTo(layer, zone).find((b) => b.routing.routed.length === 1);
}

/** Why `zone` must not leave reads now (read-safety.ts, in each balancer that routes to it), or undefined; `wave`:
 *  every zone of the step's wave, admitted whole (default: the zone alone). */
export async function layerDrainBlocker(
  clusters: BudgetReads,
  layer: ReadLayer,
  zone: string,
  budget?: DisruptionBudget,
  wave?: readonly string[],
): Promise<string | undefined> {
  for (const b of routingTo(layer, zone)) {
    const blocker = await drainBlocker(
      clusters,
      b.config,
      { ...b.routing, describe: b.describe },
      zone,
      budget,
      wave,
    );
    if (blocker !== undefined) return blocker;
  }
  return undefined;
}

/**
 * Takes `zone` out of every balancer that routes to it, in the canonical order (canonicalOrder); returns the
 * balancers written.
 *
 * Each write is guarded by the resourceVersion of `layer`, the reading the disruption budget was checked on
 * (layerDrainBlocker): had another Rollout or the reconciler drained a zone through that balancer since, the write
 * is refused as a conflict (KubeError `conflict`) and the caller reads and checks again — the step's transient
 * retry runs the drain anew, the reconciler's next pass does. Two Rollouts checking at once therefore cannot both
 * be admitted on the same reading. A drain refused part-way (a later balancer changed since the check) puts back
 * what it took from the earlier ones before it throws, so that no zone stays half drained while its walk waits:
 * with the canonical order two drains over the same balancers cannot each hold one and wait for the other.
 */
export async function drainLayer(
  layer: ReadLayer,
  zone: string,
  actor: string | DrainActor,
  clock: Clock,
): Promise<BalancerState[]> {
  const written: BalancerState[] = [];
  try {
    for (const b of canonicalOrder(routingTo(layer, zone))) {
      if (await drainZone(b.kube, b.config, zone, actor, clock, b.routing.resourceVersion)) written.push(b);
    }
  } catch (err) {
    const uid = typeof actor === 'string' ? undefined : actor.uid;
    // Best effort: what cannot be put back now is put back by the next drain's look (zones/moves/drain.ts).
    for (const b of written.reverse()) {
      await restoreZone(b.kube, b.config, zone, clock, uid).catch(() => false);
    }
    throw err;
  }
  return written;
}

/** The last write queued on each balancer of this process (balancerKey), so that the next one starts after it. */
const balancerWrites = new Map<string, Promise<unknown>>();

/**
 * Runs `write` (a read of the balancer and a write guarded by it) once the writes queued before it on the same
 * balancer in this process are over: the zones of a wave restored at once (step/wave.ts) each read the balancer
 * the previous one wrote, instead of meeting on one resourceVersion and all but one getting a 409.
 */
async function oneWriteAtATime<T>(config: ReadBalancerConfig, write: () => Promise<T>): Promise<T> {
  const key = balancerKey(config);
  const before = balancerWrites.get(key) ?? Promise.resolve();
  const mine = before.catch(() => undefined).then(write);
  const settled = mine.catch(() => undefined);
  balancerWrites.set(key, settled);
  void settled.then(() => {
    if (balancerWrites.get(key) === settled) balancerWrites.delete(key);
  });
  return mine;
}

/** Puts `zone` back into every balancer that recorded taking its object (`uid`: read-routing.ts restoreZone) out. */
export async function restoreLayer(
  layer: ReadLayer,
  zone: string,
  clock: Clock,
  uid?: string,
): Promise<BalancerState[]> {
  const written: BalancerState[] = [];
  for (const b of drainedFrom(layer, zone)) {
    if (await oneWriteAtATime(b.config, () => restoreZone(b.kube, b.config, zone, clock, uid)))
      written.push(b);
  }
  return written;
}

/**
 * Whether every vmauth replica of each given balancer serves its latest routing change (`fallback` where a
 * balancer records no change time). Waiting while any one waits; `reloadedAt` is the latest reload seen.
 */
export async function layerEvidence(
  balancers: readonly BalancerState[],
  fallback: Date,
  /** Judge the balancers' objects as `balancers` were read instead of reading them again. */
  asRead = false,
  /** Take reads begun after this mark, by any waiter (read-evidence.ts). */
  sharedAfterMark?: number,
): Promise<ReadEvidence> {
  if (balancers.length === 0) return { state: 'ready', message: 'no balancer routing was changed' };
  const each = await Promise.all(
    balancers.map(async (b) => ({
      b,
      evidence: await readEvidence(
        b.kube,
        b.config,
        b.routing.changedAt ?? fallback,
        asRead ? b.object : undefined,
        sharedAfterMark,
      ),
    })),
  );
  const waiting = each.filter((e) => e.evidence.state === 'waiting');
  const say = (list: typeof each) =>
    list
      .map((e) => (each.length === 1 ? e.evidence.message : `${e.b.describe}: ${e.evidence.message}`))
      .join('; ');
  if (waiting.length > 0) {
    return {
      state: 'waiting',
      message: say(waiting),
      nextChange: () => firstChange(waiting.map((e) => e.evidence.nextChange?.())),
    };
  }
  const reloads = each.flatMap((e) =>
    e.evidence.reloadedAt === undefined ? [] : [e.evidence.reloadedAt.getTime()],
  );
  return {
    state: each.some((e) => e.evidence.state === 'unproven') ? 'unproven' : 'ready',
    message: say(each),
    ...(reloads.length === 0 ? {} : { reloadedAt: new Date(Math.max(...reloads)) }),
  };
}

/**
 * The evidence check of an in-call wait (zones/step/deps.ts waitInCall) over balancers read after the move's last
 * write: the first answer rests on that read, each later one on a fresh read. A wait polled while nothing renders
 * the VMUser read it three times per call before (docs/scale.md).
 */
export function evidenceCheck(
  balancers: readonly BalancerState[],
  fallback: Date,
): () => Promise<ReadEvidence> {
  let first = true;
  // The balancers were read after the move's last write. Each check takes reads begun after the previous check
  // ended (the first: after now), whoever made them: the zones of a wave waiting on one balancer share them, and
  // no answer is older than the check's own read would be (kube/shared-reads.ts).
  let mark = processSharedReads.mark();
  return async () => {
    const asRead = first;
    first = false;
    const evidence = await layerEvidence(balancers, fallback, asRead, mark);
    mark = processSharedReads.mark();
    return evidence;
  };
}

/** The latest routing change among the balancers, if any records one. */
export function latestChange(balancers: readonly BalancerState[]): Date | undefined {
  const times = balancers.flatMap((b) =>
    b.routing.changedAt === undefined ? [] : [b.routing.changedAt.getTime()],
  );
  return times.length === 0 ? undefined : new Date(Math.max(...times));
}
