// Kubernetes events (events.k8s.io/v1) for every zone transition a person wants in `kubectl describe` and in Argo
// CD's event list: drained, changed, restored, lease refused, rollback requested, handed over, finished. Each is
// written on the Rollout and on the zone's VMCluster. Its name is derived from what happened (Rollout, revision,
// zone, reason, and a detail such as the generation), so a replayed Run creates nothing twice (409 AlreadyExists).
// Events are for people: a failure to write one is logged, never fails a step.

import { createHash } from 'node:crypto';
import { hostname } from 'node:os';
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
  | 'ZoneRecordRefused';

export interface ZoneEvent {
  reason: ZoneEventReason;
  /** What it did, as a verb for `action` (e.g. DrainReads). */
  action: string;
  note: string;
  warning?: boolean;
  holder: RolloutIdentity;
  zone: string;
  cluster: ObjectRef;
  /** Tells apart two events of one reason for the same zone and revision (e.g. a generation). */
  detail?: string;
  /** Written on the zone's object only: the holder comes from a refused record (zones/reconciler/record-trust.ts), and
   *  vmzones writes nothing into a namespace a record names. */
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
        },
        eventTime: microTime(now),
        reportingController,
        reportingInstance: `${reportingController}-${hostname()}`.slice(0, 128),
        action: event.action,
        reason: event.reason,
        note,
        type: event.warning ? 'Warning' : 'Normal',
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
