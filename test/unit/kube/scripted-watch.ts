// A scripted watch for the watch cache's tests (plugin/kube/watch-cache.ts): a Watcher that records each watch
// request and lets the test send its events and end it, as the API server would.

import type { WatchCallback, WatchHandle } from '../../../plugin/kube/kube-client.ts';
import { connectionOfFields, type KubeConnection } from '../../../plugin/kube/kube-config.ts';
import type { KubeObject } from '../../../plugin/kube/objects.ts';
import type { ListedObjects, Watcher } from '../../../plugin/kube/watch-cache.ts';

export const kind = {
  apiVersion: 'operator.victoriametrics.com/v1beta1',
  kind: 'VMCluster',
  plural: 'vmclusters',
};

/** A cluster nothing listens at: the caches under test are given their list and watch. */
export function kubeConfig(): KubeConnection {
  return connectionOfFields({ server: 'https://127.0.0.1:1', skipTLSVerify: false }, 'test');
}

export interface OpenWatch {
  path: string;
  params: Record<string, unknown>;
  send(type: string, object: unknown): void;
  end(err: unknown): void;
}

export class ScriptedWatch implements Watcher {
  readonly opened: OpenWatch[] = [];
  #waiters: (() => void)[] = [];
  async watch(
    path: string,
    params: Record<string, string | number | boolean | undefined>,
    callback: WatchCallback,
    done: (err: unknown) => void,
  ): Promise<WatchHandle> {
    let ended = false;
    this.opened.push({
      path,
      params,
      send: (type, object) => callback(type, object),
      end: (err) => {
        if (ended) return;
        ended = true;
        done(err);
      },
    });
    for (const w of this.#waiters.splice(0)) w();
    return { abort: () => {} };
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
  const list = async (): Promise<ListedObjects> => {
    const page = pages[Math.min(calls.count, pages.length - 1)] as { rv: string; items: KubeObject[] };
    calls.count++;
    return { metadata: { resourceVersion: page.rv }, items: page.items };
  };
  return { list, calls };
}
