// The background reconciler of the step-plugin process. Each pass lists the VMClusters once and
//   1. hands over every zone whose walk ended without a step finishing it (plugin/zones/walk.ts: promoted past,
//      superseded, reverted, deleted, aborted with the Abort lost), from its lease and rollback record alone;
//   2. advances every handed-over zone (plugin/zones/finish-zone.ts), each on its own: a zone that waits for its
//      operator or for another Rollout never holds up the others. Rollbacks still take a zone out of reads only
//      when no other zone is out and the zones left serving are healthy (plugin/zones/read-safety.ts).
// Everything is read from Kubernetes, so work left by an earlier process, or by a crashed one, resumes. The
// controller's own cluster and every registered one (docs/multicluster.md) are listed; a cluster that cannot be
// listed is skipped for the pass with a warning naming it, and the others go on.

import type { Logger } from '../goplugin/index.ts';
import { type ClusterClients, hubOnly } from '../kube/cluster-registry.ts';
import type { KubeObject, KubeObjects } from '../kube/objects.ts';
import type { RolloutProgress } from '../rollouts/rollout-object.ts';
import { vmApiVersion, vmclusterRef } from '../vm/vmcluster.ts';
import { zoneKube } from './cluster-routing.ts';
import type { ZoneQueueCheck } from './completeness.ts';
import { emitZoneEvent } from './events.ts';
import { finishZone, type ZoneProgress } from './finish-zone.ts';
import { handOver } from './handoff.ts';
import { isTransient } from './outcome.ts';
import { specFromAnnotations } from './spec.ts';
import { type Lease, type RollbackRecord, type RolloutIdentity, sameRevision } from './state.ts';
import { readBalancerConfig, vmagentsOf } from './target.ts';
import { loadedCluster } from './vmcluster-state.ts';
import { holderProgress, walkVerdict } from './walk.ts';

export type { ZoneProgress } from './finish-zone.ts';

export interface ReconcilerOptions {
  /** The controller's own cluster. */
  kube: KubeObjects;
  /** The registered clusters whose VMClusters are zones too; default: none. */
  clusters?: ClusterClients;
  logger: Logger;
  now?: () => Date;
  intervalMs?: number;
  /** The queue check a finished zone must pass before it serves reads again (main.ts hands in the gate's). */
  queueCheck?: ZoneQueueCheck;
  /** Namespaces to list (namespace-scoped RBAC); default: one list across all namespaces. */
  namespaces?: readonly string[];
}

const vmzonesAnnotations = ['vmzones.io/lease', 'vmzones.io/rollback', 'vmzones.io/handoff'];

/** `namespace/name`, prefixed by the registered cluster's name for a VMCluster outside the controller's own. */
function key(cluster: KubeObject, where: string | undefined = undefined): string {
  return `${where === undefined ? '' : `${where}/`}${cluster.metadata.namespace}/${cluster.metadata.name}`;
}

/** The read balancer's cluster, as the VMCluster's own records say (handoff, lease, rollback record). */
function readsClusterOf(listed: KubeObject): string | undefined {
  const { state } = loadedCluster(listed);
  return (state.handoff?.reads ?? state.lease?.reads ?? state.rollback?.reads)?.cluster;
}

interface Found {
  where: string | undefined;
  object: KubeObject;
  kube: KubeObjects;
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

export class ZoneReconciler {
  readonly #kube: KubeObjects;
  readonly #clusters: ClusterClients;
  readonly #logger: Logger;
  readonly #now: () => Date;
  readonly #intervalMs: number;
  readonly #queueCheck: ZoneQueueCheck | undefined;
  readonly #namespaces: readonly string[];
  #timer: NodeJS.Timeout | undefined;
  #registryProblem: string | undefined;
  #running: Promise<void> | undefined;

  constructor(options: ReconcilerOptions) {
    this.#kube = options.kube;
    this.#clusters = options.clusters ?? hubOnly(options.kube);
    this.#logger = options.logger;
    this.#now = options.now ?? (() => new Date());
    this.#intervalMs = options.intervalMs ?? 5_000;
    this.#queueCheck = options.queueCheck;
    this.#namespaces = options.namespaces ?? [''];
  }

