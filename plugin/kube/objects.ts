// Reads and writes of Kubernetes objects, as the layers above need them: by apiVersion/kind/namespace/name, with
// JSON merge patches guarded by resourceVersion, and errors that say which object and what went wrong.

import { CodedError, type FailureCode } from '../goplugin/failure-codes.ts';
import type { ClusterRegistration } from './cluster-registration.ts';
import { KubeApiError, KubeClient, UnknownKindError } from './kube-client.ts';
import { type KubeConnection, loadKubeConnection } from './kube-config.ts';
import { redactText } from './redact.ts';

export const fieldManager = 'vmzones';

export interface ObjectRef {
  apiVersion: string;
  kind: string;
  namespace: string;
  name: string;
}

/** An object as the API server returns it (JSON shape); the fields we rely on are typed. */
export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata: {
    name?: string;
    namespace?: string;
    uid?: string;
    generation?: number;
    resourceVersion?: string;
    annotations?: Record<string, string>;
    labels?: Record<string, string>;
    ownerReferences?: { apiVersion: string; kind: string; name: string; uid: string; controller?: boolean }[];
  };
  spec?: Record<string, unknown>;
  status?: Record<string, unknown>;
  [key: string]: unknown;
}

/** `namespace/name`, the way kubectl names a namespaced object. */
export function namespacedName(object: {
  namespace?: string | undefined;
  name?: string | undefined;
}): string {
  return `${object.namespace ?? ''}/${object.name ?? ''}`;
}

/** "VMCluster vm/zone-a". */
export function describeRef(ref: ObjectRef): string {
  return `${ref.kind} ${namespacedName(ref)}`;
}

export type KubeErrorKind = 'notFound' | 'conflict' | 'forbidden' | 'invalid' | 'unavailable';

/** The failure code of each kind of failed API call (plugin/goplugin/failure-codes.ts). */
export const kubeErrorCodes = {
  notFound: 'ObjectMissing',
  conflict: 'ApiTransient',
  forbidden: 'Forbidden',
  invalid: 'ApiRejected',
  unavailable: 'ApiTransient',
} as const satisfies Record<KubeErrorKind, FailureCode>;

/** A failed API call: `kind` says whether retrying can help (conflict, unavailable) or not. */
export class KubeError extends CodedError {
  readonly kind: KubeErrorKind;
  readonly status: number | undefined;
  constructor(kind: KubeErrorKind, message: string, status?: number) {
    super(kubeErrorCodes[kind], message);
    this.name = 'KubeError';
    this.kind = kind;
    this.status = status;
  }
}

function apiMessage(body: unknown): string {
  if (typeof body === 'string') {
    try {
      return apiMessage(JSON.parse(body));
    } catch {
      return body.slice(0, 300);
    }
  }
  if (
    typeof body === 'object' &&
    body !== null &&
    typeof (body as { message?: unknown }).message === 'string'
  ) {
    return (body as { message: string }).message;
  }
  return '';
}

/** A refused API call: this project's KubeApiError (`status`, `body`), or an error with a numeric `code` and a `body`
 *  (client-node's ApiException, which tests and benchmarks still build). */
function apiFailure(err: unknown): { code: number; body: unknown } | undefined {
  if (err instanceof KubeApiError) return { code: err.status, body: err.body };
  if (err instanceof Error && typeof (err as { code?: unknown }).code === 'number' && 'body' in err)
    return err as Error & { code: number; body: unknown };
  return undefined;
}

export function toKubeError(err: unknown, what: string): KubeError {
  if (err instanceof KubeError) return err;
  const failure = apiFailure(err);
  if (failure !== undefined) {
    // The API server's message may quote the invalid value it refused (a URL with its password, a token).
    const detail = redactText(apiMessage(failure.body));
    const text = `${what}: HTTP ${failure.code}${detail ? `: ${detail}` : ''}`;
    switch (failure.code) {
      case 404:
        return new KubeError('notFound', text, 404);
      case 409:
        return new KubeError('conflict', text, 409);
      case 401:
      case 403:
        return new KubeError('forbidden', text, failure.code);
      case 400:
      case 422:
        return new KubeError('invalid', text, failure.code);
      default:
        return new KubeError('unavailable', text, failure.code);
    }
  }
  // Discovery found the API group without this kind: its CRD is not installed, as a 404 would say
  // (a zone kind the cluster has no operator CRD for holds no zones: plugin/zones/reconciler/reconciler.ts).
  if (
    err instanceof UnknownKindError ||
    (err instanceof Error && err.message.startsWith('Unrecognized API version and kind:'))
  ) {
    return new KubeError(
      'notFound',
      `${what}: the API server serves no such kind (is its CRD installed?)`,
      404,
    );
  }
  return new KubeError(
    'unavailable',
    `${what}: ${redactText(err instanceof Error ? err.message : String(err))}`,
  );
}

