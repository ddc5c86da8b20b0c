// A scripted watch for the watch cache's tests (plugin/kube/watch-cache.ts): a subclass of client-node's Watch that
// records each watch request and lets the test send its events and end it, as the API server would.

import { KubeConfig, type KubernetesListObject, Watch } from '@kubernetes/client-node';
import type { KubeObject } from '../../../plugin/kube/objects.ts';

export const kind = {
  apiVersion: 'operator.victoriametrics.com/v1beta1',
  kind: 'VMCluster',
  plural: 'vmclusters',
};

export function kubeConfig(): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'c', server: 'https://127.0.0.1:1' }],
    users: [{ name: 'u' }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
    currentContext: 'x',
  });
  return kc;
}

export interface OpenWatch {
  path: string;
  params: Record<string, unknown>;
  send(type: string, object: unknown): void;
  end(err: unknown): void;
}

export class ScriptedWatch extends Watch {
  readonly opened: OpenWatch[] = [];
  #waiters: (() => void)[] = [];
  override async watch(
    path: string,
    params: Record<string, string | number | boolean | undefined>,
    // biome-ignore lint/suspicious/noExplicitAny: client-node's callback type
    callback: (phase: string, apiObj: any, watchObj?: any) => void,
    done: (err: unknown) => void,
  ): Promise<AbortController> {
    let ended = false;
    this.opened.push({
      path,
      params,
      send: (type, object) => callback(type, object, { type, object }),
      end: (err) => {
        if (ended) return;
        ended = true;
        done(err);
      },
    });
    for (const w of this.#waiters.splice(0)) w();
    return new AbortController();
  }
  /** Resolves once `count` watches have been opened. */
  async opens(count: number): Promise<OpenWatch> {
    while (this.opened.length < count) await new Promise<void>((r) => this.#waiters.push(r));
    await new Promise((r) => setImmediate(r));
    return this.opened[count - 1] as OpenWatch;
  }
}

export function cluster(
  name: string,
  resourceVersion: string,
  extra: Partial<KubeObject['metadata']> = {},
): KubeObject {
  return {
    apiVersion: kind.apiVersion,
    kind: kind.kind,
    metadata: { name, namespace: 'vm', resourceVersion, ...extra },
  };
}

export function lister(pages: { rv: string; items: KubeObject[] }[]) {
  const calls = { count: 0 };
  const list = async (): Promise<KubernetesListObject<KubeObject>> => {
    const page = pages[Math.min(calls.count, pages.length - 1)] as { rv: string; items: KubeObject[] };
    calls.count++;
    return { apiVersion: 'v1', kind: 'List', metadata: { resourceVersion: page.rv }, items: page.items };
  };
  return { list, calls };
}
