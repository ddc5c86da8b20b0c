// What every zone action and the reconciler work with: Kubernetes access, the clock, the logger, and the short
// waits inside a call that save a controller round trip.

import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from '../goplugin/index.ts';
import type { ClusterClients } from '../kube/cluster-registry.ts';
import type { KubeObjects } from '../kube/objects.ts';

export interface ZoneDeps {
  /** The zone's objects, each in the cluster it lives in (zones/cluster-routing.ts). */
  kube: KubeObjects;
  /** Any registered cluster's client, for the other zones' VMClusters (docs/multicluster.md). */
  clusters: ClusterClients;
  now(): Date;
  logger: Logger;
  /** How long a Run may wait in the call for something that usually comes quickly (a vmauth reload, the end of
   *  a short grace period) before it returns Running, which costs a controller round trip of at least 16 s. */
  inCallWaitMs: number;
  /** Sleeps inside a call (the end of a short grace period); absent: node:timers/promises. */
  sleep?: (ms: number) => Promise<void>;
}

const inCallPollMs = 250;

/** Polls `check` until it returns a value or `deps.inCallWaitMs` has passed; the last answer is returned. */
export async function waitInCall<T>(
  deps: Pick<ZoneDeps, 'inCallWaitMs'>,
  check: () => Promise<T>,
  done: (value: T) => boolean,
): Promise<T> {
  const deadline = Date.now() + deps.inCallWaitMs;
  for (;;) {
    const value = await check();
    if (done(value) || Date.now() + inCallPollMs > deadline) return value;
    await sleep(inCallPollMs);
  }
}