export interface PatchOptions {
  /** Server-side dry run: admission and schema validation run, nothing is stored. */
  dryRun?: boolean;
}

/** A wait for one object to change, as a watch sees it (plugin/kube/watched-objects.ts). */
export interface ObjectChange {
  /** Resolves once the watch sees the object at another resourceVersion than the one given, or gone. */
  readonly changed: Promise<void>;
  /** Stops listening: the waiter gave up (its deadline) or was woken. */
  cancel(): void;
}

/** One wait for the first of several changes; undefined when any of them cannot be watched (then poll). */
export function firstChange(changes: readonly (ObjectChange | undefined)[]): ObjectChange | undefined {
  const cancelAll = () => {
    for (const c of changes) c?.cancel();
  };
  if (changes.length === 0 || changes.some((c) => c === undefined)) {
    cancelAll();
    return undefined;
  }
  return {
    changed: Promise.race(changes.map((c) => c?.changed)).then(cancelAll),
    cancel: cancelAll,
  };
}

/** What the upper layers use; tests may provide their own against a real API server. */
export interface KubeObjects {
  get(ref: ObjectRef): Promise<KubeObject>;
  /**
   * Applies an RFC 7396 merge patch with field manager `vmzones`. With `resourceVersion`, the API server refuses
   * (409, KubeError kind `conflict`) if the object changed since it was read.
   */
  mergePatch(
    ref: ObjectRef,
    patch: Record<string, unknown>,
    resourceVersion?: string,
    options?: PatchOptions,
  ): Promise<KubeObject>;
  /** Lists objects; namespace `''` lists across all namespaces. */
  list(apiVersion: string, kind: string, namespace: string, labelSelector?: string): Promise<KubeObject[]>;
  /** Creates an object; one that exists already is a KubeError of kind `conflict` (409 AlreadyExists). */
  create(object: KubeObject & { apiVersion: string; kind: string }): Promise<KubeObject>;
  /**
   * The registered cluster this client's Pods are in (docs/multicluster.md), so that a scrape of them takes that
   * cluster's pod access (its API server's pod proxy by default); absent for the controller's own cluster.
   */
  readonly registration?: ClusterRegistration;
  /**
   * Present when watches follow this cluster (the step plugin's, docs/scale.md): a wait for `ref` to be at another
   * resourceVersion than `seen` (the one the caller read), so that a waiter reads again only when something
   * changed instead of polling. Undefined when no watch that follows the API server now covers `ref`: poll.
   */
  changeOf?(ref: ObjectRef, seen: string | undefined): ObjectChange | undefined;
}

let defaultClient: KubeClient | undefined;

/** The client of the process's own cluster (the in-cluster service account, or KUBECONFIG / ~/.kube/config outside
 *  a cluster): one per process, so that the calls and the watches share its one connection pool. */
export function loadKubeConfig(): KubeClient {
  defaultClient ??= new KubeClient(loadKubeConnection());
  return defaultClient;
}

/** No API call may hang a step or the reconciler: each one is abandoned after this long (a write that timed out
 *  may still have landed; every write of ours is guarded by resourceVersion or idempotent, so a retry is safe). */
export const kubeCallTimeoutMs = 15_000;

