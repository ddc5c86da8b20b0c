// Queries still executing in a zone's own query pods, read from each pod's /metrics (docs/victoriametrics.md,
// "Queries in flight"): vmselect (a VMCluster) and the single-node process (a VMSingle) count the select requests
// holding one of their -search.maxConcurrentRequests slots in `vm_concurrent_select_current`, vlselect (a
// VLCluster) in `vl_concurrent_select_current`. A request waiting for a slot is not counted, but one waits only
// while every slot is taken, so a reading of 0 means none executes and none waits. The drain move reads this once
// vmauth no longer routes to the zone; a pod that cannot be read, or does not expose the gauge, is no reading: the
// caller falls back to its grace period.

import type { KubeObjects } from '../kube/objects.ts';
import { equalitySelector } from '../kube/selectors.ts';
import { podScrapeFailure, podScrapeTarget } from './pod-proxy.ts';
import { describePod, listSelectedPods } from './pods.ts';
import { ScrapeError, type ScrapeLimits, scrapeMetrics } from './scrape.ts';
import type { ScrapeAccess } from './scrape-credentials.ts';
import type { ZoneKindName } from './zone-kinds.ts';

/** Every VictoriaMetrics process's version gauge (label `short_version`, e.g. `v1.151.0`). */
const appVersionMetric = 'vm_app_version';

/** Where a zone's queries run and the gauge that counts them. */
export interface QueryPods {
  namespace: string;
  labelSelector: string;
  /** The container port name the operator gives the component (`http`). */
  port: number | string;
  /** The gauge of requests executing now. */
  metric: string;
  /** The component, for messages (`vmselect`, `vmsingle`, `vlselect`). */
  component: string;
  /** What the gauge counts, for messages (default `query`). */
  counts?: string;
  /** A process that registers the gauge only once it served its first request (vmauth): given the page's
   *  `vm_app_version` short_version, whether the absence of the gauge means none (else it is no reading). */
  absentMeansNone?: (version: string | undefined) => boolean;
}

const inFlightComponent: Readonly<Record<ZoneKindName, { component: string; metric: string }>> = {
  VMCluster: { component: 'vmselect', metric: 'vm_concurrent_select_current' },
  VMSingle: { component: 'vmsingle', metric: 'vm_concurrent_select_current' },
  VLCluster: { component: 'vlselect', metric: 'vl_concurrent_select_current' },
};

/** The operator's selector of a cluster component's pods (operator ClusterSelectorLabels: `vmselect`, `vmstorage`,
 *  `vlselect`, …, or the single-node `vmsingle`), as for vmauth and vmagent pods. */
export function zoneComponentSelector(component: string, name: string): string {
  return equalitySelector({
    'app.kubernetes.io/name': component,
    'app.kubernetes.io/instance': name,
    'app.kubernetes.io/component': 'monitoring',
    'managed-by': 'vm-operator',
  });
}

/** The operator's query pods of a zone object. */
export function zoneQueryPods(kind: ZoneKindName, namespace: string, name: string): QueryPods {
  const { component, metric } = inFlightComponent[kind];
  return {
    namespace,
    labelSelector: zoneComponentSelector(component, name),
    port: 'http',
    metric,
    component,
  };
}

export interface PodQueries {
  pod: string;
  /** Requests executing now, when the pod answered with the gauge. */
  inFlight?: number;
  /** Why there is no figure (unreachable, not Ready, no such gauge). */
  problem?: string;
}

/** idle: every pod answered 0; busy: some pod executes queries; unknown: some pod gave no figure (or none exist). */
export interface QueriesInFlight {
  state: 'idle' | 'busy' | 'unknown';
  message: string;
  pods: PodQueries[];
  /** Requests executing now, summed over the pods that answered. */
  total: number;
}

/** Reads every query pod of the zone once. `kube` is the zone's cluster (its pods are scraped through its pod
 *  access: directly, or through its API server's pod proxy). Pods are scraped over plain HTTP without credentials. */
export function readQueriesInFlight(
  kube: KubeObjects,
  pods: QueryPods,
  limits?: ScrapeLimits,
): Promise<QueriesInFlight> {
  return readInFlightGauge(kube, pods, { scheme: 'http' }, limits);
}

/** Reads a gauge of requests in flight from every pod `pods` selects, once: the zone's query pods above, and
 *  vmauth's own (vmauth-requests.ts). `access`: how the pods' /metrics is reached (scheme, TLS, credentials). */
export async function readInFlightGauge(
  kube: KubeObjects,
  pods: QueryPods,
  access: ScrapeAccess,
  limits?: ScrapeLimits,
): Promise<QueriesInFlight> {
  const { active } = await listSelectedPods(kube, pods.namespace, pods.labelSelector);
  if (active.length === 0) {
    return {
      state: 'unknown',
      message: `no ${pods.component} pod matches ${pods.labelSelector} in namespace ${pods.namespace}`,
      pods: [],
      total: 0,
    };
  }
  const each = await Promise.all(
    active.map(async (object): Promise<PodQueries> => {
      const pod = describePod(object, pods.port);
      if (pod.address === undefined) return { pod: pod.key, problem: pod.problem ?? 'no address' };
      try {
        const page = await scrapeMetrics(
          podScrapeTarget(
            { namespace: pods.namespace, name: pod.name, address: pod.address },
            access,
            kube.registration,
          ),
          [pods.metric, appVersionMetric],
          limits,
        );
        const value = page.samples.find((sample) => sample.name === pods.metric)?.value;
        const version = page.samples.find((sample) => sample.name === appVersionMetric)?.labels.short_version;
        if (value === undefined && pods.absentMeansNone?.(version) === true)
          return { pod: pod.key, inFlight: 0 };
        if (value === undefined || !Number.isFinite(value) || value < 0) {
          return { pod: pod.key, problem: `pod ${pod.key} exposes no ${pods.metric}` };
        }
        return { pod: pod.key, inFlight: value };
      } catch (error) {
        if (!(error instanceof ScrapeError)) throw error;
        return { pod: pod.key, problem: podScrapeFailure(kube.registration, pods.namespace, error) };
      }
    }),
  );
  const total = each.reduce((sum, p) => sum + (p.inFlight ?? 0), 0);
  const unknown = each.filter((p) => p.inFlight === undefined);
  if (unknown.length > 0) {
    return {
      state: 'unknown',
      message: unknown.map((p) => p.problem).join('; '),
      pods: each,
      total,
    };
  }
  const busy = each.filter((p) => (p.inFlight ?? 0) > 0);
  if (busy.length > 0) {
    return {
      state: 'busy',
      message: `${busy.map((p) => `${p.pod}: ${p.inFlight}`).join(', ')} (${pods.metric})`,
      pods: each,
      total,
    };
  }
  return {
    state: 'idle',
    message: `no ${pods.counts ?? 'query'} executes on the ${each.length} ${pods.component} pod${each.length === 1 ? '' : 's'}`,
    pods: each,
    total,
  };
}
