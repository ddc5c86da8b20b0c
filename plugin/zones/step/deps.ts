// What every zone action and the reconciler work with: Kubernetes access, the clock, the logger, and the short
// waits inside a call that save a controller round trip.

import type { Clock, Logger } from '../../goplugin/index.ts';
import type { ClusterClients } from '../../kube/cluster-registry.ts';
import type { KubeObjects } from '../../kube/objects.ts';
import type { BudgetReads } from '../../vm/read-safety.ts';
import type { ZoneQueueCheck } from '../moves/queue-check.ts';
import type { ServingReadings } from '../moves/serving-zones.ts';

export interface ZoneDeps extends Clock {
  /** The zone's objects, each in the cluster it lives in (vm/cluster-routing.ts). */
  kube: KubeObjects;
  /** Any registered cluster's client, for the other zones' VMClusters (docs/multicluster.md); where the drain
   *  budget reads them (vm/read-safety.ts BudgetReads: the step process's watched copies). */
  clusters: ClusterClients & BudgetReads;
  logger: Logger;
  /** How long a Run may wait in the call for something that usually comes quickly (a vmauth reload, the end of
   *  a short grace period) before it returns Running, which costs a controller round trip of at least 16 s. */
  inCallWaitMs: number;
  /** Before a drain, the zones that keep serving are checked (moves/serving-zones.ts): their readings kept by the
   *  step process, and the queue gate's reading (main.ts); absent: operational is enough (tests on objects alone). */
  serving?: { readings: ServingReadings; queueCheck?: ZoneQueueCheck };
}

/** The kinds whose changes the in-call waits watch (main.ts): a drain or restore waits for the operator to take up
 *  the VMUser, and nothing else changes that answer meanwhile. */
export const inCallWatchedKinds = [
  { apiVersion: 'operator.victoriametrics.com/v1beta1', kind: 'VMUser', plural: 'vmusers' },
];
