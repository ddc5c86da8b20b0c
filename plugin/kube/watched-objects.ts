// A KubeObjects whose list and get of the watched kinds are answered from watch caches (watch-cache.ts) while they
// follow the API server, and by the API server otherwise (a cache not yet synced or retrying, a namespace or a
// label selector it does not cover). Writes always go to the API server. What it answers may be a moment behind
// the API server, as any informer is: a caller that acts on it re-reads from the live client first
// (plugin/zones/reconciler/reconciler.ts). One per cluster: it is built on that cluster's client and live client.
// The caches also serve waits for one object to change (`changeOf`): the step's in-call waits read the API server
// again only when the watch saw the object change, instead of polling it (docs/scale.md). Kinds watched only for
// that (`changeKinds`) keep metadata alone and never answer reads.

import type { KubeClient } from './kube-client.ts';
import type { KubeConnection } from './kube-config.ts';
import {
  describeRef,
  KubeError,
  type KubeObject,
  type KubeObjects,
  kubeClientOf,
  type ObjectChange,
  type ObjectRef,
} from './objects.ts';
import { WatchCache, type WatchedKind } from './watch-cache.ts';

export interface WatchedObjects {
  /** Reads of the watched kinds from the caches when fresh; everything else from `live`. */
  readonly kube: KubeObjects;
  readonly caches: readonly WatchCache[];
  /** See KubeObjects.changeOf: from a fresh cache of any watched kind (changeKinds included), else undefined. */
  changeOf(ref: ObjectRef, seen: string | undefined): ObjectChange | undefined;
  /** Starts every cache; resolves when all have listed and opened their watch. */
  start(): Promise<void>;
  stop(): Promise<void>;
}

export interface WatchedObjectsOptions {
  /** The cluster; every cache shares its one client (one connection pool per cluster). */
  kubeConfig: KubeConnection | KubeClient;
  kinds: readonly WatchedKind[];
  /** Kinds watched only to wake waits for their changes (metadata only, no reads answered). */
  changeKinds?: readonly WatchedKind[];
  /** Namespaces to watch, '' for all (one cache per kind and namespace). */
  namespaces: readonly string[];
  onProblem?: (message: string) => void;
  /** Builds a cache (tests give fakes of the list and watch). */
  cache?: (kind: WatchedKind, namespace: string, metadataOnly: boolean) => WatchCache;
}

export function watchedObjects(live: KubeObjects, options: WatchedObjectsOptions): WatchedObjects {
  const client = kubeClientOf(options.kubeConfig);
  const build =
    options.cache ??
    ((kind: WatchedKind, namespace: string, metadataOnly: boolean) =>
      new WatchCache({
        kubeConfig: client,
        kind,
        namespace,
        metadataOnly,
        ...(options.onProblem === undefined ? {} : { onProblem: options.onProblem }),
      }));
  const caches = options.kinds.flatMap((kind) => options.namespaces.map((n) => build(kind, n, false)));
  const changeCaches = (options.changeKinds ?? []).flatMap((kind) =>
    options.namespaces.map((n) => build(kind, n, true)),
  );
  /** A fresh cache of the kind (among `from`) that holds every object of `namespace`. */
  const covering = (apiVersion: string, kind: string, namespace: string, from = caches) =>
    from.find(
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
  const all = [...caches, ...changeCaches];
  return {
    kube,
    caches: all,
    changeOf(ref, seen) {
      return covering(ref.apiVersion, ref.kind, ref.namespace, all)?.changeOf(ref.namespace, ref.name, seen);
    },
    async start() {
      await Promise.all(all.map((c) => c.start()));
    },
    async stop() {
      await Promise.all(all.map((c) => c.stop()));
    },
  };
}
