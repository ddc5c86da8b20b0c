// The background reconciler of the step-plugin process. Each pass lists the zone objects of every kind once and
//   1. hands over every zone whose walk ended without a step finishing it (plugin/zones/walk.ts: promoted past,
//      superseded, reverted, deleted, aborted with the Abort lost), from its lease and rollback record alone;
//   2. advances every handed-over zone (plugin/zones/finish-zone.ts), each on its own: a zone that waits for its
//      operator or for another Rollout never holds up the others. Rollbacks still take a zone out of reads only
//      when no other zone is out and the zones left serving are healthy (plugin/zones/read-safety.ts).
// Everything is read from Kubernetes, so work left by an earlier process, or by a crashed one, resumes.
// The listing and the holders' Rollouts may come from a watched view (plugin/kube/watched-objects.ts, wired in
// main.ts), which costs no API call per pass but may be a moment behind: a zone is only handed over after its
// VMCluster and its holder's Rollout were read again from the API server and still say so (docs/scale.md).

import type { Logger } from '../goplugin/index.ts';
import type { KubeObject, KubeObjects } from '../kube/objects.ts';
import { KubeError } from '../kube/objects.ts';
import type { RolloutProgress } from '../rollouts/rollout-object.ts';
import { vmApiVersion } from '../vm/vmcluster.ts';
import { defaultZoneKind, type ZoneKind, zoneKindOf, zoneKinds, zoneObjectRef } from '../vm/zone-kinds.ts';
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
  kube: KubeObjects;
  logger: Logger;
  now?: () => Date;
  intervalMs?: number;
  /** The queue check a finished zone must pass before it serves reads again (main.ts hands in the gate's). */
  queueCheck?: ZoneQueueCheck;
  /** Namespaces to list (namespace-scoped RBAC); default: one list across all namespaces. */
  namespaces?: readonly string[];
  /** Where to list VMClusters and read holder Rollouts when nothing is to be done (a watch cache); default kube. */
  watched?: KubeObjects;
}

/** What the reconciler reads on every pass: main.ts watches these instead of listing and getting them. */
export const reconcilerWatchedKinds = [
  { apiVersion: vmApiVersion, kind: 'VMCluster', plural: 'vmclusters' },
  { apiVersion: 'argoproj.io/v1alpha1', kind: 'Rollout', plural: 'rollouts' },
] as const;

type ProgressOf = (holder: RolloutIdentity) => Promise<RolloutProgress | undefined>;

/** The holder's progress, read once per pass and holder. */
function progressReader(kube: KubeObjects): ProgressOf {
  const progresses = new Map<string, Promise<RolloutProgress | undefined>>();
  return (holder) => {
    const id = `${holder.rollout}|${holder.uid}`;
    let found = progresses.get(id);
    if (found === undefined) {
      found = holderProgress(kube, holder);
      progresses.set(id, found);
    }
    return found;
  };
}

const vmzonesAnnotations = ['vmzones.io/lease', 'vmzones.io/rollback', 'vmzones.io/handoff'];

/** `namespace/name` for a VMCluster (as before zone kinds), `Kind namespace/name` for the other kinds. */
function key(cluster: KubeObject): string {
  const id = `${cluster.metadata.namespace}/${cluster.metadata.name}`;
  const kind = zoneKindOf(cluster.kind) ?? defaultZoneKind;
  return kind === defaultZoneKind ? id : `${kind.kind} ${id}`;
}

