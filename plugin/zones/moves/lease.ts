// Take or renew the lease on a zone: the records that say who holds it (lease), that it is out of reads
// (maintenance), and how to reach its reads without the Rollout (the reads record) are built here only.

import type { KubeObjects, ObjectRef } from '../../kube/objects.ts';
import type { ReadBalancerConfig } from '../../vm/read-backends.ts';
import {
  annotationValue,
  handoffAnnotation,
  type Lease,
  leaseAnnotation,
  type Maintenance,
  maintenanceAnnotation,
  maintenanceLabel,
  pendingLabel,
  type ReadsRecord,
  type RolloutIdentity,
  readsRecord,
  timestamp,
  type ZoneIdentity,
  type ZoneState,
  zoneIdentity,
} from '../state/zone-annotations.ts';
import { type IntentFields, type ZoneWant, zoneIntent } from '../state/zone-intent.ts';
import type { ClusterPatch, LoadedCluster } from '../state/zone-object.ts';
import { type TransitionResult, transition } from './transition.ts';

/** How to reach the zone's reads and agents: carried by leases, rollback records and handoffs. */
export interface ReadsCarry {
  reads: ReadsRecord;
  drainGracePeriod: string;
  vmagents: string[];
  vmagentsCluster?: string;
  vminsertHosts?: string[];
}

/** Where a walk's records say the zone's reads and agents are: what a step resolved (zones/step/target.ts). */
export interface ReadsSource {
  reads: readonly ReadBalancerConfig[];
  drainGracePeriod: string;
  vmagents: string[];
  vmagentsCluster: string | undefined;
  vminsertHosts: string[] | undefined;
}

/** The `vmagentsCluster` and `vminsertHosts` fields of the state records, present only when set. */
export function agentsCluster(target: Pick<ReadsSource, 'vmagentsCluster' | 'vminsertHosts'>): {
  vmagentsCluster?: string;
  vminsertHosts?: string[];
} {
  return {
    ...(target.vmagentsCluster === undefined ? {} : { vmagentsCluster: target.vmagentsCluster }),
    ...(target.vminsertHosts === undefined ? {} : { vminsertHosts: target.vminsertHosts }),
  };
}

export function readsCarry(target: ReadsSource): ReadsCarry {
  return {
    reads: readsRecord(target.reads),
    drainGracePeriod: target.drainGracePeriod,
    vmagents: target.vmagents,
    ...agentsCluster(target),
  };
}

/** The lease of `holder` on `zone` (the zone object `object`) from `now`, with the zone's intent (what is wanted,
 *  who moves next: state/zone-intent.ts); `carry` when the holder knows the reads (a step does). */
export function leaseRecord(
  holder: RolloutIdentity,
  zone: string,
  object: ZoneIdentity,
  now: Date,
  intent: IntentFields,
  carry?: ReadsCarry,
): Lease {
  return { ...holder, zone, object, since: timestamp(now), ...intent, ...(carry ?? {}) };
}

/** The lease as it is with a new intent (holder, since and reads kept): the patch entry that stores it. */
export function intentPatch(lease: Lease, intent: IntentFields): Record<string, string | null> {
  return { [leaseAnnotation]: annotationValue({ ...lease, ...intent }) };
}

/** The zone's holder now wants `wants` (who moves next unchanged; a lease of an earlier build gets its intent
 *  stored): the patch entry, or none when nobody holds the zone. */
export function wantsPatch(state: ZoneState, wants: ZoneWant): Record<string, string | null> {
  const intent = zoneIntent(state);
  return state.lease === undefined || intent === undefined
    ? {}
    : intentPatch(state.lease, { wants, nextMove: intent.nextMove });
}

export function maintenanceRecord(zone: string, now: Date, reason: string): Maintenance {
  return { zone, since: timestamp(now), reason };
}

/** The annotations and label that put a zone in maintenance. */
export function maintenancePatch(maintenance: Maintenance): ClusterPatch {
  return {
    annotations: { [maintenanceAnnotation]: annotationValue(maintenance) },
    labels: { [maintenanceLabel]: 'true' },
  };
}

export interface LeaseRequest {
  holder: RolloutIdentity;
  zone: string;
  /** The zone object the lease is taken on (takeLease fills it in from the object it writes on). */
  object: ZoneIdentity;
  now: Date;
  /** What is wanted of the zone and who moves next (state/zone-intent.ts). */
  intent: IntentFields;
  carry?: ReadsCarry;
  /** Also mark the zone in maintenance, for this reason (the step's drainReads does both in one write). */
  maintenanceReason?: string;
  /** Take the zone back from a handoff (drop the handoff and the pending label in the same write). */
  takeBack?: boolean;
}

/** The patch that takes the lease (and marks maintenance, and ends a handoff, when asked). */
export function leasePatch(request: LeaseRequest): { patch: ClusterPatch; lease: Lease } {
  const lease = leaseRecord(
    request.holder,
    request.zone,
    request.object,
    request.now,
    request.intent,
    request.carry,
  );
  const marked =
    request.maintenanceReason === undefined
      ? undefined
      : maintenancePatch(maintenanceRecord(request.zone, request.now, request.maintenanceReason));
  const patch: ClusterPatch = {
    annotations: {
      [leaseAnnotation]: annotationValue(lease),
      ...(marked?.annotations ?? {}),
      ...(request.takeBack ? { [handoffAnnotation]: null } : {}),
    },
    ...(marked !== undefined || request.takeBack
      ? { labels: { ...(marked?.labels ?? {}), ...(request.takeBack ? { [pendingLabel]: null } : {}) } }
      : {}),
  };
  return { patch, lease };
}

/** One guarded write: the lease (and maintenance mark, and the end of a handoff, when asked). */
export async function takeLease(
  kube: KubeObjects,
  ref: ObjectRef,
  cluster: LoadedCluster,
  request: Omit<LeaseRequest, 'object'>,
): Promise<TransitionResult & { lease: Lease }> {
  const { patch, lease } = leasePatch({ ...request, object: zoneIdentity(cluster.object) });
  return { ...(await transition(kube, ref, cluster, patch)), lease };
}

/** What a step's drainReads writes to hold the zone: its lease with the reads record, and the maintenance mark. */
export function stepLeasePatch(
  target: ReadsSource & { who: RolloutIdentity; config: { zone: string } },
  object: ZoneIdentity,
  now: Date,
  reason: string,
): ClusterPatch {
  return leasePatch({
    holder: target.who,
    zone: target.config.zone,
    object,
    now,
    intent: { wants: 'drained', nextMove: 'step' },
    carry: readsCarry(target),
    maintenanceReason: reason,
  }).patch;
}