async function withTimeout<T>(call: Promise<T>, what: string, timeoutMs: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(
          new KubeError('unavailable', `${what}: no answer from the API server within ${timeoutMs / 1000} s`),
        ),
      timeoutMs,
    );
  });
  try {
    return await Promise.race([call, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** A client of the cluster `connection` names: one per cluster (each holds that cluster's connection pool). */
export function kubeClientOf(connection: KubeConnection | KubeClient): KubeClient {
  return connection instanceof KubeClient ? connection : new KubeClient(connection);
}

export function kubeObjects(
  connection: KubeConnection | KubeClient = loadKubeConfig(),
  timeoutMs: number = kubeCallTimeoutMs,
): KubeObjects {
  const client = kubeClientOf(connection);
  const discoveryTimeoutMs = 2 * timeoutMs;
  // The deadline covers discovery and the call together, as one call of the layers above; a call past it is
  // abandoned (its connection closed). Discovery, shared by concurrent calls, has a deadline of its own.
  const call = async <T>(what: string, run: (options: { signal: AbortSignal }) => Promise<T>) => {
    const controller = new AbortController();
    try {
      return await withTimeout(run({ signal: controller.signal }), what, timeoutMs);
    } catch (err) {
      controller.abort();
      throw err;
    }
  };
  const objectPath = (ref: ObjectRef) =>
    client.path(ref.apiVersion, ref.kind, ref.namespace, ref.name, discoveryTimeoutMs);
  return {
    async get(ref) {
      const what = `reading ${describeRef(ref)}`;
      try {
        return (await call(what, async (o) => client.request('GET', await objectPath(ref), o))) as KubeObject;
      } catch (err) {
        throw toKubeError(err, what);
      }
    },
    async mergePatch(ref, patch, resourceVersion, options) {
      const body = {
        ...patch,
        apiVersion: ref.apiVersion,
        kind: ref.kind,
        metadata: {
          ...((patch.metadata as Record<string, unknown> | undefined) ?? {}),
          name: ref.name,
          namespace: ref.namespace,
          ...(resourceVersion === undefined ? {} : { resourceVersion }),
        },
      };
      const what = `${options?.dryRun ? 'dry-run patching' : 'patching'} ${describeRef(ref)}`;
      try {
        return (await call(what, async (o) =>
          client.request('PATCH', await objectPath(ref), {
            ...o,
            body,
            contentType: 'application/merge-patch+json',
            query: { fieldManager, ...(options?.dryRun ? { dryRun: 'All' } : {}) },
          }),
        )) as KubeObject;
      } catch (err) {
        throw toKubeError(err, what);
      }
    },
    async create(object) {
      const namespace = object.metadata.namespace ?? '';
      const what = `creating ${object.kind} ${namespace}/${object.metadata.name}`;
      try {
        return (await call(what, async (o) =>
          client.request(
            'POST',
            await client.path(object.apiVersion, object.kind, namespace, undefined, discoveryTimeoutMs),
            { ...o, body: object, query: { fieldManager } },
          ),
        )) as KubeObject;
      } catch (err) {
        throw toKubeError(err, what);
      }
    },
    async list(apiVersion, kind, namespace, labelSelector) {
      const where = `listing ${kind} in ${namespace === '' ? 'all namespaces' : namespace}`;
      try {
        const result = await call(where, async (o) =>
          client.request(
            'GET',
            await client.path(apiVersion, kind, namespace, undefined, discoveryTimeoutMs),
            {
              ...o,
              query: { labelSelector },
            },
          ),
        );
        return listItems(result, apiVersion, kind);
      } catch (err) {
        throw toKubeError(err, `${where}${labelSelector ? ` (${labelSelector})` : ''}`);
      }
    },
  };
}

/** A list answer's items, each with the apiVersion and kind the API server leaves out of list items. */
export function listItems(answer: unknown, apiVersion: string, kind: string): KubeObject[] {
  const items = (answer as { items?: unknown }).items;
  if (!Array.isArray(items)) throw new Error(`listing ${kind}: the answer has no items`);
  return items.map((item: KubeObject) => ({ ...item, apiVersion, kind }));
}

/** `live` (every read and write to the API server), with waits for changes from `watched` (plugin/kube/watched-objects.ts). */
export function withChangesOf(
  live: KubeObjects,
  watched: { changeOf: NonNullable<KubeObjects['changeOf']> },
): KubeObjects {
  return {
    get: (ref) => live.get(ref),
    list: (apiVersion, kind, namespace, labelSelector) =>
      live.list(apiVersion, kind, namespace, labelSelector),
    mergePatch: (ref, patch, resourceVersion, patchOptions) =>
      live.mergePatch(ref, patch, resourceVersion, patchOptions),
    create: (object) => live.create(object),
    ...(live.registration === undefined ? {} : { registration: live.registration }),
    changeOf: (ref, seen) => watched.changeOf(ref, seen),
  };
}
