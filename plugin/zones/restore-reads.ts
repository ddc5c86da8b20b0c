// restoreReads: once the zone's VMCluster is operational at the applied generation, put back exactly what
// drainReads removed from the read balancer, wait until every vmauth replica serves it, then release the lease
// and the maintenance mark. Replay-safe: a zone that serves reads and holds no lease of ours is already restored.

import type { StepResult } from '../rollouts/types.ts';
import { vmclusterReadiness } from '../vm/vmcluster.ts';
import { waitInCall, type ZoneDeps } from './deps.ts';
import { emitZoneEvent } from './events.ts';
import { describeHandoff, leasedByOther } from './messages.ts';
import { running, StepFailure, successful } from './outcome.ts';
import {
  drainedFrom,
  latestChange,
  layerEvidence,
  readLayer,
  restoreLayer,
  routingTo,
} from './read-layer.ts';
import { describeHolder, sameRevision, sameRollout, timestamp } from './state.ts';
import type { ZoneTarget } from './target.ts';
import { loadCluster, openZoneAction, patchCluster, releasePatch } from './vmcluster-state.ts';

export async function restoreReads(deps: ZoneDeps, target: ZoneTarget): Promise<StepResult> {
  const { kube } = deps;
  const { zone, name, status, cluster, state } = await openZoneAction(kube, target, 'restoreReads');

  if (state.handoff !== undefined) {
    return running(
      `zone ${zone}: the vmzones reconciler is finishing ${name} ${describeHandoff(state.handoff)}`,
      { ...status, state: 'waitingForHandoff' },
    );
  }
  if (!sameRevision(state.lease, target.who)) {
    const layer = await readLayer(deps, target.reads);
    const serving = routingTo(layer, zone);
    if (serving.length > 0 && drainedFrom(layer, zone).length === 0 && state.lease === undefined) {
      return successful(
        `zone ${zone}: ${name} serves reads through ${serving.map((b) => b.describe).join(', ')} and holds no lease; nothing left to restore`,
        { ...status, state: 'restored' },
      );
    }
    if (state.lease !== undefined && !sameRollout(state.lease, target.who)) {
      throw new StepFailure(leasedByOther(target.cluster, zone, state.lease));
    }
    throw new StepFailure(
      `drainReads for zone ${zone} has not run for this revision: ${name} holds no lease of ${describeHolder(target.who)}`,
    );
  }

  const applied = sameRevision(state.rollback, target.who) ? state.rollback : undefined;
  // The operator usually finishes within seconds of the first look: wait a little here rather than a round trip.
  const readiness = await waitInCall(
    deps,
    async () => vmclusterReadiness(await kube.get(target.cluster), applied?.generation),
    (r) => r.state !== 'progressing',
  );
  status.generation = applied?.generation ?? cluster.generation;
  if (readiness.state === 'failed') {
    throw new StepFailure(
      `zone ${zone}: ${readiness.message}. Its reads stay drained; the rollout aborts and vmzones rolls the zone back, restoring its reads once it is operational again`,
    );
  }
  if (readiness.state !== 'ready') {
    const started = applied?.appliedAt ?? state.lease?.since ?? timestamp(deps.now());
    const deadline = new Date(new Date(started).getTime() + target.readyTimeoutMs);
    if (deps.now() > deadline) {
      throw new StepFailure(
        `zone ${zone}: ${name} did not become operational within readyTimeout ${target.spec.readyTimeout} (since ${started}): ${readiness.message}. Its reads stay drained`,
      );
    }
    return running(
      `zone ${zone}: reads stay drained until ${name} is operational at generation ${status.generation}; ${readiness.message} (since ${started}, readyTimeout ${target.spec.readyTimeout})`,
      { ...status, state: 'waitingForVMCluster', since: started },
    );
  }
  status.operational = readiness.message;

  const layer = await readLayer(deps, target.reads);
  const restored = await restoreLayer(layer, zone, deps);
  if (restored.length > 0) {
    deps.logger.info('zone put back into reads', {
      zone,
      balancer: restored.map((b) => b.describe).join(', '),
    });
  }
  const after = await readLayer(deps, target.reads);
  const serving = routingTo(after, zone);
  if (serving.length === 0) {
    throw new StepFailure(
      `zone ${zone}: what drainReads removed is back in ${after.describe}, yet no balancer routes reads to ${name}; check the balancers by hand`,
    );
  }
  const leasedSince = new Date(state.lease?.since ?? 0);
  // The balancers vmzones changed during this lease must prove they serve the zone again; one whose routing was
  // last changed before the lease never stopped serving it.
  const changed = serving.filter((b) => (b.routing.changedAt?.getTime() ?? -1) >= leasedSince.getTime());
  const since = latestChange(changed) ?? leasedSince;
  status.restoredAt = timestamp(since);
  const servingNames = serving.map((b) => b.describe).join(', ');
  const evidence = await waitInCall(
    deps,
    () => layerEvidence(changed, leasedSince),
    (e) => e.state !== 'waiting',
  );
  if (evidence.state === 'waiting') {
    return running(
      `zone ${zone}: ${name} is operational and was put back into ${servingNames} at ${timestamp(since)}; waiting until every vmauth replica serves that: ${evidence.message}`,
      { ...status, state: 'waitingForVmauth' },
    );
  }
  const reread = await loadCluster(kube, target.cluster, zone);
  await patchCluster(kube, target.cluster, releasePatch, reread.resourceVersion);
  deps.logger.info('zone released', { zone, vmcluster: name });
  const message = `zone ${zone}: ${name} is operational at generation ${status.generation} and serves reads through ${servingNames} again (${evidence.message}); lease and maintenance released`;
  await emitZoneEvent(
    kube,
    deps.logger,
    {
      reason: 'ZoneRestored',
      action: 'RestoreReads',
      note: message,
      holder: target.who,
      zone,
      cluster: target.cluster,
      detail: String(status.generation),
    },
    deps.now(),
  );
  return successful(message, { ...status, state: 'restored', releasedAt: timestamp(deps.now()) });
}
