// What the reconciler does for one handed-over zone, one move per pass, each decided from the VMCluster and the
// read balancer as they are now (so a restart anywhere resumes):
//   rollback requested → take the zone out of reads (if it serves any, and only when that is safe) → wait for
//   vmauth and the grace period → put back the recorded values → wait until operational → restore reads → wait for
//   vmauth → release the lease, the maintenance mark and the handoff.

import type { Logger } from '../goplugin/index.ts';
import type { NamespaceAllowance } from '../kube/allowed-namespaces.ts';
import type { ClusterClients } from '../kube/cluster-registry.ts';
import { parseGoDurationMs } from '../kube/go-duration.ts';
import type { KubeObjects, ObjectRef } from '../kube/objects.ts';
import { vmclusterReadiness } from '../vm/vmcluster.ts';
import { defaultZoneKind, zoneKindOf } from '../vm/zone-kinds.ts';
import type { ZoneQueueCheck } from './completeness.ts';
import { emitZoneEvent } from './events.ts';
import { deepEqual, revertPatch, valueAt } from './merge-patch.ts';
import { describeCluster } from './messages.ts';
import { isConflict } from './outcome.ts';
import {
  drainedFrom,
  drainLayer,
  lastZoneThrough,
  latestChange,
  layerDrainBlocker,
  layerEvidence,
  readLayer,
  restoreLayer,
  routingTo,
} from './read-layer.ts';
import { graceWindow } from './read-safety.ts';
import { trustedHandoff } from './record-trust.ts';
import {
  annotationValue,
  describeHolder,
  type Handoff,
  handoffAnnotation,
  type Lease,
  leaseAnnotation,
  type Maintenance,
  maintenanceAnnotation,
  maintenanceLabel,
  pendingLabel,
  recordedBalancers,
  rollbackAnnotation,
  sameRevision,
  sameRollout,
  timestamp,
  zoneState,
} from './state.ts';
import { patchCluster } from './vmcluster-state.ts';
import { holderExists } from './walk.ts';

/** done: released; working: in progress; blocked: cannot move now (waits for another zone or Rollout). */
export type ZoneProgress = 'done' | 'working' | 'blocked';

export interface FinishDeps {
  /** The zone's objects, each in its own cluster (zones/cluster-routing.ts). */
  kube: KubeObjects;
  clusters: ClusterClients;
  logger: Logger;
  now(): Date;
  /** Without it (tests of the decisions), a zone is complete once operational. */
  queueCheck?: ZoneQueueCheck;
  /** What the handoff is checked against (zones/record-trust.ts): the plugin's `--allowed-namespaces`, and the
   *  registered cluster the zone object lives in (undefined = the controller's own). */
  records: { allowance: NamespaceAllowance; zoneCluster: string | undefined };
}

