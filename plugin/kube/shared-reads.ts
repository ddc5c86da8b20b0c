// Reads that several callers of one process may share.
//
// Waiters (issue 38): the zones of a wave waiting for vmauth's evidence of their own routing change each read the
// same balancer and list the same vmauth pods every poll, most of the waves walk's requests. A waiter's poll only
// needs a read that began after its previous poll ended (the first: after its write was read back): such a read
// is as fresh as the poll's own would be and shows the waiter's write. So each read gets a mark from a counter, and
// a waiter takes the latest read of the same object or list whose mark is above the one it holds; else it reads.
// No clock decides freshness: the order of the reads does.
//
// Kept answers (scrape-credentials.ts): reads of a Secret within a time window (its TTL) are shared by everyone.

import type { KubeObject, KubeObjects, ObjectRef } from './objects.ts';

/** How long an answer is kept for waiters at most (memory only: freshness comes from the marks). */
const waiterAnswerKeepMs = 5_000;
/** Entries kept at most (distinct objects and lists). */
const maxSharedReads = 64;

/** Which API server `kube` talks to: the controller's own cluster, or a registered one by its name and server. */
export function clusterIdentity(kube: KubeObjects): string {
  return kube.registration === undefined ? '' : `${kube.registration.name}@${kube.registration.server}`;
}

export class SharedReads {
  readonly #now: () => number;
  readonly #windowMs: number;
  readonly #maxEntries: number;
  /** Counts the reads begun; a read's mark is the count when it began. */
  #marks = 0;
  readonly #entries = new Map<string, { mark: number; startedAtMs: number; answer: Promise<unknown> }>();

  constructor(options: { now?: () => number; windowMs?: number; maxEntries?: number } = {}) {
    this.#now = options.now ?? Date.now;
    this.#windowMs = options.windowMs ?? waiterAnswerKeepMs;
    this.#maxEntries = options.maxEntries ?? maxSharedReads;
  }

  /** The mark of the latest read begun: a caller holding it takes only reads begun after this moment. */
  mark(): number {
    return this.#marks;
  }

  /** Drops what is kept for `key`: the next caller reads. */
  forget(key: string): void {
    this.#entries.delete(key);
  }

  /** How many answers are kept. */
  get size(): number {
    return this.#entries.size;
  }

  /**
   * `read()`'s answer, or the kept answer of a read of `key` begun within the window and, with `afterMark`, after
   * that mark. A failed read is not kept.
   */
  share<T>(key: string, read: () => Promise<T>, afterMark?: number): Promise<T> {
    const now = this.#now();
    const kept = this.#entries.get(key);
    if (
      kept !== undefined &&
      (afterMark === undefined || kept.mark > afterMark) &&
      now - kept.startedAtMs <= this.#windowMs &&
      now >= kept.startedAtMs
    ) {
      return kept.answer as Promise<T>;
    }
    this.#marks += 1;
    const answer = read();
    const entry = { mark: this.#marks, startedAtMs: now, answer };
    this.#entries.delete(key);
    this.#entries.set(key, entry);
    answer.catch(() => {
      if (this.#entries.get(key) === entry) this.#entries.delete(key);
    });
    // Oldest first: drop what is past the window, and the oldest beyond the count.
    for (const [oldKey, old] of this.#entries) {
      if (this.#entries.size <= this.#maxEntries && now - old.startedAtMs <= this.#windowMs) break;
      this.#entries.delete(oldKey);
    }
    return answer;
  }
}

/** The process's reads shared among waiters (the step process's in-call waits). */
export const processSharedReads = new SharedReads();

/**
 * `kube` for one poll of a waiter holding `afterMark` (SharedReads.mark when its previous poll ended): gets and lists
 * take a read begun after that mark, made by any waiter, or read (each caller gets its own copy); writes and waits
 * for changes go to `kube` as they are.
 */
export function readsSharedAfter(
  kube: KubeObjects,
  afterMark: number,
  shared: SharedReads = processSharedReads,
): KubeObjects {
  const cluster = clusterIdentity(kube);
  const copy = async <T>(answer: Promise<T>) => structuredClone(await answer);
  return {
    get: (ref: ObjectRef) =>
      copy(
        shared.share(
          JSON.stringify(['get', cluster, ref.apiVersion, ref.kind, ref.namespace, ref.name]),
          () => kube.get(ref),
          afterMark,
        ),
      ),
    list: (apiVersion, kind, namespace, labelSelector) =>
      copy(
        shared.share<KubeObject[]>(
          JSON.stringify(['list', cluster, apiVersion, kind, namespace, labelSelector ?? '']),
          () => kube.list(apiVersion, kind, namespace, labelSelector),
          afterMark,
        ),
      ),
    mergePatch: (ref, patch, resourceVersion, options) =>
      kube.mergePatch(ref, patch, resourceVersion, options),
    create: (object) => kube.create(object),
    ...(kube.registration === undefined ? {} : { registration: kube.registration }),
    ...(kube.changeOf === undefined ? {} : { changeOf: (ref, seen) => kube.changeOf?.(ref, seen) }),
  };
}
