// Finds exactly the pods a configuration names (a label selector in one namespace) and where to scrape each.
// Every listed pod counts: one that is not Ready, has no IP, or lacks the named port is returned with the
// reason it cannot be scraped, so that callers report it as unreachable instead of skipping it. Only pods
// that have finished for good (phase Succeeded or Failed, e.g. evicted) are left out, and said so.

import { z } from 'zod';
import { CodedError } from '../goplugin/failure-codes.ts';
import { type KubeObject, type KubeObjects, namespacedName } from '../kube/objects.ts';

// The fields of a Pod (and its containers) vmzones reads; everything else is kept as the API server sent it.
export const containerSchema = z.looseObject({
  name: z.string().optional(),
  command: z.array(z.string()).nullish(),
  args: z.array(z.string()).nullish(),
  ports: z.array(z.looseObject({ name: z.string().nullish(), containerPort: z.number().int() })).nullish(),
});
export type Container = z.infer<typeof containerSchema>;

export const podSchema = z.looseObject({
  metadata: z
    .looseObject({
      name: z.string().optional(),
      namespace: z.string().optional(),
      labels: z.record(z.string(), z.string()).nullish(),
      deletionTimestamp: z.string().nullish(),
    })
    .optional(),
  spec: z.looseObject({ containers: z.array(containerSchema).nullish() }).nullish(),
  status: z
    .looseObject({
      phase: z.string().nullish(),
      podIP: z.string().nullish(),
      conditions: z.array(z.looseObject({ type: z.string(), status: z.string() })).nullish(),
    })
    .nullish(),
});
export type Pod = z.infer<typeof podSchema>;

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

function resolvePort(pod: Pod, port: number | string): number | undefined {
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

/** A listed object of kind Pod (the list call asked for `v1` `Pod`), read through podSchema. */
function asPod(object: KubeObject): Pod {
  const result = podSchema.safeParse(object);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  throw new PodSelectionError(
    `pod ${namespacedName(object.metadata)}: ${issue?.path.join('.') ?? ''}: ${issue?.message ?? 'not a Pod'}`,
  );
}

export function describePod(pod: Pod, port: number | string): DiscoveredPod {
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
  if (ip === undefined || ip === null || ip === '')
    return { ...base, problem: `pod ${key} has no IP address` };
  return { ...base, address: hostPort(ip, portNumber) };
}

/** The pods matching a selector, sorted by name, without those that finished for good. */
export async function listSelectedPods(
  kube: KubeObjects,
  namespace: string,
  labelSelector: string,
): Promise<{ active: Pod[]; finished: string[] }> {
  checkLabelSelector(labelSelector);
  const objects = await kube.list('v1', 'Pod', namespace, labelSelector);
  const active: Pod[] = [];
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
