// Kubernetes events (events.k8s.io/v1) for every zone transition a person wants in `kubectl describe` and in Argo
// CD's event list: drained, changed, restored, lease refused, rollback requested, handed over, finished. Each is
// written on the Rollout and on the zone's VMCluster. Its name is derived from what happened (Rollout, revision,
// zone, reason, and a detail such as the generation), so a replayed Run creates nothing twice (409 AlreadyExists).
// Events are for people: a failure to write one is logged, never fails a step.

import { createHash } from 'node:crypto';
import { hostname } from 'node:os';
import type { FailureCode } from '../../goplugin/failure-codes.ts';
import type { Logger } from '../../goplugin/index.ts';
import { KubeError, type KubeObjects, type ObjectRef } from '../../kube/objects.ts';
import type { RolloutIdentity } from './zone-annotations.ts';

export type ZoneEventReason =
  | 'ZoneDrained'
  | 'ZoneChanged'
  | 'ZoneRestored'
  | 'ZoneLeaseRefused'
  | 'ZoneRollbackRequested'
  | 'ZoneHandedOver'
  | 'ZoneWalkEnded'
  | 'ZoneFinished'
  | 'ZoneRolledBack'
  | 'ZoneRecordRefused'
  | 'ZoneRestoreFailed';

/** The reasons that report a failure, with its code (plugin/goplugin/failure-codes.ts): such an event is a Warning
 *  and carries the code as the label `vmzones.io/failure-code`, so that `kubectl get events -l
 *  vmzones.io/failure-code=LeaseHeld` and event exporters select on the code rather than on the note's words. */
export const failureEventCodes = {
  ZoneLeaseRefused: 'LeaseHeld',
  ZoneRecordRefused: 'RecordRefused',
  ZoneRestoreFailed: 'RestoreUnrouted',
} as const satisfies Partial<Record<ZoneEventReason, FailureCode>>;

export const failureCodeLabel = 'vmzones.io/failure-code';

function failureCodeOfReason(reason: ZoneEventReason): FailureCode | undefined {
  return Object.hasOwn(failureEventCodes, reason)
    ? failureEventCodes[reason as keyof typeof failureEventCodes]
    : undefined;
}

export interface ZoneEvent {
  reason: ZoneEventReason;
  /** What it did, as a verb for `action` (e.g. DrainReads). */
  action: string;
  note: string;
  /** Warning rather than Normal; a failure reason (failureEventCodes) is always a Warning. */
  warning?: boolean;
  holder: RolloutIdentity;
  zone: string;
  cluster: ObjectRef;
  /** Tells apart two events of one reason for the same zone and revision (e.g. a generation). */
  detail?: string;
  /** Written on the zone's object only: vmzones writes into the holder's namespace only for a holder that exists
   *  and holds the zone's lease (a step's own Rollout; for the reconciler, holderExists), never into a namespace a
   *  record merely names (zones/reconciler/record-trust.ts). */
  zoneObjectOnly?: boolean;
}

const reportingController = 'vmzones.io/step';
const maxNoteChars = 1024;

function microTime(date: Date): string {
  return date.toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

function eventName(base: string, key: string): string {
  const digest = createHash('sha256').update(key).digest('hex').slice(0, 16);
  return `${base.slice(0, 200)}.vmz-${digest}`;
}

/** Writes the event on the Rollout and the VMCluster; already written (a replay) or refused: logged, not thrown. */
export async function emitZoneEvent(
  kube: KubeObjects,
  logger: Logger,
  event: ZoneEvent,
  now: Date,
): Promise<void> {
  const [rolloutNamespace = '', rolloutName = ''] = event.holder.rollout.split('/');
  const key = [
    event.holder.rollout,
    event.holder.uid,
    event.holder.revision,
    event.zone,
    event.reason,
    event.detail ?? '',
  ].join('|');
  const failure = failureCodeOfReason(event.reason);
  const note = event.note.length > maxNoteChars ? `${event.note.slice(0, maxNoteChars - 1)}…` : event.note;
  const rollout = {
    apiVersion: 'argoproj.io/v1alpha1',
    kind: 'Rollout',
    namespace: rolloutNamespace,
    name: rolloutName,
    uid: event.holder.uid,
  };
  const cluster = {
    apiVersion: event.cluster.apiVersion,
    kind: event.cluster.kind,
    namespace: event.cluster.namespace,
    name: event.cluster.name,
  };
  const targets = [
    { regarding: rollout, related: cluster, namespace: rolloutNamespace, base: rolloutName },
    { regarding: cluster, related: rollout, namespace: event.cluster.namespace, base: event.cluster.name },
  ];
  for (const target of event.zoneObjectOnly ? targets.slice(1) : targets) {
    try {
      await kube.create({
        apiVersion: 'events.k8s.io/v1',
        kind: 'Event',
        metadata: {
          name: eventName(target.base, `${key}|${target.regarding.kind}`),
          namespace: target.namespace,
          ...(failure === undefined ? {} : { labels: { [failureCodeLabel]: failure } }),
        },
        eventTime: microTime(now),
        reportingController,
        reportingInstance: `${reportingController}-${hostname()}`.slice(0, 128),
        action: event.action,
        reason: event.reason,
        note,
        type: event.warning || failure !== undefined ? 'Warning' : 'Normal',
        regarding: target.regarding,
        related: target.related,
      });
    } catch (err) {
      if (err instanceof KubeError && err.kind === 'conflict') continue; // written by an earlier (replayed) call
      logger.warn('could not write a Kubernetes event', {
        reason: event.reason,
        zone: event.zone,
        error: err instanceof Error ? err.message : String(err),
      });
    }
  }
}