  /** Runs a pass now (work left by an earlier process resumes) and then every interval. */
  start(): void {
    if (this.#timer !== undefined) return;
    const pass = () => {
      if (this.#running === undefined) {
        this.#running = this.tick()
          .then(() => undefined)
          .catch((err: unknown) => {
            this.#logger.warn('reconciler pass failed; retrying', { error: errorText(err) });
          })
          .finally(() => {
            this.#running = undefined;
          });
      }
    };
    pass();
    this.#timer = setInterval(pass, this.#intervalMs);
    this.#timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.#timer);
    this.#timer = undefined;
    await this.#running;
  }

  /** One pass; returns the progress of every handed-over zone, by `namespace/name`. */
  async tick(): Promise<Record<string, ZoneProgress>> {
    const clusters = await this.#listZones();
    const progresses = new Map<string, Promise<RolloutProgress | undefined>>();
    const progressOf = (holder: RolloutIdentity) => {
      const id = `${holder.rollout}|${holder.uid}`;
      let found = progresses.get(id);
      if (found === undefined) {
        found = holderProgress(this.#kube, holder);
        progresses.set(id, found);
      }
      return found;
    };
    const pending: { id: string; namespace: string; name: string; kube: KubeObjects }[] = [];
    for (const found of clusters) {
      const id = key(found.object, found.where);
      try {
        const readsCluster = await this.#adopt(found, progressOf);
        if (readsCluster !== false) {
          pending.push({
            id,
            namespace: found.object.metadata.namespace ?? '',
            name: found.object.metadata.name ?? '',
            kube: await this.#zoneKube(found.where, readsCluster.cluster, found.object),
          });
        }
      } catch (err) {
        this.#logger.warn('reconciler: could not judge a zone; retrying', {
          vmcluster: id,
          error: errorText(err),
        });
      }
    }
    const results = await Promise.all(
      pending.map(async ({ id, namespace, name, kube }): Promise<[string, ZoneProgress]> => {
        try {
          return [
            id,
            await finishZone(
              {
                kube,
                clusters: this.#clusters,
                logger: this.#logger,
                now: this.#now,
                ...(this.#queueCheck === undefined ? {} : { queueCheck: this.#queueCheck }),
              },
              vmclusterRef(namespace, name),
            ),
          ];
        } catch (err) {
          (isTransient(err) ? this.#logger.info : this.#logger.warn).call(
            this.#logger,
            'reconciler: zone not advanced; retrying',
            {
              vmcluster: id,
              error: errorText(err),
            },
          );
          return [id, 'working'];
        }
      }),
    );
    return Object.fromEntries(results);
  }

  /** The VMClusters with vmzones state in the controller's cluster and in every registered one. */
  async #listZones(): Promise<Found[]> {
    let names: string[] = [];
    try {
      names = await this.#clusters.names();
      this.#registryProblem = undefined;
    } catch (err) {
      // Said once per problem, not every pass: a single-cluster install may not grant the Secret list at all.
      if (this.#registryProblem !== errorText(err)) {
        this.#registryProblem = errorText(err);
        this.#logger.warn(
          'reconciler: cannot list the registered clusters; only this cluster is reconciled',
          {
            error: errorText(err),
          },
        );
      }
    }
    const all = await Promise.all(
      [undefined, ...names].map(async (where): Promise<Found[]> => {
        try {
          const kube = await this.#clusters.client(where);
          const listed = await Promise.all(
            this.#namespaces.map((n) => kube.list(vmApiVersion, 'VMCluster', n)),
          );
          return listed
            .flat()
            .filter((c) => vmzonesAnnotations.some((a) => c.metadata.annotations?.[a] !== undefined))
            .map((object) => ({ where, object, kube }));
        } catch (err) {
          // The controller's own cluster failing fails the pass, as before; a registered one is skipped.
          if (where === undefined) throw err;
          this.#logger.warn('reconciler: a registered cluster cannot be listed; its zones wait', {
            cluster: where,
            error: errorText(err),
          });
          return [];
        }
      }),
    );
    return all.flat();
  }

  /** The one zone's objects, each in its own cluster: its VMCluster there, its reads where vmauth runs. */
  #zoneKube(where: string | undefined, reads: string | undefined, listed: KubeObject): Promise<KubeObjects> {
    return zoneKube(this.#clusters, this.#kube, { zone: where, reads }, listed.metadata.namespace ?? '');
  }

  /** Whether the zone has handed-over work now (it had already, or its walk ended and it is handed over here),
   *  with the cluster of its read balancer; false when not. */
  async #adopt(
    found: Found,
    progressOf: (holder: RolloutIdentity) => Promise<RolloutProgress | undefined>,
  ): Promise<false | { cluster: string | undefined }> {
    const listed = found.object;
    const cluster = loadedCluster(listed);
    const { state } = cluster;
    if (state.handoff !== undefined) return { cluster: readsClusterOf(listed) };
    const leased = state.lease !== undefined;
    const holder: RolloutIdentity | undefined =
      state.lease ?? (state.rollback?.phase === 'applied' ? state.rollback : undefined);
    if (holder === undefined) return false;
    const zone = state.lease?.zone ?? state.maintenance?.zone ?? state.rollback?.zone;
    if (zone === undefined) return false;
    const progress = await progressOf(holder);
    const verdict = walkVerdict(holder, zone, leased, progress);
    if (verdict.verdict === 'walking') return false;

    const rollback: RollbackRecord | undefined =
      verdict.verdict === 'rollback' &&
      state.rollback !== undefined &&
      sameRevision(state.rollback, holder) &&
      state.rollback.phase === 'applied' &&
      state.rollback.changes.length > 0
        ? state.rollback
        : undefined;
    if (!leased && rollback === undefined) return false;
    const reads = this.#readsOf(state.lease, state.rollback, progress, listed);
    if (typeof reads === 'string') {
      this.#logger.warn('reconciler: cannot finish a zone whose walk ended', {
        vmcluster: key(listed, found.where),
        why: verdict.why,
        problem: reads,
      });
      return false;
    }
    const kube = await this.#zoneKube(found.where, reads.reads.cluster, listed);
    await handOver(
      kube,
      cluster,
      {
        zone,
        cluster: vmclusterRef(listed.metadata.namespace ?? '', listed.metadata.name ?? ''),
        holder,
        by: `vmzones reconciler: ${verdict.why}${rollback ? '; rolling back its change' : '; the zone keeps the change it has'}`,
        reads: reads.reads,
        drainGracePeriod: reads.drainGracePeriod,
        vmagents: reads.vmagents,
        vmagentsCluster: reads.vmagentsCluster,
        rollback,
      },
      this.#now(),
    );
    await emitZoneEvent(
      kube,
      this.#logger,
      {
        reason: 'ZoneWalkEnded',
        action: 'Reconcile',
        note: `zone ${zone}: ${verdict.why}; vmzones ${rollback ? 'rolls back its change, then restores its reads once it is complete' : `finishes it with the change it has${state.rollback?.phase === 'applied' && sameRevision(state.rollback, holder) ? ` (revision ${holder.revision})` : ' (this revision did not change it)'} and restores its reads once it is complete`}`,
        warning: rollback !== undefined,
        holder,
        zone,
        cluster: vmclusterRef(listed.metadata.namespace ?? '', listed.metadata.name ?? ''),
      },
      this.#now(),
    );
    this.#logger.info('reconciler: took over a zone whose walk ended', {
      vmcluster: key(listed, found.where),
      zone,
      why: verdict.why,
      rollback: rollback !== undefined,
    });
    return { cluster: reads.reads.cluster };
  }

  /** How to reach the zone's reads: from the lease or record (format 1), else from the Rollout's spec document. */
  #readsOf(
    lease: Lease | undefined,
    record: RollbackRecord | undefined,
    progress: RolloutProgress | undefined,
    cluster: KubeObject,
  ):
    | {
        reads: NonNullable<Lease['reads']>;
        drainGracePeriod: string;
        vmagents: string[] | undefined;
        vmagentsCluster: string | undefined;
      }
    | string {
    for (const source of [lease, record]) {
      if (source?.reads !== undefined && source.drainGracePeriod !== undefined) {
        return {
          reads: source.reads,
          drainGracePeriod: source.drainGracePeriod,
          vmagents: source.vmagents,
          vmagentsCluster: source.vmagentsCluster,
        };
      }
    }
    if (progress === undefined) {
      return 'its lease predates vmzones state format 1 and its Rollout is gone: restore its reads by hand';
    }
    try {
      const spec = specFromAnnotations(progress.templateAnnotations);
      return {
        reads: readBalancerConfig(spec, spec.namespace ?? cluster.metadata.namespace ?? ''),
        drainGracePeriod: spec.vmauth.drainGracePeriod,
        vmagents: vmagentsOf(spec),
        vmagentsCluster: spec.vmagent.cluster,
      };
    } catch (err) {
      return `the Rollout's spec document cannot be read: ${errorText(err)}`;
    }
  }
}
