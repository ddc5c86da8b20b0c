// The words of step messages that several actions share, so that a zone reads the same everywhere.

import type { ObjectRef } from '../../kube/objects.ts';
import { describeHolder, type Lease, type ZoneState } from './zone-annotations.ts';

/** The zone's object by its kind (VMCluster, VMSingle, VLCluster) and name. */
export function describeCluster(ref: ObjectRef): string {
  return `${ref.kind} ${ref.namespace}/${ref.name}`;
}

/** Who handed the zone to the reconciler, since when, and what it is doing: for "waiting" messages. */
export function describeHandoff(handoff: NonNullable<ZoneState['handoff']>): string {
  return `(${handoff.by}, since ${handoff.requestedAt})${handoff.message ? `: ${handoff.message}` : ''}`;
}

export function leasedByOther(ref: ObjectRef, zone: string, lease: Lease): string {
  return `${describeCluster(ref)} (zone ${zone}) is leased by ${describeHolder(lease)} since ${lease.since}: two Rollouts must not change a zone at once; wait for that Rollout to finish or abort it`;
}
