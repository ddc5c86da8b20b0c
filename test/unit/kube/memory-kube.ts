// The one in-memory Kubernetes of the unit tests (plugin/kube/objects.ts's KubeObjects), with the API server's rules
// that vmzones relies on:
// - objects by apiVersion/kind/namespace/name; every write takes the next resourceVersion of one counter (as etcd's
//   revision), `generation` starts at 1 and moves on only when the spec changes, `uid` is set once;
// - RFC 7396 merge patches (nulls delete, objects merge, anything else replaces) by this file's own implementation,
//   not the product's (plugin/zones/state/merge-patch.ts is under test elsewhere); a stale resourceVersion is a 409
//   `conflict`, a missing object a 404; a dry run answers the result and stores nothing;
// - create of an existing object is a 409; lists filter by kind, namespace ('' = every namespace) and equality
//   label selectors (`a=b,c=d`).
// Reads return copies, so that code under test cannot change stored objects by accident. With `{ operator: true }`
// an "instant operator" marks a VMCluster, VMSingle, VLCluster or VMUser operational at its generation after each
// write unless the test holds it back (`heldBack`), as the VM operator would a moment later. The real API server
// and operator are exercised by test/e2e/.

import {
  KubeError,
  type KubeObject,
  type KubeObjects,
  type ObjectRef,
  type PatchOptions,
} from '../../../plugin/kube/objects.ts';
import type { Pod } from '../../../plugin/vm/pods.ts';

const vmApi = 'operator.victoriametrics.com/v1beta1';
const operatedKinds = new Set(['VMCluster', 'VMSingle', 'VLCluster', 'VMUser']);

export interface MemoryKubeOptions {
  /** Mark the VM operator's kinds operational at their generation after each write (default false). */
  operator?: boolean;
}

export class MemoryKube implements KubeObjects {
  readonly objects = new Map<string, KubeObject>();
  /** Errors to throw for the next call of any verb that touches `kind` (once each). */
  readonly failNext = new Map<string, KubeError>();
  /** Errors to throw for the next patch of `kind` (once each); reads go on. */
  readonly failNextPatch = new Map<string, KubeError>();
  /** Every call, in order: `Kind ns/name` (get), `patch …`, `create …`, `list Kind ns selector`. */
  readonly reads: string[] = [];
  /** Patches that passed their precondition, dry runs included. */
  readonly patches: { ref: string; body: Record<string, unknown>; dryRun: boolean }[] = [];
  /** Events and other created objects, in order. */
  readonly created: KubeObject[] = [];
  /** Objects (`Kind ns/name`) the instant operator leaves alone, e.g. a VMCluster that stays `expanding`. */
  readonly heldBack = new Set<string>();
  /** Runs before each patch (`Kind ns/name`, its body, whether a dry run) is judged: a test's way to let another
   *  writer in between a read and a write (e.g. two drains racing for one balancer), or to watch every write. Reset
   *  it inside to run once. */
  beforePatch: ((what: string, patch: Record<string, unknown>, dryRun: boolean) => Promise<void>) | undefined;
  /** Runs before each get and list (`Kind ns/name`, `list Kind ns`): with beforePatch, how a test orders the reads
   *  and writes of racing callers. */
  beforeRead: ((what: string) => Promise<void>) | undefined;
  /** Spec fields (top level) a VMCluster keeps; others are pruned as a structural schema would. */
  knownVMClusterFields: Set<string> | undefined;
  readonly #operator: boolean;
  #version = 100;

  constructor(options: MemoryKubeOptions = {}) {
    this.#operator = options.operator ?? false;
  }

  private static key(apiVersion: string, kind: string, namespace: string, name: string): string {
    return `${apiVersion}|${kind}|${namespace}|${name}`;
  }

  #nextVersion(): string {
    return String(this.#version++);
  }

