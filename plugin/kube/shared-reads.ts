// Reads that several waiters of one process may share: the zones of a wave waiting for vmauth's evidence of their
// own routing change each read the same balancer and list the same vmauth pods every poll (issue 38: most of the
// waves walk's requests). A waiter only needs reads that began after its wait began (which is after its change was
// written and read back): such a read sees the change, as its own would. So a read of the same object or list
// that began at or after that moment, and no longer ago than `sharedReadWindowMs` (one poll), answers every such
// waiter; anything else is read anew.

import type { KubeObject, KubeObjects, ObjectRef } from './objects.ts';

/** At most one poll of an in-call wait (zones/moves/in-call-wait.ts, 250 ms): a shared answer is never older than
 *  the waiter's own poll would have been. */
export const sharedReadWindowMs = 250;
/** Entries kept at most (distinct objects and lists read by waiters within one window). */
const maxSharedReads = 512;

/** Which API server `kube` talks to: the controller's own cluster, or a registered one by its name and server. */
export function clusterIdentity(kube: KubeObjects): string {
  return kube.registration === undefined ? '' : `${kube.registration.name}@${kube.registration.server}`;
}

export class SharedReads {
  readonly #now: () => number;
  readonly #windowMs: number;
  readonly #maxEntries: number;
  readonly #entries = new Map<string, { startedAtMs: number; answer: Promise<unknown> }>();

  constructor(options: { now?: () => number; windowMs?: number; maxEntries?: number } = {}) {
    this.#now = options.now ?? Date.now;
    this.#windowMs = options.windowMs ?? sharedReadWindowMs;
    this.#maxEntries = options.maxEntries ?? maxSharedReads;
  }

  /** Now, on this cache's clock: the moment a waiter's reads may be shared from (`readsSharedAfter`). */
  now(): number {
    return this.#now();
  }

  /** Drops what is kept for `key`: the next caller reads. */
  forget(key: string): void {
    this.#entries.delete(key);
  }

  /** How many answers are kept. */
  get size(): number {
    return this.#entries.size;
  }

  /** `read()`'s answer, or that of a read of `key` begun at or after `notBeforeMs` within the window. */
  share<T>(key: string, notBeforeMs: number, read: () => Promise<T>): Promise<T> {
    const now = this.#now();
    const kept = this.#entries.get(key);
    if (
      kept !== undefined &&
      kept.startedAtMs >= notBeforeMs &&
      now - kept.startedAtMs <= this.#windowMs &&
      now >= kept.startedAtMs
    ) {
      return kept.answer as Promise<T>;
    }
    const answer = read();
    const entry = { startedAtMs: now, answer };
    this.#entries.delete(key);
    this.#entries.set(key, entry);
    // A failed read is not shared: the next waiter asks again.
    answer.catch(() => {
      if (this.#entries.get(key) === entry) this.#entries.delete(key);
    });
    for (const [oldKey, old] of this.#entries) {
      if (this.#entries.size <= this.#maxEntries && now - old.startedAtMs <= this.#windowMs) break;
      this.#entries.delete(oldKey);
    }
    return answer;
  }
}

/** The process's shared reads (the step process's waits). */
export const processSharedReads = new SharedReads();

/**
 * `kube` for a waiter that needs reads begun at or after `afterMs` (on `shared`'s clock): gets and lists share
 * answers within the window (each caller gets its own copy); writes go through as they are.
 */
export function readsSharedAfter(
  kube: KubeObjects,
  afterMs: number,
  shared: SharedReads = processSharedReads,
): KubeObjects {
  const cluster = clusterIdentity(kube);
  const notBefore = afterMs;
  const copy = async <T>(answer: Promise<T>) => structuredClone(await answer);
  return {
    get: (ref: ObjectRef) =>
      copy(
        shared.share(
          JSON.stringify(['get', cluster, ref.apiVersion, ref.kind, ref.namespace, ref.name]),
          notBefore,
          () => kube.get(ref),
        ),
      ),
    list: (apiVersion, kind, namespace, labelSelector) =>
      copy(
        shared.share<KubeObject[]>(
          JSON.stringify(['list', cluster, apiVersion, kind, namespace, labelSelector ?? '']),
          notBefore,
          () => kube.list(apiVersion, kind, namespace, labelSelector),
        ),
      ),
    mergePatch: (ref, patch, resourceVersion, options) =>
      kube.mergePatch(ref, patch, resourceVersion, options),
    create: (object) => kube.create(object),
    ...(kube.registration === undefined ? {} : { registration: kube.registration }),
    ...(kube.changeOf === undefined ? {} : { changeOf: (ref, seen) => kube.changeOf?.(ref, seen) }),
  };
}
