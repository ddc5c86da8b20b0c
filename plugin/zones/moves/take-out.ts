// Take a zone out of reads: the drain half of the zone driver (bring-back.ts is the other half), the one sequence
// the step's drainReads and the reconciler's rollback share. From the objects as they are now it advances the zone
// toward "drained and leased": a live holder of another walk is waited for (up to readyTimeout), the drain budget
// admits the drain and the zones that keep serving are current (serving-zones.ts) before the zone is held (lease,
// maintenance mark: one guarded write), the balancers are written in the canonical order (a drain refused part-way
// undoes its part), vmauth proves it serves the drain, queries in flight end or the grace period does. It returns one progress value; the step maps it to a step result
// (step/drain-reads.ts), the reconciler to its progress (reconciler/finish-zone.ts). Every wait's deadline is
// checked here, once.

import { type FailureCode, isFinalCode } from '../../goplugin/failure-codes.ts';
import { drainedFrom, readLayer } from '../../vm/read-layer.ts';
import { holderExists } from '../state/holder.ts';
import { describeCluster, leasedByOther } from '../state/messages.ts';
import {
  describeHolder,
  type Lease,
  sameRevision,
  sameRollout,
  timestamp,
} from '../state/zone-annotations.ts';
import { reconcilerMovesNext } from '../state/zone-intent.ts';
import { type ClusterPatch, type LoadedCluster, loadedCluster } from '../state/zone-object.ts';
import { deadlineOf, pastDeadline } from './deadline.ts';
import { type DrainOutcome, type DrainRequest, drainReadsMove } from './drain.ts';
import type { MoveDeps } from './move-deps.ts';
import { outcomeFailureCode } from './outcome.ts';
import { release } from './release.ts';

/** What taking a zone out waits on: a live holder's lease, the drain budget (other zones out), the zones that keep
 *  serving being current (serving-zones.ts), vmauth's proof, the queries in flight, the grace period. */
export const takeOutWaits = ['lease', 'budget', 'serving', 'vmauth', 'queries', 'grace'] as const;
export type TakeOutWait = (typeof takeOutWaits)[number];

/** The waits that fail past readyTimeout, and the code each fails with (queries and grace end by themselves). */
const lateCodes = {
  lease: 'LeaseHeld',
  budget: 'DrainBudget',
  serving: 'ServingZoneBehind',
  vmauth: 'ReloadUnproven',
} as const;
type TimedWait = keyof typeof lateCodes;

export interface TakeOutRequest extends Omit<DrainRequest, 'mark'> {
  /** The guarded write that holds the zone, made only once its drain is admitted (the step: lease and maintenance
   *  mark; the reconciler: the maintenance mark), given the zone as found; undefined: it is held already. */
  hold: (cluster: LoadedCluster) => ClusterPatch | undefined;
  /** The step's: a lease of its Rollout protects nothing while the zone is not drained (the budget refused it, a
   *  write lost), so it goes again then. The reconciler's rollback keeps the zone it holds for its holder. */
  leaseOnlyWhileDrained: boolean;
  /** Past it, a wait fails (lease: LeaseHeld, budget: DrainBudget, serving: ServingZoneBehind, vmauth:
   *  ReloadUnproven); absent (the reconciler, which is what finishes zones): it waits on. */
  readyTimeout?: { ms: number; text: string };
  /** The wait of the caller's previous look (the step's status), to go on from its start. */
  previous?: { waitsOn: TakeOutWait; since: Date };
}

/** What the move learned on its way, for the caller's status and words. */
export interface TakeOutFacts {
  /** The balancers, in words (read at least once unless the move waited for a lease). */
  layer?: string;
  /** Whether this call wrote the hold (lease, maintenance mark). */
  held: boolean;
  /** A lease of a walk that no longer exists, taken over: in words, for the message. */
  tookOver?: string;
  /** The live holder waited for. */
  heldBy?: Lease;
  /** A drain refused part-way put back what it had taken: those balancers, in words. */
  undone?: string;
  /** The balancers the zone is still out of while the budget refuses the rest. */
  stillOut?: string[];
  /** Once drained: where from and when, the sentence saying so, the proof, the grace window, the queries. */
  balancers?: string;
  drainedAt?: Date;
  drained?: string;
  evidence?: string;
  servedSince?: Date;
  graceUntil?: Date;
  queries?: string;
  queriesDoneAt?: Date;
  /** The zone's object after this move's own writes, to guard the next move on. */
  cluster?: LoadedCluster;
}

