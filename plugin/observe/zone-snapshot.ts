// The zone states as of a recent pair of list calls (Rollouts and VMClusters, all namespaces), shared by every
// scrape within `ttlMs`: Prometheus, a second scraper and /status readers cost two API calls per TTL, not per
// request. A failed listing is never papered over with an older answer: the snapshot says it failed, and the
// zone metrics are left out (an alert that is silenced by vmzones_zone_maintenance then fires rather than hides).

import type { KubeObjects } from '../kube/objects.ts';
import { vmApiVersion } from '../vm/vmcluster.ts';
import { deriveZoneStates, type ZoneRow } from './zone-states.ts';

export const defaultSnapshotTtlMs = 10_000;

export type ZoneSnapshot =
  | { ok: true; takenAt: Date; zones: ZoneRow[]; problems: string[] }
  | { ok: false; takenAt: Date; error: string };

export class ZoneSnapshots {
  readonly #kube: () => KubeObjects;
  readonly #ttlMs: number;
  readonly #now: () => number;
  #latest: { at: number; snapshot: Promise<ZoneSnapshot> } | undefined;

  constructor(kube: () => KubeObjects, ttlMs = defaultSnapshotTtlMs, now: () => number = Date.now) {
    this.#kube = kube;
    this.#ttlMs = ttlMs;
    this.#now = now;
  }

  /** The snapshot of the last `ttlMs` (one listing in flight at a time), or a new one. */
  get(): Promise<ZoneSnapshot> {
    const now = this.#now();
    if (this.#latest === undefined || now - this.#latest.at >= this.#ttlMs) {
      this.#latest = { at: now, snapshot: this.#take(new Date(now)) };
    }
    return this.#latest.snapshot;
  }

  async #take(takenAt: Date): Promise<ZoneSnapshot> {
    try {
      const kube = this.#kube();
      const [rollouts, vmclusters] = await Promise.all([
        kube.list('argoproj.io/v1alpha1', 'Rollout', ''),
        kube.list(vmApiVersion, 'VMCluster', ''),
      ]);
      return { ok: true, takenAt, ...deriveZoneStates({ rollouts, vmclusters }) };
    } catch (err) {
      return { ok: false, takenAt, error: err instanceof Error ? err.message : String(err) };
    }
  }
}
