// What vmzones keeps on a zone's VMCluster, and only there (besides the step statuses and the read balancer):
// who holds the zone, whether it is in maintenance, how to undo the applied change, and what the background
// reconciler still has to finish. Every value is a compact JSON annotation that a human can read.

import { z } from 'zod';
import type { KubeObject } from '../kube/objects.ts';
import type { RolloutView } from '../rollouts/types.ts';
import type { ReadBalancerConfig } from '../vm/read-balancer.ts';
import type { FieldChange, JsonValue } from './merge-patch.ts';

export const leaseAnnotation = 'vmzones.io/lease';
export const maintenanceAnnotation = 'vmzones.io/maintenance';
export const rollbackAnnotation = 'vmzones.io/rollback';
export const handoffAnnotation = 'vmzones.io/handoff';
/** Labels, so that the reconciler and the maintenance metric can list the VMClusters cheaply. */
export const pendingLabel = 'vmzones.io/pending';
export const maintenanceLabel = 'vmzones.io/maintenance';

/** The Rollout revision that acts: `revision` is the Rollout's `status.currentPodHash`. */
export interface RolloutIdentity {
  rollout: string;
  uid: string;
  revision: string;
}

export interface Lease extends RolloutIdentity {
  since: string;
}

export interface Maintenance {
  zone: string;
  since: string;
  /** Why reads are (being) taken away, for humans and for alert silencing. */
  reason: string;
}

export interface RollbackRecord extends RolloutIdentity {
  zone: string;
  /** applied: the change is in place; requested: Abort asked to undo it; reverted: it was undone. */
  phase: 'applied' | 'requested' | 'reverted';
  appliedAt: string;
  /** metadata.generation after the change. */
  generation: number;
  changes: { path: string[]; before?: JsonValue; after?: JsonValue }[];
  requestedAt?: string;
  revertedAt?: string;
}

/** Work handed to the background reconciler: restore reads once operational, after rolling back if asked to. */
export interface Handoff {
  zone: string;
  holder: RolloutIdentity;
  requestedAt: string;
  /** Who handed over and why, in words. */
  by: string;
  rollback: boolean;
  reads: ReadBalancerConfig;
  drainGracePeriod: string;
  /** The reconciler's latest progress, in words. */
  message?: string;
  updatedAt?: string;
}

export class StateError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'StateError';
  }
}

const identity = { rollout: z.string(), uid: z.string(), revision: z.string() };
const leaseSchema = z.object({ ...identity, since: z.string() });
const maintenanceSchema = z.object({ zone: z.string(), since: z.string(), reason: z.string() });
const rollbackSchema = z.object({
  ...identity,
  zone: z.string(),
  phase: z.enum(['applied', 'requested', 'reverted']),
  appliedAt: z.string(),
  generation: z.number(),
  changes: z.array(
    z.object({ path: z.array(z.string()), before: z.unknown().optional(), after: z.unknown().optional() }),
  ),
  requestedAt: z.string().optional(),
  revertedAt: z.string().optional(),
});
const handoffSchema = z.object({
  zone: z.string(),
  holder: z.object(identity),
  requestedAt: z.string(),
  by: z.string(),
  rollback: z.boolean(),
  reads: z.custom<ReadBalancerConfig>(
    (v) => typeof v === 'object' && v !== null && 'ref' in v && 'zones' in v,
    'must be a read balancer config',
  ),
  drainGracePeriod: z.string(),
  message: z.string().optional(),
  updatedAt: z.string().optional(),
});

function parseAnnotation<T>(cluster: KubeObject, key: string, schema: z.ZodType<T>): T | undefined {
  const text = cluster.metadata.annotations?.[key];
  if (text === undefined || text === '') return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new StateError(
      `VMCluster ${cluster.metadata.namespace}/${cluster.metadata.name}: annotation ${key} is not JSON; remove it by hand if vmzones did not write it`,
    );
  }
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    throw new StateError(
      `VMCluster ${cluster.metadata.namespace}/${cluster.metadata.name}: annotation ${key} is not what vmzones writes (${parsed.error.issues[0]?.message})`,
    );
  }
  return parsed.data;
}

export interface ZoneState {
  lease: Lease | undefined;
  maintenance: Maintenance | undefined;
  rollback: RollbackRecord | undefined;
  handoff: Handoff | undefined;
}

/** The vmzones annotations of a VMCluster; a malformed one is a StateError (never silently ignored). */
export function zoneState(cluster: KubeObject): ZoneState {
  return {
    lease: parseAnnotation(cluster, leaseAnnotation, leaseSchema),
    maintenance: parseAnnotation(cluster, maintenanceAnnotation, maintenanceSchema),
    rollback: parseAnnotation(cluster, rollbackAnnotation, rollbackSchema) as RollbackRecord | undefined,
    handoff: parseAnnotation(cluster, handoffAnnotation, handoffSchema) as Handoff | undefined,
  };
}

export function rolloutIdentity(rollout: RolloutView): RolloutIdentity {
  return {
    rollout: `${rollout.metadata.namespace ?? ''}/${rollout.metadata.name ?? ''}`,
    uid: rollout.metadata.uid ?? '',
    revision: rollout.status.currentPodHash ?? '',
  };
}

export function sameRollout(a: RolloutIdentity | undefined, b: RolloutIdentity): boolean {
  return a !== undefined && a.uid === b.uid && a.rollout === b.rollout;
}

export function sameRevision(a: RolloutIdentity | undefined, b: RolloutIdentity): boolean {
  return sameRollout(a, b) && a?.revision === b.revision;
}

export function describeHolder(holder: RolloutIdentity): string {
  return `Rollout ${holder.rollout} (revision ${holder.revision || 'unknown'})`;
}

/** RFC 3339 to the second, as Kubernetes writes times. */
export function timestamp(date: Date): string {
  return date.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

export function changeRecords(changes: readonly FieldChange[]): RollbackRecord['changes'] {
  return changes.map((c) => ({
    path: c.path,
    ...(c.before === undefined ? {} : { before: c.before }),
    ...(c.after === undefined ? {} : { after: c.after }),
  }));
}

export function fieldChanges(record: RollbackRecord): FieldChange[] {
  return record.changes.map((c) => ({ path: c.path, before: c.before, after: c.after }));
}

/** An annotations patch value: JSON text, or null to delete. */
export function annotationValue(value: object | undefined): string | null {
  return value === undefined ? null : JSON.stringify(value);
}
