// An in-memory KubeObjects for unit tests of the vm and gates logic: objects by apiVersion/kind/namespace/name,
// lists filtered by equality label selectors. The real API server is exercised by test/e2e/gates/.

import type { V1Pod } from '@kubernetes/client-node';
import {
  KubeError,
  type KubeObject,
  type KubeObjects,
  type ObjectRef,
} from '../../../plugin/kube/objects.ts';

export class MemoryKube implements KubeObjects {
  readonly objects = new Map<string, KubeObject>();
  /** Errors to throw for the next calls that read `kind` (once each). */
  readonly failNext = new Map<string, KubeError>();
  readonly reads: string[] = [];

  private static key(apiVersion: string, kind: string, namespace: string, name: string): string {
    return `${apiVersion}|${kind}|${namespace}|${name}`;
  }

  put(object: KubeObject & { apiVersion: string; kind: string }): this {
    const { namespace = 'default', name = '' } = object.metadata;
    const stored = structuredClone(object);
    stored.metadata.resourceVersion ??= '1';
    this.objects.set(MemoryKube.key(object.apiVersion, object.kind, namespace, name), stored);
    return this;
  }

  private failure(kind: string): void {
    const error = this.failNext.get(kind);
    if (error !== undefined) {
      this.failNext.delete(kind);
      throw error;
    }
  }

  async get(ref: ObjectRef): Promise<KubeObject> {
    this.reads.push(`${ref.kind} ${ref.namespace}/${ref.name}`);
    this.failure(ref.kind);
    const object = this.objects.get(MemoryKube.key(ref.apiVersion, ref.kind, ref.namespace, ref.name));
    if (object === undefined) {
      throw new KubeError(
        'notFound',
        `reading ${ref.kind} ${ref.namespace}/${ref.name}: HTTP 404: not found`,
        404,
      );
    }
    return structuredClone(object);
  }

  /** RFC 7396 merge patch; a stale resourceVersion is a 409, as on the API server. */
  async mergePatch(
    ref: ObjectRef,
    patch: Record<string, unknown>,
    resourceVersion?: string,
  ): Promise<KubeObject> {
    this.reads.push(`patch ${ref.kind} ${ref.namespace}/${ref.name}`);
    this.failure(ref.kind);
    const key = MemoryKube.key(ref.apiVersion, ref.kind, ref.namespace, ref.name);
    const object = this.objects.get(key);
    if (object === undefined)
      throw new KubeError('notFound', `patching ${ref.kind} ${ref.name}: not found`, 404);
    const current = object.metadata.resourceVersion ?? '1';
    if (resourceVersion !== undefined && resourceVersion !== current) {
      throw new KubeError('conflict', `patching ${ref.kind} ${ref.name}: HTTP 409`, 409);
    }
    const merged = mergePatch(object, patch) as KubeObject;
    merged.metadata.resourceVersion = String(Number(current) + 1);
    this.objects.set(key, merged);
    return structuredClone(merged);
  }

  /** Events and other created objects, in order. */
  readonly created: KubeObject[] = [];

  async create(object: KubeObject & { apiVersion: string; kind: string }): Promise<KubeObject> {
    const { namespace = 'default', name = '' } = object.metadata;
    this.reads.push(`create ${object.kind} ${namespace}/${name}`);
    this.failure(object.kind);
    const key = MemoryKube.key(object.apiVersion, object.kind, namespace, name);
    if (this.objects.has(key)) {
      throw new KubeError(
        'conflict',
        `creating ${object.kind} ${namespace}/${name}: HTTP 409: already exists`,
        409,
      );
    }
    const stored = structuredClone({ ...object, metadata: { ...object.metadata, resourceVersion: '1' } });
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
    this.failure(kind);
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
}

export function readyPod(
  namespace: string,
  name: string,
  labels: Record<string, string>,
  ports: Record<string, number>,
  options: { ready?: boolean; ip?: string; args?: string[]; phase?: string } = {},
): KubeObject & V1Pod & { apiVersion: string; kind: string } {
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

function mergePatch(target: unknown, patch: unknown): unknown {
  if (typeof patch !== 'object' || patch === null || Array.isArray(patch)) return structuredClone(patch);
  const result: Record<string, unknown> =
    typeof target === 'object' && target !== null && !Array.isArray(target)
      ? { ...(target as Record<string, unknown>) }
      : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete result[key];
    else result[key] = mergePatch(result[key], value);
  }
  return result;
}
