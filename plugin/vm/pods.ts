// Finds exactly the pods a configuration names (a label selector in one namespace) and where to scrape each.
// Every listed pod counts: one that is not Ready, has no IP, or lacks the named port is returned with the
// reason it cannot be scraped, so that callers report it as unreachable instead of skipping it. Only pods
// that have finished for good (phase Succeeded or Failed, e.g. evicted) are left out, and said so.

import type { V1Pod } from '@kubernetes/client-node';
import { CodedError } from '../goplugin/failure-codes.ts';
import { type KubeObject, type KubeObjects, namespacedName } from '../kube/objects.ts';

export interface DiscoveredPod {
  /** `namespace/name`. */
  readonly key: string;
  readonly name: string;
  readonly ready: boolean;
  readonly terminating: boolean;
  /** `host:port` to scrape; absent when the pod cannot be reached, with `problem` saying why. */
  readonly address?: string;
  readonly problem?: string;
}

export class PodSelectionError extends CodedError {
  constructor(problem: string) {
    super('PodSelectionInvalid', problem);
    this.name = 'PodSelectionError';
  }
}

/** An empty selector would match every pod of the namespace; the API server checks the syntax. */
function checkLabelSelector(selector: string): void {
  if (selector.trim() === '') {
    throw new PodSelectionError('the pod label selector is empty: it would match every pod');
  }
}

function resolvePort(pod: V1Pod, port: number | string): number | undefined {
  if (typeof port === 'number') return port;
  for (const container of pod.spec?.containers ?? []) {
    for (const candidate of container.ports ?? []) {
      if (candidate.name === port && typeof candidate.containerPort === 'number')
        return candidate.containerPort;
    }
  }
  return undefined;
}

function hostPort(ip: string, port: number): string {
  return ip.includes(':') ? `[${ip}]:${port}` : `${ip}:${port}`;
}

/** A listed object of kind Pod as client-node types it (the list call asked for `v1` `Pod`). */
function asPod(object: KubeObject): V1Pod {
  return object as V1Pod;
}

export function describePod(pod: V1Pod, port: number | string): DiscoveredPod {
  const name = pod.metadata?.name ?? '';
  const key = namespacedName(pod.metadata ?? {});
  const ready =
    pod.status?.conditions?.some((condition) => condition.type === 'Ready' && condition.status === 'True') ===
    true;
  const terminating = pod.metadata?.deletionTimestamp != null;
  const base = { key, name, ready, terminating };
  const ip = pod.status?.podIP;
  const portNumber = resolvePort(pod, port);
  if (portNumber === undefined) {
    return { ...base, problem: `pod ${key} has no container port named ${JSON.stringify(port)}` };
  }
  if (!ready) {
    const phase = pod.status?.phase ?? 'unknown';
    return {
      ...base,
      problem: `pod ${key} is not Ready (phase ${phase}${terminating ? ', terminating' : ''})`,
    };
  }
  if (ip === undefined || ip === '') return { ...base, problem: `pod ${key} has no IP address` };
  return { ...base, address: hostPort(ip, portNumber) };
}

/** The pods matching a selector, sorted by name, without those that finished for good. */
export async function listSelectedPods(
  kube: KubeObjects,
  namespace: string,
  labelSelector: string,
): Promise<{ active: V1Pod[]; finished: string[] }> {
  checkLabelSelector(labelSelector);
  const objects = await kube.list('v1', 'Pod', namespace, labelSelector);
  const active: V1Pod[] = [];
  const finished: string[] = [];
  for (const pod of objects.map(asPod)) {
    const phase = pod.status?.phase;
    const key = namespacedName({ namespace: pod.metadata?.namespace ?? namespace, name: pod.metadata?.name });
    if (phase === 'Succeeded' || phase === 'Failed') finished.push(key);
    else active.push(pod);
  }
  active.sort((a, b) => (a.metadata?.name ?? '').localeCompare(b.metadata?.name ?? ''));
  return { active, finished: finished.sort() };
}
