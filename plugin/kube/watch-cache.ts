// A watched copy of one kind's objects in one cluster: a list, then a watch from its resourceVersion
// (@kubernetes/client-node's ListWatch), so that reading them again costs no API call. docs/scale.md says why and
// what it costs. What ListWatch does not do, this module adds:
//   - bookmarks (allowWatchBookmarks): a quiet kind's resourceVersion stays recent, so a reconnect resumes from it
//     instead of meeting 410 Gone and listing everything again;
//   - after a failed list or watch (anything but 410 and the client's inactivity timeout, which ListWatch handles
//     itself: relist, resume) it restarts, waiting 1 s, 2 s, 4 s … up to 30 s between attempts (back to 1 s once
//     a watch delivers an event, bookmarks included);
//   - `fresh`: false until the first list is in, during a relist and while a failure is being retried, so that a
//     reader can go to the API server instead of trusting a copy that may have stopped following it;
//   - objects are stored without managedFields and kubectl's last-applied annotation (they can double an object).
// One cache per KubeConfig: several clusters get one each.

import { setTimeout as sleep } from 'node:timers/promises';
import {
  type KubeConfig,
  type KubernetesListObject,
  KubernetesObjectApi,
  ListWatch,
  Watch,
} from '@kubernetes/client-node';
import type { KubeObject, ObjectChange } from './objects.ts';

/** A kind to watch: the REST path needs the plural. */
export interface WatchedKind {
  apiVersion: string;
  kind: string;
  plural: string;
}

export interface WatchCacheOptions {
  kubeConfig: KubeConfig;
  kind: WatchedKind;
  /** '' watches all namespaces. */
  namespace: string;
  /** The list call; default: KubernetesObjectApi.list on kubeConfig (tests give their own). */
  list?: () => Promise<KubernetesListObject<KubeObject>>;
  /** The watch; default: client-node's Watch on kubeConfig (tests give a subclass). */
  watch?: Watch;
  /** Waits between restarts (tests give an instant one). */
  delay?: (ms: number) => Promise<void>;
  onProblem?: (message: string) => void;
  /** Keep only apiVersion, kind and metadata: a cache that serves waits for changes (changeOf), never reads, so
   *  neither the memory of whole objects nor what their spec may hold (a VMUser's password). */
  metadataOnly?: boolean;
}

const firstRetryMs = 1_000;
const maxRetryMs = 30_000;
const lastApplied = 'kubectl.kubernetes.io/last-applied-configuration';

/** The object without what the cache never needs; the original is left as it is. */
export function trimmed(object: KubeObject): KubeObject {
  const { managedFields: _managed, ...metadata } = object.metadata as KubeObject['metadata'] & {
    managedFields?: unknown;
  };
  if (metadata.annotations?.[lastApplied] !== undefined) {
    const { [lastApplied]: _dropped, ...annotations } = metadata.annotations;
    metadata.annotations = annotations;
  }
  return { ...object, metadata };
}

/** Only what a wait for changes needs: which object, at which resourceVersion. */
function metadataOf(object: KubeObject): KubeObject {
  const { name, namespace, uid, resourceVersion, generation } = object.metadata;
  return {
    ...(object.apiVersion === undefined ? {} : { apiVersion: object.apiVersion }),
    ...(object.kind === undefined ? {} : { kind: object.kind }),
    metadata: { name, namespace, uid, resourceVersion, generation },
  };
}

/**
 * client-node's Watch, asking for bookmarks and handing on trimmed objects. `onWatch` runs when ListWatch asks
 * for a watch: by then the list (if any) is in the copy, and events after its resourceVersion are on their way
 * (a watch's headers may only come with its first event); `onEvent` on every event.
 */
class TrimmingWatch extends Watch {
  readonly #inner: Watch;
  readonly #onWatch: () => void;
  readonly #onEvent: () => void;
  readonly #keep: (object: KubeObject) => KubeObject;
  constructor(
    inner: Watch,
    onWatch: () => void,
    onEvent: () => void,
    keep: (object: KubeObject) => KubeObject,
  ) {
    super(inner.config);
    this.#inner = inner;
    this.#onWatch = onWatch;
    this.#onEvent = onEvent;
    this.#keep = keep;
  }
  override async watch(
    path: string,
    queryParams: Record<string, string | number | boolean | undefined>,
    // biome-ignore lint/suspicious/noExplicitAny: client-node's own callback type, unchanged
    callback: (phase: string, apiObj: any, watchObj?: any) => void,
    done: (err: unknown) => void,
  ): Promise<AbortController> {
    this.#onWatch();
    return this.#inner.watch(
      path,
      { ...queryParams, allowWatchBookmarks: true },
      (phase, object: KubeObject, raw) => {
        this.#onEvent();
        callback(phase, phase === 'ADDED' || phase === 'MODIFIED' ? this.#keep(object) : object, raw);
      },
      done,
    );
  }
}

function restPath(kind: WatchedKind, namespace: string): string {
  const [group, version] = kind.apiVersion.includes('/') ? kind.apiVersion.split('/') : ['', kind.apiVersion];
  const base = group === '' ? `/api/${version}` : `/apis/${group}/${version}`;
  return `${base}${namespace === '' ? '' : `/namespaces/${namespace}`}/${kind.plural}`;
}

function errorText(err: unknown): string {
  if (err instanceof Error) return err.message;
  if (typeof err === 'object' && err !== null && 'message' in err) return String(err.message);
  return String(err);
}