  #stored(ref: ObjectRef): KubeObject | undefined {
    return this.objects.get(MemoryKube.key(ref.apiVersion, ref.kind, ref.namespace, ref.name));
  }

  #failure(kind: string, verb: 'read' | 'patch' = 'read'): void {
    for (const hooks of verb === 'patch' ? [this.failNextPatch, this.failNext] : [this.failNext]) {
      const error = hooks.get(kind);
      if (error !== undefined) {
        hooks.delete(kind);
        throw error;
      }
    }
  }

  /** Stores a copy of `object` as it is (the test's setup), filling in what the API server would. */
  put(object: KubeObject & { apiVersion: string; kind: string }): this {
    const stored = structuredClone(object);
    stored.metadata.namespace ??= 'default';
    stored.metadata.resourceVersion ??= this.#nextVersion();
    stored.metadata.generation ??= 1;
    stored.metadata.uid ??= `uid-${stored.metadata.name}`;
    const { namespace, name = '' } = stored.metadata;
    this.objects.set(MemoryKube.key(object.apiVersion, object.kind, namespace, name), stored);
    return this;
  }

  async get(ref: ObjectRef): Promise<KubeObject> {
    this.reads.push(`${ref.kind} ${ref.namespace}/${ref.name}`);
    await this.beforeRead?.(`${ref.kind} ${ref.namespace}/${ref.name}`);
    this.#failure(ref.kind);
    const object = this.#stored(ref);
    if (object === undefined) {
      throw new KubeError(
        'notFound',
        `reading ${ref.kind} ${ref.namespace}/${ref.name}: HTTP 404: not found`,
        404,
      );
    }
    return structuredClone(object);
  }

  async mergePatch(
    ref: ObjectRef,
    patch: Record<string, unknown>,
    resourceVersion?: string,
    options?: PatchOptions,
  ): Promise<KubeObject> {
    const what = `${ref.kind} ${ref.namespace}/${ref.name}`;
    this.reads.push(`patch ${what}`);
    await this.beforePatch?.(what, patch, options?.dryRun === true);
    this.#failure(ref.kind, 'patch');
    const current = this.#stored(ref);
    if (current === undefined) throw new KubeError('notFound', `patching ${what}: HTTP 404`, 404);
    if (resourceVersion !== undefined && resourceVersion !== current.metadata.resourceVersion) {
      throw new KubeError('conflict', `patching ${what}: HTTP 409: the object has been modified`, 409);
    }
    this.patches.push({ ref: what, body: structuredClone(patch), dryRun: options?.dryRun === true });
    const merged = mergePatch(structuredClone(current), patch) as KubeObject;
    const spec = merged.spec;
    if (ref.kind === 'VMCluster' && this.knownVMClusterFields !== undefined && isObject(spec)) {
      for (const field of Object.keys(spec)) {
        if (!this.knownVMClusterFields.has(field)) delete spec[field];
      }
    }
    const specChanged = JSON.stringify(merged.spec ?? {}) !== JSON.stringify(current.spec ?? {});
    merged.metadata.generation = (current.metadata.generation ?? 1) + (specChanged ? 1 : 0);
    merged.metadata.resourceVersion = this.#nextVersion();
    if (this.#operator && !this.heldBack.has(what) && operatedKinds.has(ref.kind)) {
      merged.status = {
        ...(merged.status ?? {}),
        updateStatus: 'operational',
        observedGeneration: merged.metadata.generation,
      };
    }
    if (options?.dryRun) return structuredClone(merged);
    this.objects.set(MemoryKube.key(ref.apiVersion, ref.kind, ref.namespace, ref.name), merged);
    return structuredClone(merged);
  }

  async create(object: KubeObject & { apiVersion: string; kind: string }): Promise<KubeObject> {
    const { namespace = 'default', name = '' } = object.metadata;
    this.reads.push(`create ${object.kind} ${namespace}/${name}`);
    this.#failure(object.kind);
    const key = MemoryKube.key(object.apiVersion, object.kind, namespace, name);
    if (this.objects.has(key)) {
      throw new KubeError(
        'conflict',
        `creating ${object.kind} ${namespace}/${name}: HTTP 409: already exists`,
        409,
      );
    }
    const stored = structuredClone(object);
    stored.metadata = {
      ...stored.metadata,
      namespace,
      resourceVersion: this.#nextVersion(),
      generation: 1,
      uid: stored.metadata.uid ?? `uid-${name}`,
    };
    this.objects.set(key, stored);
    this.created.push(structuredClone(stored));
    return structuredClone(stored);
  }

  async list(
    apiVersion: string,
    kind: string,
    namespace: string,
    labelSelector?: string,
  ): Promise<KubeObject[]> {
    this.reads.push(`list ${kind} ${namespace} ${labelSelector ?? ''}`);
    await this.beforeRead?.(`list ${kind} ${namespace}`);
    this.#failure(kind);
    const wanted = (labelSelector ?? '')
      .split(',')
      .filter(Boolean)
      .map((term) => term.split('=') as [string, string]);
    return (
      [...this.objects.values()]
        .filter((object) => object.apiVersion === apiVersion && object.kind === kind)
        // Namespace '' lists across all namespaces, as the API server does.
        .filter((object) => namespace === '' || object.metadata.namespace === namespace)
        .filter((object) => wanted.every(([key, value]) => object.metadata.labels?.[key] === value))
        .map((object) => structuredClone(object))
    );
  }

  /** Sets an object's status as its controller would (a VM kind's by default, or a Rollout's). */
  setStatus(kind: string, name: string, status: Record<string, unknown>, namespace = 'vm'): void {
    const apiVersion = kind === 'Rollout' ? 'argoproj.io/v1alpha1' : vmApi;
    const object = this.#stored({ apiVersion, kind, namespace, name });
    if (object === undefined) throw new Error(`no ${kind} ${namespace}/${name}`);
    object.status = { ...(object.status ?? {}), ...status };
    object.metadata.resourceVersion = this.#nextVersion();
  }

  /** A copy of a stored object (a VM kind's by default), without logging a read. */
  getStored(kind: string, name: string, apiVersion = vmApi, namespace = 'vm'): KubeObject {
    const object = this.#stored({ apiVersion, kind, namespace, name });
    if (object === undefined) throw new Error(`no ${kind} ${namespace}/${name}`);
    return structuredClone(object);
  }
}

export function readyPod(
  namespace: string,
  name: string,
  labels: Record<string, string>,
  ports: Record<string, number>,
  options: { ready?: boolean; ip?: string; args?: string[]; phase?: string } = {},
): KubeObject & Pod & { apiVersion: string; kind: string } {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace, labels },
    spec: {
      containers: [
        {
          name: 'main',
          args: options.args ?? [],
          ports: Object.entries(ports).map(([portName, containerPort]) => ({
            name: portName,
            containerPort,
          })),
        },
      ],
    },
    status: {
      phase: options.phase ?? 'Running',
      podIP: options.ip ?? '127.0.0.1',
      conditions: [{ type: 'Ready', status: options.ready === false ? 'False' : 'True' }],
    },
  };
}

export function secret(namespace: string, name: string, data: Record<string, string | Buffer>) {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name, namespace },
    data: Object.fromEntries(
      Object.entries(data).map(([key, value]) => [key, Buffer.from(value).toString('base64')]),
    ),
  };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** RFC 7396: an object patch merges member by member (null deletes), anything else replaces the target. */
function mergePatch(target: unknown, patch: unknown): unknown {
  if (!isObject(patch)) return structuredClone(patch);
  const result: Record<string, unknown> = isObject(target) ? { ...target } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete result[key];
    else result[key] = mergePatch(result[key], value);
  }
  return result;
}
