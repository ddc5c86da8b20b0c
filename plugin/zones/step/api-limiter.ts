// The step process's API calls to one cluster, bounded: the zones of a wave move at once (step/wave.ts), so a wide
// wave would otherwise send every zone's reads and writes to one API server together. Each cluster gets its own
// bound; a call waits for a free place, in the order the calls came. Waits for changes (`changeOf`) are no calls.

import type { ClusterClients } from '../../kube/cluster-registry.ts';
import type { KubeObjects } from '../../kube/objects.ts';
import type { BudgetReads } from '../../vm/read-safety.ts';

/** API calls in flight at once to one cluster from the step process (docs/step-plugin.md "Waves"). */
export const apiCallsPerCluster = 4;

/** At most `limit` of the calls it runs at once; the others wait in line. */
export class CallLimiter {
  readonly #limit: number;
  #running = 0;
  readonly #queue: (() => void)[] = [];

  constructor(limit: number) {
    if (!Number.isInteger(limit) || limit < 1)
      throw new Error(`a call limit must be a whole number ≥ 1: ${limit}`);
    this.#limit = limit;
  }

  /** Calls in flight now (tests). */
  get running(): number {
    return this.#running;
  }

  async run<T>(call: () => Promise<T>): Promise<T> {
    if (this.#running >= this.#limit) await new Promise<void>((resolve) => this.#queue.push(resolve));
    else this.#running++;
    try {
      return await call();
    } finally {
      // The place goes straight to the next in line (the count stays), or is given back.
      const next = this.#queue.shift();
      if (next === undefined) this.#running--;
      else next();
    }
  }
}

/** `kube` with its calls run by `limiter`. */
export function limitedObjects(kube: KubeObjects, limiter: CallLimiter): KubeObjects {
  const changeOf = kube.changeOf;
  return {
    get: (ref) => limiter.run(() => kube.get(ref)),
    list: (apiVersion, kind, namespace, labelSelector) =>
      limiter.run(() => kube.list(apiVersion, kind, namespace, labelSelector)),
    mergePatch: (ref, patch, resourceVersion, options) =>
      limiter.run(() => kube.mergePatch(ref, patch, resourceVersion, options)),
    create: (object) => limiter.run(() => kube.create(object)),
    ...(kube.registration === undefined ? {} : { registration: kube.registration }),
    ...(changeOf === undefined ? {} : { changeOf: (ref, seen) => changeOf.call(kube, ref, seen) }),
  };
}

/**
 * The registered clusters' clients, each bounded by a limiter of its own (the same for every client of one
 * cluster); `zoneObjects`: where the drain budget reads the other zones' objects (vm/read-safety.ts BudgetReads),
 * the controller's own cluster's watched copies when given.
 */
export function limitedClusters(
  clusters: ClusterClients,
  limit: number,
  hubZoneObjects?: Pick<KubeObjects, 'get'>,
): ClusterClients & BudgetReads {
  const limiters = new Map<string, CallLimiter>();
  const limiterOf = (cluster: string) => {
    let limiter = limiters.get(cluster);
    if (limiter === undefined) {
      limiter = new CallLimiter(limit);
      limiters.set(cluster, limiter);
    }
    return limiter;
  };
  const client = async (cluster: string | undefined) => {
    const kube = await clusters.client(cluster);
    // The controller's own cluster: its client is limited where it is made (step-plugin.ts).
    return cluster === undefined ? kube : limitedObjects(kube, limiterOf(cluster));
  };
  return {
    client,
    registration: (cluster) => clusters.registration(cluster),
    names: () => clusters.names(),
    zoneObjects: async (cluster) =>
      cluster === undefined && hubZoneObjects !== undefined ? hubZoneObjects : client(cluster),
  };
}
