// drainReads: take the zone's vmselect out of the read balancer and stay Running until every vmauth replica
// serves the routing without it, plus the grace period for queries in flight. Replay-safe: the balancer records
// what was removed, so a replayed Run finds the zone already out and only waits.

import { KubeError } from '../kube/objects.ts';
import type { StepResult } from '../rollouts/types.ts';
import { ReadRoutingError } from '../vm/read-backends.ts';
import { waitInCall, type ZoneDeps } from './deps.ts';
import { emitZoneEvent } from './events.ts';
import { describeHandoff, leasedByOther } from './messages.ts';
import { required, running, StepFailure, successful } from './outcome.ts';
import {
  describeBalancerConfig,
  drainedFrom,
  drainLayer,
  drainRecordOf,
  lastZoneThrough,
  latestChange,
  layerDrainBlocker,
  layerEvidence,
  readLayer,
  routingTo,
} from './read-layer.ts';
import { graceWindow } from './read-safety.ts';
import {
  annotationValue,
  describeHolder,
  handoffAnnotation,
  type Lease,
  leaseAnnotation,
  pendingLabel,
  readsRecord,
  sameRevision,
  sameRollout,
  timestamp,
} from './state.ts';
import { agentsCluster, type ZoneTarget } from './target.ts';
import { leasePatch, loadCluster, openZoneAction, patchCluster, releasePatch } from './vmcluster-state.ts';
import { holderExists } from './walk.ts';

/** How much later than RequeueAfter the controller calls Run again (measured by npm run bench, dead time). */
const controllerRequeueLagMs = 5_000;

