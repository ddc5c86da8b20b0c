// Bring a zone back into reads: the one sequence the step's restoreReads and the reconciler's finishZone share —
// operational (at the change's generation), [every vmagent queue for it delivered], its reads put back with
// vmauth's proof, released. It decides each transition from the objects as they are now and returns one progress
// value; the step maps it to a step result, the reconciler to its progress (issue 35: one zone driver, of which
// this is the bringing-back half).

import type { FailureCode } from '../../goplugin/failure-codes.ts';
import { drainedFrom, readLayer } from '../../vm/read-layer.ts';
import type { Handoff } from '../state/zone-annotations.ts';
import type { LoadedCluster } from '../state/zone-object.ts';
import { awaitOperational, awaitQueueDrained } from './await-operational.ts';
import type { ZoneReads } from './drain.ts';
import type { MoveDeps } from './move-deps.ts';
import { outcomeFailureCode } from './outcome.ts';
import type { ZoneQueueCheck } from './queue-check.ts';
import { type ReleaseRequest, release } from './release.ts';
import { restoreReadsMove } from './restore.ts';

/** What bringing a zone back waits on. */
export type BringBackWait = 'operational' | 'queues' | 'vmauth';

export type BringBackProgress =
  | {
      phase: 'waiting';
      waitsOn: BringBackWait;
      message: string;
      /** Since when vmauth is asked to serve the zone again (waitsOn vmauth). */
      since?: Date;
      /** The queue check's rounds so far (waitsOn queues), to keep for the next reading. */
      queueState?: unknown;
      /** The balancers this call put the zone back into, and those that route it now, in words. */
      restored: string[];
      serving?: string;
      /** What proved it operational, once it is (waitsOn queues, vmauth). */
      operational?: string;
      /** Since when the operator has reported a failure it may still recover from (waitsOn operational), to hand
       *  back in the next request's `failingSince`. */
      failingSince?: Date;
    }
  | {
      phase: 'failed';
      code: FailureCode;
      message: string;
      /** Which of the three failed. */
      failedAt: BringBackWait | 'restore';
      queueState?: unknown;
    }
  | { phase: 'lost'; message: string; lostAt: 'restore' | 'release' }
  | {
      phase: 'done';
      /** What proved it operational, that vmauth serves it, and through which balancers. */
      operational: string;
      evidence: string;
      serving: string;
      restored: string[];
      restoredAt: Date;
      /** The zone as the restore left it, before the release (what the release was decided on). */
      held: LoadedCluster;
    };

export interface BringBackRequest extends ZoneReads {
  /** The generation the change made (the step: its rollback record's); absent: the object's current one. */
  generation?: number;
  /** Since when an earlier call saw the operator report `failed` (the progress's `failingSince`). */
  failingSince?: Date;
  /** The reconciler's handoff: its vmagent queues must have delivered before reads come back (checked until the
   *  restore has begun). */
  queues?: Handoff;
  /** What goes with the lease, decided on the zone as the restore left it. */
  releases: (held: LoadedCluster) => ReleaseRequest;
}

export async function bringBack(
  deps: MoveDeps & { queueCheck?: ZoneQueueCheck },
  request: BringBackRequest,
  cluster: LoadedCluster,
): Promise<BringBackProgress> {
  const { zone, ref } = request;
  const operational = await awaitOperational(deps, ref, request.generation, request.failingSince);
  if (operational.kind === 'failed') {
    return {
      phase: 'failed',
      code: outcomeFailureCode(operational),
      message: operational.message,
      failedAt: 'operational',
    };
  }
  if (operational.kind !== 'done') {
    return {
      phase: 'waiting',
      waitsOn: 'operational',
      message: operational.message,
      restored: [],
      ...(operational.since === undefined ? {} : { failingSince: operational.since }),
    };
  }
  // Once the restore has begun (its guarded write made), the queues were checked already.
  if (request.queues !== undefined && cluster.state.maintenance?.restoringSince === undefined) {
    const layer = await readLayer(deps, request.reads);
    if (drainedFrom(layer, zone).length > 0) {
      const queues = await awaitQueueDrained(deps, ref, request.queues);
      if (queues.kind === 'failed') {
        return {
          phase: 'failed',
          code: outcomeFailureCode(queues),
          message: queues.message,
          failedAt: 'queues',
          queueState: queues.state,
        };
      }
      if (queues.kind !== 'done') {
        return {
          phase: 'waiting',
          waitsOn: 'queues',
          message: queues.message,
          queueState: queues.state,
          restored: [],
          operational: operational.message,
        };
      }
    }
  }
  // Guarded on the object the caller read before the checks above: a takeover since makes it lose.
  const restore = await restoreReadsMove(deps, request, cluster);
  const restored = restore.restored ?? [];
  if (restore.kind === 'lost') return { phase: 'lost', message: restore.message, lostAt: 'restore' };
  if (restore.kind === 'failed') {
    return {
      phase: 'failed',
      code: outcomeFailureCode(restore),
      message: restore.message,
      failedAt: 'restore',
    };
  }
  const since = restore.since ?? deps.now();
  if (restore.kind === 'waiting') {
    return {
      phase: 'waiting',
      waitsOn: 'vmauth',
      message: restore.message,
      since,
      restored,
      operational: operational.message,
      ...(restore.serving === undefined ? {} : { serving: restore.serving }),
    };
  }
  const held = restore.cluster ?? cluster;
  const released = await release(deps.kube, ref, held, request.releases(held));
  if (released.kind === 'lost') {
    return { phase: 'lost', message: `zone ${zone} changed hands before its release`, lostAt: 'release' };
  }
  return {
    phase: 'done',
    operational: operational.message,
    evidence: restore.evidence ?? restore.message,
    serving: restore.serving ?? '',
    restored,
    restoredAt: since,
    held,
  };
}
