// A watched copy of one kind's objects in one cluster: a list, then a watch from its resourceVersion, so that reading
// them again costs no API call. docs/scale.md says why and what it costs. It
//   - asks for bookmarks (allowWatchBookmarks): a quiet kind's resourceVersion stays recent, so a reconnect resumes
//     from it instead of meeting 410 Gone and listing everything again;
//   - resumes a watch the server ended (its timeoutSeconds), or that stayed without a byte for 30 s (quiet, or a
//     connection that died without a word), from the last resourceVersion, and relists on 410 Gone;
//   - after a failed list or watch (anything else, a silent connection included: the watch is client-node's Watch,
//     plugin/kube/kube-client.ts) restarts,
//     waiting 1 s, 2 s, 4 s … up to 30 s between attempts (back to 1 s once a watch delivers an event, bookmarks
//     included): a failed list is listed again, a failed watch resumes from the last resourceVersion;
//   - `fresh`: false until the first list is in, during a relist and while a failure is being retried, so that a
//     reader can go to the API server instead of trusting a copy that may have stopped following it;
//   - stores objects without managedFields and kubectl's last-applied annotation (they can double an object).
// One cache per kind and namespace and cluster: several clusters get one each.

import { setTimeout as sleep } from 'node:timers/promises';
import {
  KubeApiError,
  type KubeClient,
  type WatchCallback,
  type WatchHandle,
  WatchInactiveError,
  watchInactivityMs,
} from './kube-client.ts';
import type { KubeConnection } from './kube-config.ts';
import { type KubeObject, kubeCallTimeoutMs, kubeClientOf, listItems, type ObjectChange } from './objects.ts';

/** A kind to watch: the REST path needs the plural. */
export interface WatchedKind {
  apiVersion: string;
  kind: string;
  plural: string;
}

/** A list answer: its items and the resourceVersion to watch from. */
export interface ListedObjects {
  metadata: { resourceVersion?: string };
  items: KubeObject[];
}

/** Opens watches (KubeClient is one): events to `onEvent`, then `done` once (null: the server ended it). */
export interface Watcher {
  watch(
    path: string,
    params: Record<string, string | number | boolean | undefined>,
    onEvent: WatchCallback,
    done: (err: unknown) => void,
    inactivityMs?: number,
  ): Promise<WatchHandle>;
}

export interface WatchCacheOptions {
  /** The cluster: a connection (a client is made for it) or the cluster's client. */
  kubeConfig: KubeConnection | KubeClient;
  kind: WatchedKind;
  /** '' watches all namespaces. */
  namespace: string;
  /** The list call; default: a list on the cluster's client (tests give their own). */
  list?: () => Promise<ListedObjects>;
  /** The watch; default: the cluster client's watch (tests give a scripted one). */
  watch?: Watcher;
  /** A watch without a byte for this long is opened again from the last resourceVersion; default 30 s. */
  watchInactivityMs?: number;
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

/** A watch event of type ERROR carrying a Status with this code. */
function statusCode(object: unknown): number | undefined {
  const code = (object as { code?: unknown } | null)?.code;
  return typeof code === 'number' ? code : undefined;
}

/** The HTTP status of a failed watch: this project's KubeApiError, or a `statusCode` (the tests' failures). */
function failureStatus(err: unknown): number | undefined {
  if (err instanceof KubeApiError) return err.status;
  const code = (err as { statusCode?: unknown } | null)?.statusCode;
  return typeof code === 'number' ? code : undefined;
}

/** How a watch ended; 'failed' has been handed to #failed already (at once, so `fresh` turns false with it). */
type WatchEnd = 'gone' | 'ended' | 'failed';

export class WatchCache {
  readonly kind: WatchedKind;
  readonly namespace: string;
  readonly #path: string;
  readonly #inactivityMs: number;
  readonly #list: () => Promise<ListedObjects>;
  readonly #watch: Watcher;
  readonly #keep: (object: KubeObject) => KubeObject;
  readonly #delay: (ms: number) => Promise<void>;
  readonly #onProblem: (message: string) => void;
  /** The copy, by `namespace/name`. */
  readonly #objects = new Map<string, KubeObject>();
  #resourceVersion: string | undefined;
  #open: WatchHandle | undefined;
  #fresh = false;
  #stopped = false;
  #running = false;
  #retryMs = firstRetryMs;
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
    this.#keep = options.metadataOnly === true ? metadataOf : trimmed;
    const path = restPath(options.kind, options.namespace);
    let client: KubeClient | undefined;
    const clientOf = () => {
      client ??= kubeClientOf(options.kubeConfig);
      return client;
    };
    this.#list =
      options.list ??
      (async () => {
        const answer = await clientOf().request('GET', path, { timeoutMs: kubeCallTimeoutMs });
        const resourceVersion = (answer as { metadata?: { resourceVersion?: unknown } }).metadata
          ?.resourceVersion;
        return {
          metadata: typeof resourceVersion === 'string' ? { resourceVersion } : {},
          items: listItems(answer, options.kind.apiVersion, options.kind.kind),
        };
      });
    this.#watch = options.watch ?? { watch: (...args) => clientOf().watch(...args) };
    this.#path = path;
    this.#inactivityMs = options.watchInactivityMs ?? watchInactivityMs;
  }