/** Advances one VMCluster's handed-over work as far as it can go now. */
export async function finishZone(deps: FinishDeps, ref: ObjectRef): Promise<ZoneProgress> {
  const { kube } = deps;
  const name = describeCluster(ref);
  let cluster = await kube.get(ref);
  let state = zoneState(cluster);
  // Acts only on what the holder's spec document or the checks say, never on the annotation as written.
  const handoff = await trustedHandoff(deps, ref, state.handoff);
  if (handoff === undefined) {
    await patchCluster(kube, ref, { labels: { [pendingLabel]: null } }, cluster.metadata.resourceVersion);
    return 'done';
  }
  const zone = handoff.zone;
  // Progress goes into the handoff annotation, for `kubectl get vmcluster -o yaml` readers.
  const note = async (message: string, progress: ZoneProgress): Promise<ZoneProgress> => {
    if (handoff.message === message) return progress;
    deps.logger.info('reconciler', { vmcluster: `${ref.namespace}/${ref.name}`, zone, message });
    const latest = await kube.get(ref);
    const current = zoneState(latest).handoff;
    if (current === undefined) return progress;
    const updated: Handoff = { ...current, message, updatedAt: timestamp(deps.now()) };
    try {
      await patchCluster(
        kube,
        ref,
        { annotations: { [handoffAnnotation]: annotationValue(updated) } },
        latest.metadata.resourceVersion,
      );
    } catch (err) {
      // The operator wrote status meanwhile; the next pass notes the message again.
      if (!isConflict(err)) throw err;
    }
    return progress;
  };

  if (state.lease !== undefined && !sameRollout(state.lease, handoff.holder)) {
    if (await holderExists(kube, state.lease)) {
      return note(
        `waiting: ${name} is leased by ${describeHolder(state.lease)} since ${state.lease.since}`,
        'blocked',
      );
    }
  }
  if (state.lease === undefined || !sameRollout(state.lease, handoff.holder)) {
    const lease: Lease = { ...handoff.holder, zone, since: timestamp(deps.now()) };
    cluster = await patchCluster(
      kube,
      ref,
      { annotations: { [leaseAnnotation]: annotationValue(lease) } },
      cluster.metadata.resourceVersion,
    );
    state = zoneState(cluster);
  }

  const rollback = state.rollback;
  const reads = recordedBalancers(handoff.reads);
  if (
    handoff.rollback &&
    rollback !== undefined &&
    sameRevision(rollback, handoff.holder) &&
    rollback.phase === 'requested'
  ) {
    const layer = await readLayer(deps, reads);
    if (routingTo(layer, zone).length > 0) {
      const last = lastZoneThrough(layer, zone);
      if (last !== undefined) {
        return note(
          `waiting: zone ${zone} is the last zone serving reads through ${last.describe}; it cannot be rolled back until another zone serves reads`,
          'blocked',
        );
      }
      const blocker = await layerDrainBlocker(deps.clusters, layer, zone, true);
      if (blocker !== undefined) return note(`waiting to roll back zone ${zone}: ${blocker}`, 'blocked');
      if (state.maintenance === undefined) {
        const maintenance: Maintenance = {
          zone,
          since: timestamp(deps.now()),
          reason: `rollback (${handoff.by})`,
        };
        cluster = await patchCluster(
          kube,
          ref,
          {
            annotations: { [maintenanceAnnotation]: annotationValue(maintenance) },
            labels: { [maintenanceLabel]: 'true' },
          },
          cluster.metadata.resourceVersion,
        );
      }
      await drainLayer(layer, zone, `rollback of ${describeHolder(handoff.holder)}`, deps.now());
      return note(
        `took zone ${zone} out of ${layer.describe} for the rollback; waiting for vmauth`,
        'working',
      );
    }
    const drained = drainedFrom(layer, zone);
    const fallback = new Date(state.maintenance?.since ?? 0);
    const since = latestChange(drained) ?? fallback;
    const evidence = await layerEvidence(drained, fallback);
    if (evidence.state === 'waiting') {
      return note(
        `rollback: waiting until vmauth serves reads without zone ${zone}: ${evidence.message}`,
        'working',
      );
    }
    const { graceUntil } = graceWindow(evidence, since, parseGoDurationMs(handoff.drainGracePeriod));
    if (deps.now() < graceUntil) {
      return note(`rollback: grace period for queries in flight until ${timestamp(graceUntil)}`, 'working');
    }
    // Only fields that still hold the value we wrote go back: a later edit by someone else is not ours to undo.
    const stillOurs = rollback.changes.filter((c) => deepEqual(valueAt(cluster.spec, c.path), c.after));
    const revert = revertPatch(stillOurs.map((c) => ({ path: c.path, before: c.before, after: c.after })));
    await patchCluster(
      kube,
      ref,
      {
        annotations: {
          [rollbackAnnotation]: annotationValue({
            ...rollback,
            phase: 'reverted',
            revertedAt: timestamp(deps.now()),
          }),
        },
        ...(stillOurs.length > 0 ? { spec: revert } : {}),
      },
      cluster.metadata.resourceVersion,
    );
    return note(
      `rolled back ${stillOurs.length} of ${rollback.changes.length} fields of ${name}${stillOurs.length < rollback.changes.length ? ' (the others were changed by someone else since)' : ''}; waiting until it is operational`,
      'working',
    );
  }

  const readiness = vmclusterReadiness(cluster);
  if (readiness.state !== 'ready') {
    if (readiness.state === 'failed')
      deps.logger.warn('reconciler: zone failed; its reads stay drained', {
        zone,
        message: readiness.message,
      });
    return note(`reads of zone ${zone} stay drained: ${readiness.message}`, 'working');
  }
  const layer = await readLayer(deps, reads);
  if (drainedFrom(layer, zone).length > 0) {
    // Complete again: operational and every vmagent queue for it delivered (the vmagentQueueDrained evidence).
    if (deps.queueCheck !== undefined && (handoff.vmagents?.length ?? 0) > 0) {
      const kind = zoneKindOf(ref.kind) ?? defaultZoneKind;
      const reading = await deps.queueCheck(
        {
          zone: kube,
          vmagents: await deps.clusters.client(handoff.vmagentsCluster),
          vmagentsCluster: await deps.clusters.registration(handoff.vmagentsCluster),
        },
        {
          namespace: ref.namespace,
          vmcluster: ref.name,
          // Absent means VMCluster, as in the records handed over before zone kinds.
          ...(kind === defaultZoneKind ? {} : { kind: kind.kind }),
          vmagents: handoff.vmagents ?? [],
          ...(handoff.vminsertHosts === undefined ? {} : { vminsertHosts: handoff.vminsertHosts }),
        },
        handoff.queueState,
        deps.now().getTime(),
      );
      if (reading.verdict !== 'pass') {
        await saveQueueState(deps, ref, reading.state);
        return note(
          reading.verdict === 'fail'
            ? `reads of zone ${zone} stay drained: ${reading.message}; check the zone's data, then restore its reads by hand`
            : `${name} is operational; reads come back once its vmagent queues have drained: ${reading.message}`,
          'working',
        );
      }
    }
    const restored = await restoreLayer(layer, zone, deps.now());
    return note(
      `${name} is operational; put zone ${zone} back into ${restored.map((b) => b.describe).join(', ')}; waiting for vmauth`,
      'working',
    );
  }
  const serving = routingTo(layer, zone).filter((b) => b.routing.changedAt !== undefined);
  if (serving.length > 0) {
    const evidence = await layerEvidence(serving, new Date(0));
    if (evidence.state === 'waiting')
      return note(`waiting until vmauth serves reads of zone ${zone} again: ${evidence.message}`, 'working');
  }
  const latest = await kube.get(ref);
  const reverted = zoneState(latest).rollback?.phase === 'reverted';
  await patchCluster(
    kube,
    ref,
    {
      annotations: {
        [leaseAnnotation]: null,
        [maintenanceAnnotation]: null,
        [handoffAnnotation]: null,
        ...(reverted ? { [rollbackAnnotation]: null } : {}),
      },
      labels: { [pendingLabel]: null, [maintenanceLabel]: null },
    },
    latest.metadata.resourceVersion,
  );
  await emitZoneEvent(
    kube,
    deps.logger,
    {
      reason: reverted ? 'ZoneRolledBack' : 'ZoneFinished',
      action: 'Reconcile',
      note: `zone ${zone}: ${name} ${reverted ? 'was rolled back and ' : ''}serves reads again; lease and maintenance released (${handoff.by})`,
      holder: handoff.holder,
      zone,
      cluster: ref,
      detail: handoff.requestedAt,
    },
    deps.now(),
  );
  deps.logger.info('reconciler: zone finished', {
    zone,
    vmcluster: `${ref.namespace}/${ref.name}`,
    rolledBack: reverted,
    why: handoff.by,
  });
  return 'done';
}

/** Keeps the queue check's rounds in the handoff, so that the next pass (of any process) goes on from them. */
async function saveQueueState(deps: FinishDeps, ref: ObjectRef, queueState: unknown): Promise<void> {
  const latest = await deps.kube.get(ref);
  const current = zoneState(latest).handoff;
  if (current === undefined) return;
  try {
    await patchCluster(
      deps.kube,
      ref,
      { annotations: { [handoffAnnotation]: annotationValue({ ...current, queueState }) } },
      latest.metadata.resourceVersion,
    );
  } catch (err) {
    if (!isConflict(err)) throw err;
  }
}
