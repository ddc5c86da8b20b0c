// What every zone action and the reconciler work with: Kubernetes access, the clock, the logger, and the short
// waits inside a call that save a controller round trip.

import type { Clock, Logger } from '../../goplugin/index.ts';
import type { ClusterClients } from '../../kube/cluster-registry.ts';
import type { KubeObjects } from '../../kube/objects.ts';

export interface ZoneDeps extends Clock {
  /** The zone's objects, each in the cluster it lives in (vm/cluster-routing.ts). */
  kube: KubeObjects;
  /** Any registered cluster's client, for the other zones' VMClusters (docs/multicluster.md). */
  clusters: ClusterClients;
  logger: Logger;
  /** How long a Run may wait in the call for something that usually comes quickly (a vmauth reload, the end of
   *  a short grace period) before it returns Running, which costs a controller round trip of at least 16 s. */
  inCallWaitMs: number;
}

const inCallPollMs = 250;

/** Polls `check` until it returns a value or `deps.inCallWaitMs` has passed (on `deps`' clock); the last answer
 *  is returned. */
export async function waitInCall<T>(
  deps: Pick<ZoneDeps, 'inCallWaitMs' | 'now' | 'sleep'>,
  check: () => Promise<T>,
  done: (value: T) => boolean,
): Promise<T> {
  const deadline = deps.now().getTime() + deps.inCallWaitMs;
  for (;;) {
    const value = await check();
    if (done(value) || deps.now().getTime() + inCallPollMs > deadline) return value;
    await deps.sleep(inCallPollMs);
  }
}