  #wake(key: string): void {
    for (const wake of this.#waiters.get(key) ?? []) wake();
  }

  /** Replaces the copy with a list, waking waiters of every object added, changed or gone. */
  async #relist(): Promise<void> {
    // A (re)list means the copy missed events (first start, 410 Gone, a failed list): not to be trusted until the
    // watch is open again.
    this.#fresh = false;
    this.counts.lists++;
    const listed = await this.#list();
    const before = new Map(this.#objects);
    this.#objects.clear();
    for (const item of listed.items) {
      const object = this.#keep(item);
      const key = keyOf(object);
      this.#objects.set(key, object);
      if (before.get(key)?.metadata.resourceVersion !== object.metadata.resourceVersion) this.#wake(key);
      before.delete(key);
    }
    for (const key of before.keys()) this.#wake(key);
    this.#resourceVersion = listed.metadata.resourceVersion;
  }

  /** One watch from the copy's resourceVersion, applying its events, until it ends. */
  #watchOnce(): Promise<WatchEnd> {
    return new Promise<WatchEnd>((resolve) => {
      let gone = false;
      let failure: Error | undefined;
      const onEvent: WatchCallback = (type, raw) => {
        this.#retryMs = firstRetryMs;
        if (type === 'ERROR') {
          if (statusCode(raw) === 410) gone = true;
          else
            failure ??= new Error(
              String((raw as { message?: unknown } | null)?.message ?? 'the watch sent an error'),
            );
          return;
        }
        const object = raw as KubeObject;
        if (typeof object?.metadata !== 'object' || object.metadata === null) return;
        if (object.metadata.resourceVersion !== undefined)
          this.#resourceVersion = object.metadata.resourceVersion;
        if (type === 'BOOKMARK') return;
        const key = keyOf(object);
        if (type === 'ADDED' || type === 'MODIFIED') this.#objects.set(key, this.#keep(object));
        else if (type === 'DELETED') this.#objects.delete(key);
        else return;
        this.#wake(key);
      };
      const done = (err: unknown) => {
        this.#open = undefined;
        const problem = err ?? failure;
        if (err instanceof WatchInactiveError && failure === undefined && !gone) {
          // Quiet (no event, no bookmark) or silently dead: open it again from where it was, no list.
          resolve('ended');
        } else if (gone || failureStatus(err) === 410) {
          this.#fresh = false;
          resolve('gone');
        } else if (problem !== undefined) {
          this.#failed(problem, false);
          resolve('failed');
        } else resolve('ended');
      };
      this.counts.watches++;
      void this.#watch
        .watch(
          this.#path,
          {
            allowWatchBookmarks: true,
            ...(this.#resourceVersion === undefined ? {} : { resourceVersion: this.#resourceVersion }),
          },
          onEvent,
          done,
          this.#inactivityMs,
        )
        .then(
          (handle) => {
            if (this.#stopped) handle.abort();
            else this.#open = handle;
          },
          (err: unknown) => done(err ?? new Error('the watch could not be opened')),
        );
      // Events after the list's resourceVersion are on their way (a watch's headers may only come with its first
      // event): the copy follows the API server from here on.
      this.#fresh = true;
      this.#markSynced();
    });
  }

  /** Lists (when `listFirst`) and watches until stopped; a failure hands over to #failed. */
  async #run(listFirst: boolean): Promise<void> {
    let needList = listFirst;
    try {
      while (!this.#stopped) {
        if (needList) await this.#relist();
        needList = false;
        if (this.#stopped) return;
        const end = await this.#watchOnce();
        if (end === 'failed') return;
        needList = end === 'gone';
      }
    } catch (err) {
      this.#failed(err, needList);
    }
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
    if (!this.#running) {
      this.#running = true;
      void this.#run(true);
    }
    return this.#synced;
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#fresh = false;
    this.#open?.abort();
    this.#open = undefined;
  }

  /** Whether the copy follows the API server now (listed, watch open, no failure being retried). */
  get fresh(): boolean {
    return this.#fresh;
  }

  /** Objects of one namespace, or all ('') that this cache holds. */
  list(namespace: string): KubeObject[] {
    const all = [...this.#objects.values()];
    return namespace === '' ? all : all.filter((o) => o.metadata.namespace === namespace);
  }

  get(namespace: string, name: string): KubeObject | undefined {
    return this.#objects.get(`${namespace}/${name}`);
  }

  #failed(err: unknown, needList: boolean): void {
    this.#fresh = false;
    if (this.#stopped) return;
    const wait = this.#retryMs;
    this.#retryMs = Math.min(this.#retryMs * 2, maxRetryMs);
    this.#onProblem(
      `watching ${this.kind.kind} in ${this.namespace === '' ? 'all namespaces' : this.namespace} failed (${errorText(err)}); retrying in ${wait / 1000} s`,
    );
    void this.#delay(wait).then(() => {
      if (this.#stopped) return;
      this.counts.restarts++;
      void this.#run(needList);
    });
  }
}

function keyOf(object: KubeObject): string {
  return `${object.metadata.namespace ?? ''}/${object.metadata.name ?? ''}`;
}
