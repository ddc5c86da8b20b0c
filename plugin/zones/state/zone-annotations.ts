// What vmzones keeps on a zone's VMCluster, and only there (besides the step statuses and the read balancer):
// who holds the zone, whether it is in maintenance, how to undo the applied change, and what the background
// reconciler still has to finish. Every value is a compact JSON annotation that a human can read.

import { z } from 'zod';
import { CodedError } from '../../goplugin/failure-codes.ts';
import type { KubeObject } from '../../kube/objects.ts';
import type { RolloutView } from '../../rollouts/types.ts';
import type { ReadBalancerConfig } from '../../vm/read-backends.ts';
import type { FieldChange, JsonValue } from './merge-patch.ts';

const jsonValue = z.custom<JsonValue>(() => true);

export const leaseAnnotation = 'vmzones.io/lease';
export const maintenanceAnnotation = 'vmzones.io/maintenance';
export const rollbackAnnotation = 'vmzones.io/rollback';
export const handoffAnnotation = 'vmzones.io/handoff';
/** Labels, so that the reconciler and the maintenance metric can list the VMClusters cheaply. */
export const pendingLabel = 'vmzones.io/pending';
export const maintenanceLabel = 'vmzones.io/maintenance';

/** The format of the JSON annotations below; a vmzones that meets a newer one says so instead of guessing. */
export const stateFormatVersion = 1;

const identity = { rollout: z.string(), uid: z.string(), revision: z.string() };
const version = { v: z.number().int().min(1).optional() };
/** How to reach the zone's read balancer without the Rollout: written by vmzones since format 1 (optional, so
 *  that annotations of earlier builds still read; the reconciler then resolves it from the Rollout). */
const balancerConfig = z.custom<ReadBalancerConfig>(
  (v) => typeof v === 'object' && v !== null && 'ref' in v && 'zones' in v,
  'must be a read balancer config',
);
/** One balancer is written as an object (as builds before several balancers wrote it, so they can still read it),
 *  several as a list. */
const readsConfig = z.union([balancerConfig, z.array(balancerConfig).min(1)]);
export type ReadsRecord = z.infer<typeof readsConfig>;

/** The balancers a record names, as a list. */
export function recordedBalancers(reads: ReadsRecord): ReadBalancerConfig[] {
  return Array.isArray(reads) ? reads : [reads];
}

/** How a record stores the zone's balancers. */
export function readsRecord(balancers: readonly ReadBalancerConfig[]): ReadsRecord {
  const [only, ...more] = balancers;
  if (only === undefined) throw new StateError('a zone is read through at least one balancer');
  return more.length === 0 ? only : [...balancers];
}

const readsFields = {
  reads: readsConfig.optional(),
  drainGracePeriod: z.string().optional(),
  /** The VMAgents writing to the zone: their queues must drain before a finished zone serves reads again. */
  vmagents: z.array(z.string()).optional(),
  /** The registered cluster those VMAgents run in (docs/multicluster.md); absent = the controller's own. */
  vmagentsCluster: z.string().optional(),
  /** The zone's vminsertHosts: how those VMAgents' remote-write URLs name a zone in another cluster. */
  vminsertHosts: z.array(z.string()).optional(),
};

const identitySchema = z.object(identity);

/** The zone object a record was written on: kind, namespace, name and uid (the cluster is the one it lives in).
 *  Written since records name their object (issue 35); absent in records of earlier builds. */
const zoneIdentitySchema = z.object({
  kind: z.string(),
  namespace: z.string(),
  name: z.string(),
  uid: z.string(),
});
export type ZoneIdentity = z.infer<typeof zoneIdentitySchema>;

/** The identity of a zone object as read. */
export function zoneIdentity(object: KubeObject): ZoneIdentity {
  return {
    kind: object.kind ?? 'VMCluster',
    namespace: object.metadata.namespace ?? '',
    name: object.metadata.name ?? '',
    uid: object.metadata.uid ?? '',
  };
}

/** Why a record does not belong on `object` (it names another object, or this name's earlier incarnation), or
 *  undefined: a record copied from one zone object onto another is never acted on. */
export function recordObjectProblem(
  what: string,
  recorded: ZoneIdentity | undefined,
  object: KubeObject,
): string | undefined {
  if (recorded === undefined) return undefined;
  const here = zoneIdentity(object);
  if (
    recorded.kind === here.kind &&
    recorded.namespace === here.namespace &&
    recorded.name === here.name &&
    recorded.uid === here.uid
  ) {
    return undefined;
  }
  return `the ${what} names ${recorded.kind} ${recorded.namespace}/${recorded.name} (uid ${recorded.uid}), not this object (${here.kind} ${here.namespace}/${here.name}, uid ${here.uid}): it was written for another object`;
}
/** The Rollout revision that acts: `revision` is the Rollout's `status.currentPodHash`. */
export type RolloutIdentity = z.infer<typeof identitySchema>;

