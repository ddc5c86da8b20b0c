// Whether a zone's storage accepts writes (docs/victoriametrics.md, "Read-only storage"): vmstorage switches itself
// to read-only when its free disk space falls below -storage.minFreeDiskSpaceBytes and says so in the gauge
// `vm_storage_is_read_only` (1) on its /metrics; vminsert then sends elsewhere or nowhere, and the zone falls behind
// while it stays operational. The single-node process (a VMSingle) exports the same gauge, vlstorage (a VLCluster)
// `vl_storage_is_read_only`. Each storage pod is read through the pod access the gates use (its address, or its
// cluster's pod proxy: pod-proxy.ts). Evidence, never its absence: a pod that gives no figure is no proof of
// writable storage; a zone without storage pods is said as such.

import type { KubeObjects } from '../kube/objects.ts';
import { podScrapeFailure, podScrapeTarget } from './pod-proxy.ts';
import { describePod, listSelectedPods } from './pods.ts';
import { zoneComponentSelector } from './queries-in-flight.ts';
import { ScrapeError, type ScrapeLimits, scrapeMetrics } from './scrape.ts';
import type { ZoneKindName } from './zone-kinds.ts';

/** The pods that hold a zone kind's data, and the gauge that says their storage refuses writes. */
const storageComponent: Readonly<Record<ZoneKindName, { component: string; metric: string }>> = {
  VMCluster: { component: 'vmstorage', metric: 'vm_storage_is_read_only' },
  VMSingle: { component: 'vmsingle', metric: 'vm_storage_is_read_only' },
  VLCluster: { component: 'vlstorage', metric: 'vl_storage_is_read_only' },
};

export interface StorageWritability {
  /** writable: every storage pod answered 0; readOnly: some answered 1; unknown: some gave no figure; none: the zone
   *  has no storage pod to ask (the operator always runs some: a zone whose storage is not its pods, such as the
   *  sandbox's simulated operator's single process, has nothing to read here). */
  state: 'writable' | 'readOnly' | 'unknown' | 'none';
  message: string;
}

/** How long a storage pod may take to answer: its /metrics is small and local; one that hangs longer is no reading
 *  (and keeps the drain's admission from reading the others again inside its call). */
export const storageScrapeTimeoutMs = 3_000;

/** Scrapes every storage pod of the zone object once (plain HTTP, no credentials, as the query pods are read). */
export async function readStorageWritability(
  kube: KubeObjects,
  zone: { kind: ZoneKindName; namespace: string; name: string },
  limits: ScrapeLimits = { timeoutMs: storageScrapeTimeoutMs },
): Promise<StorageWritability> {
  const { component, metric } = storageComponent[zone.kind];
  const selector = zoneComponentSelector(component, zone.name);
  const { active } = await listSelectedPods(kube, zone.namespace, selector);
  if (active.length === 0) {
    return {
      state: 'none',
      message: `no ${component} pod matches ${selector} in namespace ${zone.namespace}`,
    };
  }
  const readings = await Promise.all(
    active.map(async (object): Promise<{ pod: string; readOnly?: boolean; problem?: string }> => {
      const pod = describePod(object, 'http');
      if (pod.address === undefined) return { pod: pod.key, problem: pod.problem ?? 'no address' };
      const target = podScrapeTarget(
        { namespace: zone.namespace, name: pod.name, address: pod.address },
        { scheme: 'http' },
        kube.registration,
      );
      try {
        const gauge = (await scrapeMetrics(target, [metric], limits)).samples.find((s) => s.name === metric);
        if (gauge === undefined || (gauge.value !== 0 && gauge.value !== 1)) {
          return { pod: pod.key, problem: `${component} ${pod.key} exposes no ${metric} of 0 or 1` };
        }
        return { pod: pod.key, readOnly: gauge.value === 1 };
      } catch (error) {
        if (!(error instanceof ScrapeError)) throw error;
        return { pod: pod.key, problem: podScrapeFailure(kube.registration, zone.namespace, error) };
      }
    }),
  );
  const readOnly = readings.filter((r) => r.readOnly === true).map((r) => r.pod);
  if (readOnly.length > 0) {
    return {
      state: 'readOnly',
      message: `${component} ${readOnly.join(', ')} ${readOnly.length === 1 ? 'is' : 'are'} read-only (${metric} 1: free disk space below -storage.minFreeDiskSpaceBytes)`,
    };
  }
  const unknown = readings.flatMap((r) => (r.problem === undefined ? [] : [r.problem]));
  if (unknown.length > 0)
    return { state: 'unknown', message: `no reading of ${metric}: ${unknown.join('; ')}` };
  return {
    state: 'writable',
    message: `${readings.length} ${component} pod${readings.length === 1 ? '' : 's'} writable (${metric} 0)`,
  };
}
