// Which zones are in maintenance (between drainReads and restoreReads, or being rolled back), derived from the
// VMClusters' vmzones.io/maintenance annotations — never from what a process remembers doing. The observe layer
// lists the VMClusters when scraped and exports it as vmzones_zone_maintenance (docs/observe.md).

import type { KubeObject } from '../../kube/objects.ts';
import { maintenanceAnnotation, StateError, zoneState } from './zone-annotations.ts';

export interface ZoneMaintenance {
  zone: string;
  vmcluster: string;
  namespace: string;
  since: string;
  reason: string;
}

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
