// The zone states as of a recent set of list calls (Rollouts and the objects of every zone kind, all
// namespaces), shared by every scrape within `ttlMs`: Prometheus, a second scraper and /status readers cost one
// listing per kind per TTL, not per request. A zone kind whose CRD is not installed lists as empty; one that may
// not be listed is named in `problems` and its zones are left out, the others still shown. A failed listing is never papered over with an older answer: the snapshot says it failed, and the
// zone metrics are left out (an alert that is silenced by vmzones_zone_maintenance then fires rather than hides).
// Zones in registered clusters (docs/multicluster.md) are listed there, per watched namespace where the plugin has
// --watch-namespaces (a zone cluster's RBAC may be a RoleBinding per namespace); a cluster that cannot be listed
// shows its zones as unknown, naming it, and out of maintenance — the same direction.

import type { ClusterClients } from '../kube/cluster-registry.ts';
import { KubeError, type KubeObject, type KubeObjects } from '../kube/objects.ts';
import { errorMessage } from '../rollouts/service-replies.ts';
import { defaultZoneKind, type ZoneKind, zoneKinds } from '../vm/zone-kinds.ts';
import { deriveZoneStates, type ZoneRow } from './zone-states.ts';

export const defaultSnapshotTtlMs = 10_000;

export type ZoneSnapshot =
  | { ok: true; takenAt: Date; zones: ZoneRow[]; problems: string[] }
  | { ok: false; takenAt: Date; error: string };

export interface ZoneSnapshotOptions {
  ttlMs?: number;
  now?: () => number;
  /** The registered clusters whose zones are listed too; default none. */
  clusters?: () => Pick<ClusterClients, 'client' | 'names'>;
  /** Where zones are listed in a registered cluster (--watch-namespaces); default all namespaces. */
  namespaces?: readonly string[] | undefined;
}

export class ZoneSnapshots {
  readonly #kube: () => KubeObjects;
  readonly #ttlMs: number;
  readonly #now: () => number;
  readonly #clusters: (() => Pick<ClusterClients, 'client' | 'names'>) | undefined;
  readonly #namespaces: readonly string[];
  #latest: { at: number; snapshot: Promise<ZoneSnapshot> } | undefined;

  constructor(kube: () => KubeObjects, options: ZoneSnapshotOptions = {}) {
    this.#kube = kube;
    this.#ttlMs = options.ttlMs ?? defaultSnapshotTtlMs;
    this.#now = options.now ?? Date.now;
    this.#clusters = options.clusters;
    this.#namespaces = options.namespaces ?? [''];
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
      const [rollouts, remote, ...objects] = await Promise.all([
        kube.list('argoproj.io/v1alpha1', 'Rollout', ''),
        this.#listRegistered(problems),
        ...Object.values(zoneKinds).map((kind) => listZoneKind(kube, kind, [''], problems)),
      ]);
      const states = deriveZoneStates({ rollouts, zoneObjects: objects.flat(), ...remote });
      return { ok: true, takenAt, zones: states.zones, problems: [...problems, ...states.problems] };
    } catch (err) {
      return { ok: false, takenAt, error: errorMessage(err) };
    }
  }

  /** Every registered cluster's zone objects; a cluster that fails is named in `unreadClusters`. */
  async #listRegistered(problems: string[]): Promise<{
    remoteZoneObjects: Record<string, KubeObject[]>;
    unreadClusters: Record<string, string>;
  }> {
    const remoteZoneObjects: Record<string, KubeObject[]> = {};
    const unreadClusters: Record<string, string> = {};
    const registry = this.#clusters?.();
    if (registry === undefined) return { remoteZoneObjects, unreadClusters };
    let names: string[];
    try {
      names = await registry.names();
    } catch (err) {
      problems.push(`the registered clusters cannot be listed: ${errorMessage(err)}`);
      return { remoteZoneObjects, unreadClusters };
    }
    await Promise.all(
      names.map(async (name) => {
        try {
          const kube = await registry.client(name);
          const found: string[] = [];
          const kinds = await Promise.all(
            Object.values(zoneKinds).map((kind) => listZoneKind(kube, kind, this.#namespaces, found)),
          );
          remoteZoneObjects[name] = kinds.flat();
          problems.push(...found.map((p) => `cluster ${name}: ${p}`));
        } catch (err) {
          unreadClusters[name] = errorMessage(err);
          problems.push(`cluster ${name}: ${errorMessage(err)}`);
        }
      }),
    );
    return { remoteZoneObjects, unreadClusters };
  }
}

/** The objects of one zone kind, each carrying its kind. VMCluster's listing must succeed: it is the snapshot. */
async function listZoneKind(
  kube: KubeObjects,
  kind: ZoneKind,
  namespaces: readonly string[],
  problems: string[],
): Promise<KubeObject[]> {
  try {
    const lists = await Promise.all(namespaces.map((n) => kube.list(kind.apiVersion, kind.kind, n)));
    return lists.flat().map((item) => ({ ...item, kind: item.kind ?? kind.kind }));
  } catch (err) {
    if (kind === defaultZoneKind || !(err instanceof KubeError)) throw err;
    if (err.kind !== 'notFound') problems.push(`listing ${kind.resource}: ${err.message}`);
    return [];
  }
}
