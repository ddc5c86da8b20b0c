// The zone states as of a recent set of list calls (Rollouts and the objects of every zone kind, all
// namespaces), shared by every scrape within `ttlMs`: Prometheus, a second scraper and /status readers cost one
// listing per kind per TTL, not per request. A zone kind whose CRD is not installed lists as empty; one that may
// not be listed is named in `problems` and its zones are left out, the others still shown. A failed listing is never papered over with an older answer: the snapshot says it failed, and the
// zone metrics are left out (an alert that is silenced by vmzones_zone_maintenance then fires rather than hides).

import { KubeError, type KubeObject, type KubeObjects } from '../kube/objects.ts';
import { defaultZoneKind, type ZoneKind, zoneKinds } from '../vm/zone-kinds.ts';
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
      const problems: string[] = [];
      const [rollouts, ...objects] = await Promise.all([
        kube.list('argoproj.io/v1alpha1', 'Rollout', ''),
        ...Object.values(zoneKinds).map((kind) => listZoneKind(kube, kind, problems)),
      ]);
      const states = deriveZoneStates({ rollouts, zoneObjects: objects.flat() });
      return { ok: true, takenAt, zones: states.zones, problems: [...problems, ...states.problems] };
    } catch (err) {
      return { ok: false, takenAt, error: err instanceof Error ? err.message : String(err) };
    }
  }
}

/** The objects of one zone kind, each carrying its kind. VMCluster's listing must succeed: it is the snapshot. */
async function listZoneKind(kube: KubeObjects, kind: ZoneKind, problems: string[]): Promise<KubeObject[]> {
  try {
    const items = await kube.list(kind.apiVersion, kind.kind, '');
    return items.map((item) => ({ ...item, kind: item.kind ?? kind.kind }));
  } catch (err) {
    if (kind === defaultZoneKind || !(err instanceof KubeError)) throw err;
    if (err.kind !== 'notFound') problems.push(`listing ${kind.resource}: ${err.message}`);
    return [];
  }
}