export type TakeOutProgress = TakeOutFacts &
  (
    | {
        phase: 'waiting';
        waitsOn: TakeOutWait;
        message: string;
        since: Date;
        /** When the wait fails (lease, budget, vmauth, with a readyTimeout). */
        deadline?: Date;
        /** When it ends by itself (queries, grace). */
        until?: Date;
      }
    | {
        phase: 'failed';
        code: FailureCode;
        /** A human must act (failure-codes.ts failureFinality); else a retry may succeed. */
        final: boolean;
        failedAt: TakeOutWait | 'routing';
        message: string;
      }
    | { phase: 'lost'; message: string }
    | { phase: 'done'; message: string }
  );

export async function takeOut(
  deps: MoveDeps,
  request: TakeOutRequest,
  cluster: LoadedCluster,
): Promise<TakeOutProgress> {
  const { zone, holder } = request;
  const name = describeCluster(request.ref);
  const lease = cluster.state.lease;
  let tookOver: string | undefined;
  if (lease !== undefined && !sameRollout(lease, holder)) {
    if (await holderExists(deps.kube, lease)) {
      // Another live walk holds the zone: wait for it to let go (two Rollouts over shared zones both finish, one
      // after the other), naming the holder.
      return waitOrFail(deps, request, 'lease', request.previous, {
        message: `zone ${zone}: waiting for ${name}: it is leased by ${describeHolder(lease)} since ${lease.since}; drains once that walk releases it`,
        late: (waited) => `${leasedByOther(request.ref, zone, lease)} (${waited})`,
        facts: { held: false, heldBy: lease },
      });
    }
    tookOver = ` (took over the lease of ${describeHolder(lease)}, which no longer exists)`;
  }
  const mark = request.hold(cluster);
  const leaseTaken = mark !== undefined && !sameRollout(lease, holder);
  let outcome: DrainOutcome;
  try {
    outcome = await drainReadsMove(deps, { ...request, mark }, cluster);
  } catch (err) {
    // A fault past the write that held the zone (a 409 that stayed one on fresh reads, a balancer refusing the
    // edit): a lease this call took for a drain that did not happen protects nothing, so it goes; a retry takes it
    // again once the drain is admitted.
    if (leaseTaken && request.leaseOnlyWhileDrained) {
      const stillOut = drainedFrom(await readLayer(deps, request.reads), zone).length > 0;
      if (!stillOut) await letGo(deps, request);
    }
    throw err;
  }
  const facts: TakeOutFacts = {
    held:
      mark !== undefined &&
      outcome.kind !== 'blocked' &&
      outcome.kind !== 'failed' &&
      outcome.kind !== 'lost',
    ...(tookOver === undefined ? {} : { tookOver }),
    ...(outcome.layer === undefined ? {} : { layer: outcome.layer.describe }),
    ...(outcome.cluster === undefined ? {} : { cluster: outcome.cluster }),
  };
  switch (outcome.kind) {
    case 'lost':
      return { ...facts, phase: 'lost', message: outcome.message };
    case 'failed': {
      const code = outcomeFailureCode(outcome);
      return {
        ...facts,
        phase: 'failed',
        code,
        final: isFinalCode(code),
        failedAt: 'routing',
        message: `${outcome.message} (${name}), so there is nothing to drain; check the zone's vmselectHosts`,
      };
    }
    case 'blocked':
      return outcome.code === 'LastServingZone'
        ? {
            ...facts,
            phase: 'failed',
            code: 'LastServingZone',
            final: isFinalCode('LastServingZone'),
            failedAt: 'budget',
            message: `refusing to drain zone ${zone}: ${outcome.message}`,
          }
        : refusedByBudget(deps, request, cluster, outcome, facts);
    default:
      break;
  }
  const now = deps.now();
  const drainedAt = outcome.drainedAt ?? now;
  const drained = `zone ${zone}: ${name} was taken out of ${outcome.balancers} at ${timestamp(drainedAt)}${tookOver ?? ''}`;
  const out: TakeOutFacts = {
    ...facts,
    drainedAt,
    drained,
    ...(outcome.balancers === undefined ? {} : { balancers: outcome.balancers }),
  };
  if (outcome.kind === 'waiting' && outcome.code === 'vmauth') {
    const since = outcome.since ?? now;
    return waitOrFail(
      deps,
      request,
      'vmauth',
      { waitsOn: 'vmauth', since },
      {
        message: `${drained}; waiting until every vmauth replica serves that: ${outcome.message}`,
        late: (waited) =>
          `${drained}; vmauth did not confirm serving that within readyTimeout (${waited}): ${outcome.message}. The rollout aborts and vmzones puts the zone back`,
        facts: out,
      },
    );
  }
  const graceUntil = outcome.graceUntil ?? now;
  const proven: TakeOutFacts = {
    ...out,
    graceUntil,
    servedSince: outcome.servedSince ?? now,
    ...(outcome.evidence === undefined ? {} : { evidence: outcome.evidence }),
    ...(outcome.queries === undefined ? {} : { queries: outcome.queries }),
    ...(outcome.queriesDoneAt === undefined ? {} : { queriesDoneAt: outcome.queriesDoneAt }),
  };
  if (outcome.kind === 'waiting') {
    const waitsOn = outcome.code === 'queries' ? 'queries' : 'grace';
    return {
      ...proven,
      phase: 'waiting',
      waitsOn,
      since: outcome.since ?? drainedAt,
      until: graceUntil,
      message: outcome.message,
    };
  }
  return { ...proven, phase: 'done', message: outcome.message };
}

