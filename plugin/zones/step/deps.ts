// What every zone action and the reconciler work with: Kubernetes access, the clock, the logger, and the short
// waits inside a call that save a controller round trip.

import type { Clock, Logger } from '../../goplugin/index.ts';
import type { ClusterClients } from '../../kube/cluster-registry.ts';
import type { KubeObjects, ObjectChange } from '../../kube/objects.ts';

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

export const inCallPollMs = 250;

/** The kinds whose changes the in-call waits watch (main.ts): a drain or restore waits for the operator to take up
 *  the VMUser, and nothing else changes that answer meanwhile. */
export const inCallWatchedKinds = [
  { apiVersion: 'operator.victoriametrics.com/v1beta1', kind: 'VMUser', plural: 'vmusers' },
];

/**
 * Checks until `done` or `deps.inCallWaitMs` has passed (on `deps`' clock); the last answer is returned. Between
 * checks it waits for `changeOf(answer)` — a watch of what the answer rests on (KubeObjects.changeOf) — and
 * checks again only once that changed; without one it polls every 250 ms. With 50 walks waiting on VMUsers the
 * polls were most of the plugins' API requests (docs/scale.md). Every answer is still a fresh read; the watch
 * only says when one is worth making.
 */
export async function waitInCall<T>(
  deps: Pick<ZoneDeps, 'inCallWaitMs' | 'now' | 'sleep'>,
  check: () => Promise<T>,
  done: (value: T) => boolean,
  changeOf?: (value: T) => ObjectChange | undefined,
): Promise<T> {
  const deadline = deps.now().getTime() + deps.inCallWaitMs;
  for (;;) {
    const checkedAt = deps.now().getTime();
    const value = await check();
    if (done(value) || deps.now().getTime() + inCallPollMs > deadline) return value;
    const change = changeOf?.(value);
    if (change === undefined) {
      await deps.sleep(inCallPollMs);
      continue;
    }
    const woken = await Promise.race([
      change.changed.then(() => true),
      deps.sleep(Math.max(0, deadline - deps.now().getTime())).then(() => false),
    ]);
    change.cancel();
    // Nothing changed until the deadline: the answer stands (no read to find the same again).
    if (!woken) return value;
    // A watched copy behind the read wakes at once: never check more often than the polling did.
    const pause = checkedAt + inCallPollMs - deps.now().getTime();
    if (pause > 0) await deps.sleep(pause);
  }
}
