// Which zones are in maintenance (between drainReads and restoreReads, or being rolled back), derived from the
// VMClusters' vmzones.io/maintenance annotations each time the reconciler lists them — never from what this
// process remembers doing. The observe layer exports it as vmzones_zone_maintenance{zone,vmcluster,namespace}.

import type { KubeObject } from '../kube/objects.ts';
import { maintenanceAnnotation, StateError, zoneState } from './state.ts';

export interface ZoneMaintenance {
  zone: string;
  vmcluster: string;
  namespace: string;
  since: string;
  reason: string;
}

let current: readonly ZoneMaintenance[] = [];
let observedAt: Date | undefined;

/** The zones whose VMCluster carries a maintenance annotation (a malformed one still counts, reason says so). */
export function maintenanceOf(clusters: readonly KubeObject[]): ZoneMaintenance[] {
  const zones: ZoneMaintenance[] = [];
  for (const cluster of clusters) {
    if (cluster.metadata.annotations?.[maintenanceAnnotation] === undefined) continue;
    const base = { vmcluster: cluster.metadata.name ?? '', namespace: cluster.metadata.namespace ?? '' };
    try {
      const maintenance = zoneState(cluster).maintenance;
      if (maintenance)
        zones.push({ ...base, zone: maintenance.zone, since: maintenance.since, reason: maintenance.reason });
    } catch (err) {
      if (!(err instanceof StateError)) throw err;
      zones.push({
        ...base,
        zone: cluster.metadata.labels?.['vmzones.io/zone'] ?? '',
        since: '',
        reason: err.message,
      });
    }
  }
  return zones.sort((a, b) => `${a.namespace}/${a.vmcluster}`.localeCompare(`${b.namespace}/${b.vmcluster}`));
}

export function recordMaintenance(clusters: readonly KubeObject[], now = new Date()): void {
  current = maintenanceOf(clusters);
  observedAt = now;
}

/** The latest snapshot and when it was taken (undefined before the first reconciler pass). */
export function currentMaintenance(): { zones: readonly ZoneMaintenance[]; observedAt: Date | undefined } {
  return { zones: current, observedAt };
}