export class WatchCache {
  readonly kind: WatchedKind;
  readonly namespace: string;
  readonly #informer: ListWatch<KubeObject>;
  readonly #delay: (ms: number) => Promise<void>;
  readonly #onProblem: (message: string) => void;
  #fresh = false;
  #stopped = false;
  #retryMs = firstRetryMs;
  #restarting = false;
  #synced: Promise<void>;
  #markSynced: () => void = () => {};
  /** Waiters for a change of one object, by `namespace/name`. */
  readonly #waiters = new Map<string, Set<() => void>>();
  /** Lists and watches started since creation (tests and docs/scale.md count them). */
  readonly counts = { lists: 0, watches: 0, restarts: 0 };

  constructor(options: WatchCacheOptions) {
    this.kind = options.kind;
    this.namespace = options.namespace;
    this.#delay = options.delay ?? ((ms) => sleep(ms));
    this.#onProblem = options.onProblem ?? (() => {});
    this.#synced = new Promise((resolve) => {
      this.#markSynced = resolve;
    });
    const api =
      options.list === undefined ? KubernetesObjectApi.makeApiClient(options.kubeConfig) : undefined;
    const list =
      options.list ??
      (() =>
        (api as KubernetesObjectApi).list<KubeObject>(
          options.kind.apiVersion,
          options.kind.kind,
          options.namespace,
        ));
    const keep = options.metadataOnly === true ? metadataOf : trimmed;
    const watch = new TrimmingWatch(
      options.watch ?? new Watch(options.kubeConfig),
      () => {
        this.counts.watches++;
        // A watch from the resourceVersion of a complete copy: it follows the API server from here on (a failure
        // of this watch makes it not fresh again).
        if (this.#restarting) return;
        this.#fresh = true;
        this.#markSynced();
      },
      () => {
        this.#retryMs = firstRetryMs;
      },
      keep,
    );
    this.#informer = new ListWatch<KubeObject>(
      restPath(options.kind, options.namespace),
      watch,
      async () => {
        // A (re)list means the copy missed events (first start, 410 Gone, a failed watch): not to be trusted
        // until the watch is open again.
        this.#fresh = false;
        this.counts.lists++;
        const listed = await list();
        return { ...listed, items: listed.items.map(keep) };
      },
      false,
      undefined,
      undefined,
      { delayFn: this.#delay },
    );
    this.#informer.on('error', (err) => this.#failed(err));
    // One listener for every waiter: added, updated (a new resourceVersion) or deleted, from a watch event or a
    // relist that found the object changed.
    this.#informer.on('change', (object) => {
      const key = `${object.metadata.namespace ?? ''}/${object.metadata.name ?? ''}`;
      for (const wake of this.#waiters.get(key) ?? []) wake();
    });
  }

  /**
   * A wait for `namespace/name` to be at another resourceVersion than `seen`; resolved at once when the copy holds
   * it at another one already (or not at all while `seen` is set). A copy behind the caller's read also resolves at
   * once: callers read again no sooner than they would have polled (plugin/zones/step/deps.ts).
   */
  changeOf(namespace: string, name: string, seen: string | undefined): ObjectChange {
    const key = `${namespace}/${name}`;
    let wake: () => void = () => {};
    const changed = new Promise<void>((resolve) => {
      wake = resolve;
    });
    const waiters = this.#waiters.get(key) ?? new Set<() => void>();
    this.#waiters.set(key, waiters);
    const cancel = () => {
      waiters.delete(wake);
      if (waiters.size === 0 && this.#waiters.get(key) === waiters) this.#waiters.delete(key);
    };
    waiters.add(wake);
    const now = this.get(namespace, name)?.metadata.resourceVersion;
    if (now !== seen) wake();
    return {
      changed: changed.then(cancel),
      cancel,
    };
  }

  /** Waits for changes not yet resolved or cancelled (tests: none left behind). */
  get waiting(): number {
    let count = 0;
    for (const waiters of this.#waiters.values()) count += waiters.size;
    return count;
  }

  /** Starts listing and watching; resolves once the first list is in and the watch is open. */
  start(): Promise<void> {
    void this.#informer.start().catch((err: unknown) => this.#failed(err));
    return this.#synced;
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#fresh = false;
    await this.#informer.stop();
  }

  /** Whether the copy follows the API server now (listed, watch open, no failure being retried). */
  get fresh(): boolean {
    return this.#fresh;
  }

  /** Objects of one namespace, or all ('') that this cache holds. */
  list(namespace: string): KubeObject[] {
    return [...this.#informer.list(namespace === '' ? undefined : namespace)];
  }

  get(namespace: string, name: string): KubeObject | undefined {
    return this.#informer.get(name, namespace);
  }

  #failed(err: unknown): void {
    this.#fresh = false;
    if (this.#stopped || this.#restarting) return;
    this.#restarting = true;
    const wait = this.#retryMs;
    this.#retryMs = Math.min(this.#retryMs * 2, maxRetryMs);
    this.#onProblem(
      `watching ${this.kind.kind} in ${this.namespace === '' ? 'all namespaces' : this.namespace} failed (${errorText(err)}); retrying in ${wait / 1000} s`,
    );
    void this.#delay(wait).then(() => {
      this.#restarting = false;
      if (this.#stopped) return;
      this.counts.restarts++;
      void this.#informer.start().catch((e: unknown) => this.#failed(e));
    });
  }
}