/** What is wanted of a zone: out of reads, changed, back in reads, its change undone (then back in reads). */
export const zoneWants = ['drained', 'changed', 'restored', 'rolledBack'] as const;
/** Who makes a zone's next move: the holder's step, or the reconciler on the holder's behalf. */
export const nextMoves = ['step', 'reconciler'] as const;

// In the order vmzones writes a lease (moves/lease.ts leaseRecord): a lease read back and written again with a new
// intent keeps its text's order.
const leaseSchema = z.object({
  ...version,
  ...identity,
  zone: z.string().optional(),
  object: zoneIdentitySchema.optional(),
  since: z.string(),
  /** The zone's intent (state/zone-intent.ts): what is wanted of it, and who moves next. Written since the intent
   *  is stored once on the zone object (issue 35); absent in leases of earlier builds (derived there). */
  wants: z.enum(zoneWants).optional(),
  nextMove: z.enum(nextMoves).optional(),
  ...readsFields,
});
export type Lease = z.infer<typeof leaseSchema>;

const maintenanceSchema = z.object({
  ...version,
  zone: z.string(),
  since: z.string(),
  /** Why reads are (being) taken away, for humans and for alert silencing. */
  reason: z.string(),
  /** Set by the guarded write that starts putting reads back (zones/moves/restore.ts): from then on the zone's
   *  holder finishes the restore, and a takeover waits for it instead of racing it. */
  restoringSince: z.string().optional(),
});
export type Maintenance = z.infer<typeof maintenanceSchema>;

const rollbackSchema = z.object({
  ...version,
  ...identity,
  zone: z.string(),
  object: zoneIdentitySchema.optional(),
  /** applied: the change is in place; requested: Abort asked to undo it; reverted: it was undone. */
  phase: z.enum(['applied', 'requested', 'reverted']),
  appliedAt: z.string(),
  /** metadata.generation after the change. */
  generation: z.number(),
  changes: z.array(
    z.object({ path: z.array(z.string()), before: jsonValue.optional(), after: jsonValue.optional() }),
  ),
  /** The Rollout's stable revision when the change was applied (zones/moves/superseded-changes.ts). */
  stableRevision: z.string().optional(),
  /** The unfinished walk this change was made over, whose "before" values the changes carry. */
  overRevision: z.string().optional(),
  requestedAt: z.string().optional(),
  revertedAt: z.string().optional(),
  ...readsFields,
});
export type RollbackRecord = z.infer<typeof rollbackSchema>;

/** Work handed to the background reconciler: restore reads once complete, after rolling back if asked to. */
const handoffSchema = z.object({
  ...version,
  zone: z.string(),
  object: zoneIdentitySchema.optional(),
  holder: identitySchema,
  requestedAt: z.string(),
  /** Who handed over and why, in words. */
  by: z.string(),
  rollback: z.boolean(),
  reads: readsConfig,
  drainGracePeriod: z.string(),
  vmagents: z.array(z.string()).optional(),
  vmagentsCluster: z.string().optional(),
  vminsertHosts: z.array(z.string()).optional(),
  /** The rounds of the queue check so far (plugin/zones/moves/queue-check.ts). */
  queueState: z.unknown().optional(),
  /** The reconciler's latest progress, in words. */
  message: z.string().optional(),
  updatedAt: z.string().optional(),
});
export type Handoff = z.infer<typeof handoffSchema>;

export class StateError extends CodedError {
  constructor(message: string) {
    super('StateInvalid', message);
    this.name = 'StateError';
  }
}

function parseAnnotation<T>(cluster: KubeObject, key: string, schema: z.ZodType<T>): T | undefined {
  const text = cluster.metadata.annotations?.[key];
  if (text === undefined || text === '') return undefined;
  const where = `${cluster.kind ?? 'VMCluster'} ${cluster.metadata.namespace}/${cluster.metadata.name}: annotation ${key}`;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new StateError(`${where} is not JSON; remove it by hand if vmzones did not write it`);
  }
  const format = (value as { v?: unknown } | null)?.v;
  if (typeof format === 'number' && format > stateFormatVersion) {
    throw new StateError(
      `${where} was written by a newer vmzones (state format v${format}; this one reads up to v${stateFormatVersion}): finish or abort the rollout with that version, or upgrade this one`,
    );
  }
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new StateError(
      `${where} is not what vmzones writes (${issue?.path.join('.') || '(value)'}: ${issue?.message})`,
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
    rollback: parseAnnotation(cluster, rollbackAnnotation, rollbackSchema),
    handoff: parseAnnotation(cluster, handoffAnnotation, handoffSchema),
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

/** An annotations patch value: JSON text stamped with the state format, or null to delete. */
export function annotationValue(value: object | undefined): string | null {
  return value === undefined ? null : JSON.stringify({ v: stateFormatVersion, ...value });
}
