// Reads and writes of Kubernetes objects, as the layers above need them: by apiVersion/kind/namespace/name, with
// JSON merge patches guarded by resourceVersion, and errors that say which object and what went wrong.

import { ApiException, KubeConfig, KubernetesObjectApi, PatchStrategy } from '@kubernetes/client-node';
import type { ClusterRegistration } from './cluster-registration.ts';
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

/** A failed API call: `kind` says whether retrying can help (conflict, unavailable) or not. */
export class KubeError extends Error {
  readonly kind: KubeErrorKind;
  readonly status: number | undefined;
  constructor(kind: KubeErrorKind, message: string, status?: number) {
    super(message);
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

export function toKubeError(err: unknown, what: string): KubeError {
  if (err instanceof KubeError) return err;
  if (err instanceof ApiException) {
    // The API server's message may quote the invalid value it refused (a URL with its password, a token).
    const detail = redactText(apiMessage(err.body));
    const text = `${what}: HTTP ${err.code}${detail ? `: ${detail}` : ''}`;
    switch (err.code) {
      case 404:
        return new KubeError('notFound', text, 404);
      case 409:
        return new KubeError('conflict', text, 409);
      case 401:
      case 403:
        return new KubeError('forbidden', text, err.code);
      case 400:
      case 422:
        return new KubeError('invalid', text, err.code);
      default:
        return new KubeError('unavailable', text, err.code);
    }
  }
  // The client's discovery found the API group without this kind: its CRD is not installed, as a 404 would say
  // (a zone kind the cluster has no operator CRD for holds no zones: plugin/zones/reconciler/reconciler.ts).
  if (err instanceof Error && err.message.startsWith('Unrecognized API version and kind:')) {
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
}

/** The in-cluster service account, or KUBECONFIG / ~/.kube/config outside a cluster. */
export function loadKubeConfig(): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromDefault();
  return kc;
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

export function kubeObjects(
  kc: KubeConfig = loadKubeConfig(),
  timeoutMs: number = kubeCallTimeoutMs,
): KubeObjects {
  const api = KubernetesObjectApi.makeApiClient(kc);
  const header = (ref: ObjectRef) => ({
    apiVersion: ref.apiVersion,
    kind: ref.kind,
    metadata: { name: ref.name, namespace: ref.namespace },
  });
  return {
    async get(ref) {
      try {
        return (await withTimeout(
          api.read(header(ref)),
          `reading ${describeRef(ref)}`,
          timeoutMs,
        )) as KubeObject;
      } catch (err) {
        throw toKubeError(err, `reading ${describeRef(ref)}`);
      }
    },
    async mergePatch(ref, patch, resourceVersion, options) {
      const h = header(ref);
      const body = {
        ...patch,
        apiVersion: ref.apiVersion,
        kind: ref.kind,
        metadata: {
          ...((patch.metadata as Record<string, unknown> | undefined) ?? {}),
          ...h.metadata,
          ...(resourceVersion === undefined ? {} : { resourceVersion }),
        },
      };
      try {
        return (await withTimeout(
          api.patch(
            body,
            undefined,
            options?.dryRun ? 'All' : undefined,
            fieldManager,
            undefined,
            PatchStrategy.MergePatch,
          ),
          `patching ${describeRef(ref)}`,
          timeoutMs,
        )) as KubeObject;
      } catch (err) {
        throw toKubeError(err, `${options?.dryRun ? 'dry-run patching' : 'patching'} ${describeRef(ref)}`);
      }
    },
    async create(object) {
      const what = `creating ${object.kind} ${object.metadata.namespace}/${object.metadata.name}`;
      try {
        return (await withTimeout(
          api.create(object, undefined, undefined, fieldManager),
          what,
          timeoutMs,
        )) as KubeObject;
      } catch (err) {
        throw toKubeError(err, what);
      }
    },
    async list(apiVersion, kind, namespace, labelSelector) {
      try {
        const result = await withTimeout(
          api.list(apiVersion, kind, namespace, undefined, undefined, undefined, undefined, labelSelector),
          `listing ${kind} in ${namespace === '' ? 'all namespaces' : namespace}`,
          timeoutMs,
        );
        return result.items as KubeObject[];
      } catch (err) {
        throw toKubeError(
          err,
          `listing ${kind} in ${namespace === '' ? 'all namespaces' : namespace}${labelSelector ? ` (${labelSelector})` : ''}`,
        );
      }
    },
  };
}
