// An in-memory KubeObjects for unit tests of the gates' logic: objects by apiVersion/kind/namespace/name,
// lists filtered by equality label selectors. The real API server is exercised by test/e2e/gates/.

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
    this.objects.set(
      MemoryKube.key(object.apiVersion, object.kind, namespace, name),
      structuredClone(object),
    );
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

  async mergePatch(_ref: ObjectRef, _patch: Record<string, unknown>): Promise<KubeObject> {
    throw new Error('the gates never write');
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
    // Namespace '' lists across all namespaces, as the API server does.
    return [...this.objects.values()]
      .filter((object) => object.apiVersion === apiVersion && object.kind === kind)
      .filter((object) => namespace === '' || object.metadata.namespace === namespace)
      .filter((object) => wanted.every(([key, value]) => object.metadata.labels?.[key] === value))
      .map((object) => structuredClone(object));
  }
}

export function readyPod(
  namespace: string,
  name: string,
  labels: Record<string, string>,
  ports: Record<string, number>,
  options: { ready?: boolean; ip?: string; args?: string[]; phase?: string } = {},
): KubeObject & { apiVersion: string; kind: string } {
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