export async function drainReads(deps: ZoneDeps, target: ZoneTarget): Promise<StepResult> {
  const { kube } = deps;
  const {
    zone,
    name: clusterName,
    status,
    cluster,
    state,
  } = await openZoneAction(kube, target, 'drainReads');

  let tookOver = '';
  let resourceVersion = cluster.resourceVersion;
  if (state.handoff !== undefined) {
    // A zone an older revision of this Rollout left in hand (superseded, promoted past) is this walk's to take
    // again; a rollback or another Rollout's work is finished by the reconciler first.
    if (state.handoff.rollback || !sameRollout(state.handoff.holder, target.who)) {
      return running(
        `zone ${zone}: waiting for the vmzones reconciler to finish earlier work on ${clusterName} ${describeHandoff(state.handoff)}`,
        { ...status, state: 'waitingForHandoff', since: state.handoff.requestedAt },
      );
    }
    const lease: Lease = {
      ...target.who,
      zone,
      since: timestamp(deps.now()),
      reads: readsRecord(target.reads),
      drainGracePeriod: target.drainGracePeriod,
      vmagents: target.vmagents,
      ...agentsCluster(target),
    };
    const written = await patchCluster(
      kube,
      target.cluster,
      {
        annotations: { [handoffAnnotation]: null, [leaseAnnotation]: annotationValue(lease) },
        labels: { [pendingLabel]: null },
      },
      resourceVersion,
    );
    resourceVersion = written.metadata.resourceVersion ?? '';
    state.lease = lease;
    tookOver = ` (took the zone back from the vmzones reconciler: ${state.handoff.by})`;
  }
  if (state.lease !== undefined && !sameRollout(state.lease, target.who)) {
    if (await holderExists(kube, state.lease)) {
      const refused = leasedByOther(target.cluster, zone, state.lease);
      await emitZoneEvent(
        kube,
        deps.logger,
        {
          reason: 'ZoneLeaseRefused',
          action: 'DrainReads',
          note: refused,
          warning: true,
          holder: target.who,
          zone,
          cluster: target.cluster,
          detail: state.lease.since,
        },
        deps.now(),
      );
      throw new StepFailure(refused);
    }
    tookOver = ` (took over the lease of ${describeHolder(state.lease)}, which no longer exists)`;
  }

  const layer = await required(
    readLayer(deps, target.reads),
    `a read balancer of the spec document (vmauth: ${target.reads.map(describeBalancerConfig).join(', ')}) does not exist`,
  );
  status.balancer = layer.describe;
  const routed = routingTo(layer, zone).length > 0;
  if (!routed && drainedFrom(layer, zone).length === 0) {
    throw new StepFailure(
      `${layer.describe} ${target.reads.length === 1 ? 'does' : 'do'} not route reads to zone ${zone} (${clusterName}), so there is nothing to drain; check the zone's vmselectHosts`,
    );
  }
  const last = lastZoneThrough(layer, zone);
  if (last !== undefined) {
    throw new StepFailure(
      `refusing to drain zone ${zone}: it is the last zone that serves reads through ${last.describe}`,
    );
  }
  if (routed) {
    const blocker = await layerDrainBlocker(deps.clusters, layer, zone, false);
    if (blocker !== undefined) {
      return running(`zone ${zone}: not drained yet: ${blocker}`, {
        ...status,
        state: 'waitingForOtherZones',
      });
    }
  }

  const now = deps.now();
  let leaseTaken = false;
  if (!sameRevision(state.lease, target.who) || state.maintenance === undefined) {
    await patchCluster(
      kube,
      target.cluster,
      leasePatch(target, now, `drainReads by ${describeHolder(target.who)}`),
      resourceVersion,
    );
    leaseTaken = !sameRollout(state.lease, target.who);
    deps.logger.info('zone leased', { zone, vmcluster: status.vmcluster, holder: target.who.rollout });
  }
  if (routed) {
    try {
      await drainLayer(layer, zone, `drainReads by ${describeHolder(target.who)}`, deps);
      deps.logger.info('zone taken out of reads', { zone, balancer: layer.describe });
    } catch (err) {
      const final =
        err instanceof ReadRoutingError ||
        (err instanceof KubeError && (err.kind === 'forbidden' || err.kind === 'invalid'));
      // Taken out of one balancer and refused by the next: the lease stays, so that the zone's drain is finished
      // (or put back by Abort) rather than forgotten.
      const drainedSomewhere = drainedFrom(await readLayer(deps, target.reads), zone).length > 0;
      if (final && leaseTaken && !drainedSomewhere) {
        // Nothing was drained: give the zone back so that nobody waits for a lease that protects nothing.
        const reread = await loadCluster(kube, target.cluster, zone);
        await patchCluster(kube, target.cluster, releasePatch, reread.resourceVersion);
      }
      throw err;
    }
  }

  const after = await readLayer(deps, target.reads);
  const changed = drainedFrom(after, zone);
  const drainedAt = drainRecordOf(after, zone)?.at ?? timestamp(now);
  const since = latestChange(changed) ?? new Date(drainedAt);
  status.drainedAt = timestamp(new Date(drainedAt));
  const evidence = await waitInCall(
    deps,
    () => layerEvidence(changed, new Date(drainedAt)),
    (e) => e.state !== 'waiting',
  );
  const what = `zone ${zone}: ${clusterName} was taken out of ${changed.map((b) => b.describe).join(', ') || after.describe} at ${status.drainedAt}${tookOver}`;
  if (evidence.state === 'waiting') {
    const deadline = new Date(since.getTime() + target.readyTimeoutMs);
    if (deps.now() > deadline) {
      throw new StepFailure(
        `${what}; vmauth did not confirm serving that within readyTimeout ${target.spec.readyTimeout}: ${evidence.message}. The rollout aborts and vmzones puts the zone back`,
      );
    }
    return running(`${what}; waiting until every vmauth replica serves that: ${evidence.message}`, {
      ...status,
      state: 'waitingForVmauth',
    });
  }
  const { servedSince, graceUntil } = graceWindow(evidence, since, target.drainGraceMs);
  status.reloadedAt = timestamp(servedSince);
  status.graceUntil = timestamp(graceUntil);
  let current = deps.now();
  const remainingMs = graceUntil.getTime() - current.getTime();
  if (remainingMs > 0 && remainingMs <= deps.inCallWaitMs) {
    await deps.sleep(remainingMs);
    current = deps.now();
  }
  if (current < graceUntil) {
    return running(
      `${what}; ${evidence.message}; grace period ${target.drainGracePeriod} for queries in flight until ${timestamp(graceUntil)}`,
      { ...status, state: 'grace' },
      // The controller runs a Running step again about 5 s after RequeueAfter; ask that much earlier and let the
      // in-call wait sleep off the rest, so the step ends at the end of the grace rather than up to 5 s later.
      graceUntil.getTime() - current.getTime() - controllerRequeueLagMs,
    );
  }
  const message = `${what}; ${evidence.message}; grace period ${target.drainGracePeriod} over. ${clusterName} is leased by ${describeHolder(target.who)} and in maintenance`;
  await emitZoneEvent(
    kube,
    deps.logger,
    {
      reason: 'ZoneDrained',
      action: 'DrainReads',
      note: message,
      holder: target.who,
      zone,
      cluster: target.cluster,
      detail: status.drainedAt as string,
    },
    current,
  );
  return successful(message, { ...status, state: 'drained' });
}
