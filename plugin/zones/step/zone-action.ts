// What every step action starts from: the zone's object read with its vmzones state (missing: a StepFailure naming
// the zone), the status document naming the zone and its object, and the opening the actions share while the zone
// is handed to the reconciler.

import type { KubeObjects, ObjectRef } from '../../kube/objects.ts';
import type { StepResult } from '../../rollouts/types.ts';
import { describeCluster, describeHandoff } from '../state/messages.ts';
import { type Handoff, sameRollout, type ZoneState } from '../state/zone-annotations.ts';
import { zoneIntent } from '../state/zone-intent.ts';
import { type LoadedCluster, loadedCluster } from '../state/zone-object.ts';
import { required, type StatusDocument } from './outcome.ts';
import { type WaitClock, waitForReconciler } from './step-waits.ts';
import type { ZoneTarget } from './target.ts';

/** The VMCluster and its vmzones annotations; missing → StepFailure naming the zone. */
export async function loadCluster(kube: KubeObjects, ref: ObjectRef, zone: string): Promise<LoadedCluster> {
  return loadedCluster(
    await required(kube.get(ref), `${describeCluster(ref)} of zone ${zone} does not exist`),
  );
}

/** What every action starts from: the status document naming the zone and its VMCluster, and the cluster now. */
export interface ZoneActionStart {
  zone: string;
  name: string;
  status: StatusDocument;
  cluster: LoadedCluster;
  state: ZoneState;
}

export async function openZoneAction(
  kube: KubeObjects,
  target: ZoneTarget,
  action: string,
): Promise<ZoneActionStart> {
  const zone = target.config.zone;
  const cluster = await loadCluster(kube, target.cluster, zone);
  return {
    zone,
    name: describeCluster(target.cluster),
    status: { zone, action, vmcluster: `${target.cluster.namespace}/${target.cluster.name}` },
    cluster,
    state: cluster.state,
  };
}

/**
 * The opening every action shares while the zone is handed to the reconciler: the reconciler finishes it first
 * (Running, up to 2 × readyTimeout, step-waits.ts). Only drainReads (`mayTakeBack`) takes back a zone an older
 * revision of its own Rollout left in hand (superseded, promoted past): not a rollback, not another Rollout's
 * work, not while the reconciler puts its reads back. undefined: no handoff; `takeBack`: take it back.
 */
export function handoffOpening(
  deps: WaitClock,
  target: ZoneTarget,
  previous: unknown,
  opened: ZoneActionStart,
  mayTakeBack: boolean,
): { wait: StepResult } | { takeBack: Handoff } | undefined {
  const { handoff, maintenance } = opened.state;
  // Who moves next and what is wanted: the zone's stored intent (state/zone-intent.ts); the handoff says who handed
  // over and since when.
  const intent = zoneIntent(opened.state);
  if (intent?.nextMove !== 'reconciler' || handoff === undefined) return undefined;
  const restoring = maintenance?.restoringSince !== undefined;
  if (mayTakeBack && intent.wants !== 'rolledBack' && sameRollout(intent.holder, target.who) && !restoring) {
    return { takeBack: handoff };
  }
  return {
    wait: waitForReconciler(
      deps,
      target,
      previous,
      handoff,
      `zone ${opened.zone}: waiting for the vmzones reconciler to finish earlier work on ${opened.name} ${describeHandoff(handoff)}${restoring ? ' (it is putting reads back)' : ''}`,
      opened.status,
    ),
  };
}