/** The budget refuses the drain (now), or a zone that would keep serving is behind: wait for the other zones, up
 *  to readyTimeout. */
async function refusedByBudget(
  deps: MoveDeps,
  request: TakeOutRequest,
  cluster: LoadedCluster,
  outcome: DrainOutcome,
  facts: TakeOutFacts,
): Promise<TakeOutProgress> {
  const { zone } = request;
  // The layer as the move read it, unless it undid a part since (no extra read per waiting look).
  const layer =
    outcome.undone === undefined && outcome.layer !== undefined
      ? outcome.layer
      : await readLayer(deps, request.reads);
  const stillOut = drainedFrom(layer, zone).map((b) => b.describe);
  // A lease left by an earlier try whose drain never happened (its write lost to another drain) protects nothing
  // while the budget refuses the drain: it goes, so that another walk is not kept waiting for it.
  const now = outcome.cluster ?? cluster;
  const changedByUs = sameRevision(now.state.rollback, request.holder);
  if (
    request.leaseOnlyWhileDrained &&
    stillOut.length === 0 &&
    !changedByUs &&
    sameRollout(now.state.lease, request.holder)
  ) {
    await letGo(deps, request);
  }
  const undone = outcome.undone === undefined ? '' : `; its drain from ${outcome.undone} was undone`;
  const waitsOn = outcome.code === 'ServingZoneBehind' ? 'serving' : 'budget';
  return waitOrFail(deps, request, waitsOn, request.previous, {
    message: `zone ${zone}: not drained yet: ${outcome.message}${undone}`,
    late: (waited) =>
      `zone ${zone}: not drained within readyTimeout (${waited}): ${outcome.message}${undone}. ${stillOut.length > 0 ? `It is still out of ${stillOut.join(', ')}; the rollout aborts and vmzones puts it back` : 'It serves reads as before'}`,
    facts: {
      ...facts,
      stillOut,
      ...(outcome.undone === undefined ? {} : { undone: outcome.undone }),
    },
  });
}

/**
 * The deadline of a wait, checked once for every wait of the move: since when it waits (the caller's previous
 * look's start when it waited on the same), waiting until readyTimeout, failed past it with the wait's code.
 */
function waitOrFail(
  deps: MoveDeps,
  request: TakeOutRequest,
  waitsOn: TimedWait,
  previous: { waitsOn: TakeOutWait; since: Date } | undefined,
  words: { message: string; late: (waited: string) => string; facts: TakeOutFacts },
): TakeOutProgress {
  const now = deps.now();
  const since = previous?.waitsOn === waitsOn ? previous.since : now;
  const timeout = request.readyTimeout;
  if (timeout === undefined)
    return { ...words.facts, phase: 'waiting', waitsOn, since, message: words.message };
  if (pastDeadline(since, timeout.ms, now)) {
    const code = lateCodes[waitsOn];
    return {
      ...words.facts,
      phase: 'failed',
      code,
      final: isFinalCode(code),
      failedAt: waitsOn,
      message: words.late(`waited since ${timestamp(since)}, readyTimeout ${timeout.text}`),
    };
  }
  return {
    ...words.facts,
    phase: 'waiting',
    waitsOn,
    since,
    deadline: deadlineOf(since, timeout.ms),
    message: `${words.message} (waiting since ${timestamp(since)}, at most readyTimeout ${timeout.text})`,
  };
}

/** Gives the zone back (lease and maintenance mark go) when nothing of it is drained: a guarded write on the zone as
 *  it is now, lost (and left) when someone else wrote meanwhile. */
async function letGo(deps: MoveDeps, request: TakeOutRequest): Promise<void> {
  const now = loadedCluster(await deps.kube.get(request.ref));
  if (!sameRollout(now.state.lease, request.holder) || reconcilerMovesNext(now.state)) return;
  await release(deps.kube, request.ref, now);
}
