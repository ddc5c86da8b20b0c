// A KubeObjects whose list and get of the watched kinds are answered from watch caches (watch-cache.ts) while they
// follow the API server, and by the API server otherwise (a cache not yet synced or retrying, a namespace or a
// label selector it does not cover). Writes always go to the API server. What it answers may be a moment behind
// the API server, as any informer is: a caller that acts on it re-reads from the live client first
// (plugin/zones/reconciler/reconciler.ts). One per cluster: it is built on that cluster's KubeConfig and live client.

import type { KubeConfig } from '@kubernetes/client-node';
import { describeRef, KubeError, type KubeObject, type KubeObjects } from './objects.ts';
import { WatchCache, type WatchedKind } from './watch-cache.ts';

export interface WatchedObjects {
  /** Reads of the watched kinds from the caches when fresh; everything else from `live`. */
  readonly kube: KubeObjects;
  readonly caches: readonly WatchCache[];
  /** Starts every cache; resolves when all have listed and opened their watch. */
  start(): Promise<void>;
  stop(): Promise<void>;
}

export interface WatchedObjectsOptions {
  kubeConfig: KubeConfig;
  kinds: readonly WatchedKind[];
  /** Namespaces to watch, '' for all (one cache per kind and namespace). */
  namespaces: readonly string[];
  onProblem?: (message: string) => void;
  /** Builds a cache (tests give fakes of the list and watch). */
  cache?: (kind: WatchedKind, namespace: string) => WatchCache;
}

export function watchedObjects(live: KubeObjects, options: WatchedObjectsOptions): WatchedObjects {
  const build =
    options.cache ??
    ((kind: WatchedKind, namespace: string) =>
      new WatchCache({
        kubeConfig: options.kubeConfig,
        kind,
        namespace,
        ...(options.onProblem === undefined ? {} : { onProblem: options.onProblem }),
      }));
  const caches = options.kinds.flatMap((kind) => options.namespaces.map((n) => build(kind, n)));
  /** A fresh cache of the kind that holds every object of `namespace`. */
  const covering = (apiVersion: string, kind: string, namespace: string) =>
    caches.find(
      (c) =>
        c.fresh &&
        c.kind.apiVersion === apiVersion &&
        c.kind.kind === kind &&
        (c.namespace === '' || c.namespace === namespace),
    );
  // Callers may change what they are given; the cache's objects must stay as the API server sent them.
  const copy = (object: KubeObject) => structuredClone(object);
  const kube: KubeObjects = {
    async get(ref) {
      const cache = covering(ref.apiVersion, ref.kind, ref.namespace);
      if (cache === undefined) return live.get(ref);
      const found = cache.get(ref.namespace, ref.name);
      if (found === undefined) {
        throw new KubeError('notFound', `reading ${describeRef(ref)}: not found (watch cache)`, 404);
      }
      return copy(found);
    },
    async list(apiVersion, kind, namespace, labelSelector) {
      const cache = labelSelector === undefined ? covering(apiVersion, kind, namespace) : undefined;
      if (cache === undefined) return live.list(apiVersion, kind, namespace, labelSelector);
      return cache.list(namespace).map(copy);
    },
    mergePatch: (ref, patch, resourceVersion, patchOptions) =>
      live.mergePatch(ref, patch, resourceVersion, patchOptions),
    create: (object) => live.create(object),
  };
  return {
    kube,
    caches,
    async start() {
      await Promise.all(caches.map((c) => c.start()));
    },
    async stop() {
      await Promise.all(caches.map((c) => c.stop()));
    },
  };
}