function refOf(cluster: KubeObject) {
  return zoneObjectRef(
    zoneKindOf(cluster.kind) ?? defaultZoneKind,
    cluster.metadata.namespace ?? '',
    cluster.metadata.name ?? '',
  );
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

export class ZoneReconciler {
  readonly #kube: KubeObjects;
  readonly #watched: KubeObjects;
  readonly #logger: Logger;
  readonly #now: () => Date;
  readonly #intervalMs: number;
  readonly #queueCheck: ZoneQueueCheck | undefined;
  readonly #namespaces: readonly string[];
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | undefined;

  constructor(options: ReconcilerOptions) {
    this.#kube = options.kube;
    this.#watched = options.watched ?? options.kube;
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
    const listed = await Promise.all(
      this.#namespaces.flatMap((n) => Object.values(zoneKinds).map((kind) => this.#listKind(kind, n))),
    );
    const clusters = listed
      .flat()
      .filter((c) => vmzonesAnnotations.some((a) => c.metadata.annotations?.[a] !== undefined));
    const progressOf = progressReader(this.#watched);
    const liveProgressOf = this.#watched === this.#kube ? undefined : progressReader(this.#kube);
    const pending: KubeObject[] = [];
    for (const cluster of clusters) {
      try {
        if (await this.#adopt(cluster, progressOf, liveProgressOf)) pending.push(cluster);
      } catch (err) {
        this.#logger.warn('reconciler: could not judge a zone; retrying', {
          vmcluster: key(cluster),
          error: errorText(err),
        });
      }
    }
    const results = await Promise.all(
      pending.map(async (cluster): Promise<[string, ZoneProgress]> => {
        const id = key(cluster);
        try {
          return [
            id,
            await finishZone(
              {
                kube: this.#kube,
                logger: this.#logger,
                now: this.#now,
                ...(this.#queueCheck === undefined ? {} : { queueCheck: this.#queueCheck }),
              },
              refOf(cluster),
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

  /** Whether the zone has handed-over work now: it had already, or its walk ended and it is handed over here. */
  /**
   * The zone objects of one kind in a namespace (`''`: all). A kind whose CRD is not installed, or that the
   * plugin's RBAC does not grant (an install from before that kind was supported), holds no zones: skipped.
   */
  async #listKind(kind: ZoneKind, namespace: string): Promise<KubeObject[]> {
    try {
      // List items carry no kind of their own: tag them, so each is acted on as its kind.
      const items = await this.#watched.list(kind.apiVersion, kind.kind, namespace);
      return items.map((item) => ({ ...item, apiVersion: kind.apiVersion, kind: kind.kind }));
    } catch (err) {
      if (
        kind !== defaultZoneKind &&
        err instanceof KubeError &&
        (err.kind === 'notFound' || err.kind === 'forbidden')
      ) {
        return [];
      }
      throw err;
    }
  }

  async #adopt(
    listed: KubeObject,
    progressOf: ProgressOf,
    /** Set while `listed` and `progressOf` come from the watched view: the live readers to confirm with. */
    confirmWith?: ProgressOf,
  ): Promise<boolean> {
    const cluster = loadedCluster(listed);
    const { state } = cluster;
    if (state.handoff !== undefined) return true;
    const leased = state.lease !== undefined;
    const holder: RolloutIdentity | undefined =
      state.lease ?? (state.rollback?.phase === 'applied' ? state.rollback : undefined);
    if (holder === undefined) return false;
    const zone = state.lease?.zone ?? state.maintenance?.zone ?? state.rollback?.zone;
    if (zone === undefined) return false;
    const progress = await progressOf(holder);
    const verdict = walkVerdict(holder, zone, leased, progress);
    if (verdict.verdict === 'walking') return false;
    if (confirmWith !== undefined) {
      // The watched view says the walk ended; act only on what the API server says now.
      const live = await this.#kube.get(refOf(listed));
      return this.#adopt({ ...live, apiVersion: listed.apiVersion, kind: listed.kind }, confirmWith);
    }

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
        vmcluster: key(listed),
        why: verdict.why,
        problem: reads,
      });
      return false;
    }
    await handOver(
      this.#kube,
      cluster,
      {
        zone,
        cluster: refOf(listed),
        holder,
        by: `vmzones reconciler: ${verdict.why}${rollback ? '; rolling back its change' : '; the zone keeps the change it has'}`,
        reads: reads.reads,
        drainGracePeriod: reads.drainGracePeriod,
        vmagents: reads.vmagents,
        rollback,
      },
      this.#now(),
    );
    await emitZoneEvent(
      this.#kube,
      this.#logger,
      {
        reason: 'ZoneWalkEnded',
        action: 'Reconcile',
        note: `zone ${zone}: ${verdict.why}; vmzones ${rollback ? 'rolls back its change, then restores its reads once it is complete' : `finishes it with the change it has${state.rollback?.phase === 'applied' && sameRevision(state.rollback, holder) ? ` (revision ${holder.revision})` : ' (this revision did not change it)'} and restores its reads once it is complete`}`,
        warning: rollback !== undefined,
        holder,
        zone,
        cluster: refOf(listed),
      },
      this.#now(),
    );
    this.#logger.info('reconciler: took over a zone whose walk ended', {
      vmcluster: key(listed),
      zone,
      why: verdict.why,
      rollback: rollback !== undefined,
    });
    return true;
  }

  /** How to reach the zone's reads: from the lease or record (format 1), else from the Rollout's spec document. */
  #readsOf(
    lease: Lease | undefined,
    record: RollbackRecord | undefined,
    progress: RolloutProgress | undefined,
    cluster: KubeObject,
  ):
    | { reads: NonNullable<Lease['reads']>; drainGracePeriod: string; vmagents: string[] | undefined }
    | string {
    for (const source of [lease, record]) {
      if (source?.reads !== undefined && source.drainGracePeriod !== undefined) {
        return { reads: source.reads, drainGracePeriod: source.drainGracePeriod, vmagents: source.vmagents };
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
      };
    } catch (err) {
      return `the Rollout's spec document cannot be read: ${errorText(err)}`;
    }
  }
}
