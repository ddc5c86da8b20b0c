// The background reconciler of the step-plugin process. Each pass lists the zone objects of every kind once and
//   1. hands over every zone whose walk ended without a step finishing it (plugin/zones/reconciler/walk-ending.ts: promoted past,
//      superseded, reverted, deleted, aborted with the Abort lost), from its lease and rollback record — data that
//      others may have written, so what it acts on is rebuilt or checked first (plugin/zones/reconciler/record-trust.ts);
//   2. advances every handed-over zone (plugin/zones/reconciler/finish-zone.ts), each on its own: a zone that waits for its
//      operator or for another Rollout never holds up the others. Rollbacks still take a zone out of reads only
//      when no other zone is out and the zones left serving are healthy (plugin/vm/read-safety.ts).
// Everything is read from Kubernetes, so work left by an earlier process, or by a crashed one, resumes. The
// controller's own cluster and every registered one (docs/multicluster.md) are listed; a cluster that cannot be
// listed is skipped for the pass with a warning naming it, and the others go on.
// The controller's own listing and the holders' Rollouts may come from a watched view
// (plugin/kube/watched-objects.ts, wired in main.ts), which costs no API call per pass but may be a moment behind:
// a zone is only handed over after its object and its holder's Rollout were read again from the API server and
// still say so (docs/scale.md). Registered clusters are listed through their live clients.

import { failureCodeOf } from '../../goplugin/failure-codes.ts';
import { type Clock, type Logger, systemClock } from '../../goplugin/index.ts';
import type { NamespaceAllowance } from '../../kube/allowed-namespaces.ts';
import { type ClusterClients, hubOnly } from '../../kube/cluster-registry.ts';
import type { KubeObject, KubeObjects, ObjectRef } from '../../kube/objects.ts';
import { KubeError } from '../../kube/objects.ts';
import type { RolloutProgress } from '../../rollouts/rollout-object.ts';
import { errorMessage } from '../../rollouts/service-replies.ts';
import { zoneKube } from '../../vm/cluster-routing.ts';
import { defaultZoneKind, type ZoneKind, zoneKindOf, zoneKinds, zoneObjectRef } from '../../vm/zone-kinds.ts';
import { handOver } from '../moves/hand-over.ts';
import type { ZoneQueueCheck } from '../moves/queue-check.ts';
import { emitZoneEvent } from '../state/events.ts';
import { holderProgress } from '../state/holder.ts';
import { type RollbackRecord, type RolloutIdentity, sameRevision } from '../state/zone-annotations.ts';
import { reconcilerMovesNext } from '../state/zone-intent.ts';
import { loadedCluster } from '../state/zone-object.ts';
import { isTransient } from '../step/outcome.ts';
import { finishZone, type ZoneProgress } from './finish-zone.ts';
import {
  RecordRefusedError,
  RefusalReporter,
  recordedReads,
  requireRecordsOfThisObject,
  trustedReads,
} from './record-trust.ts';
import { walkVerdict } from './walk-ending.ts';
import { ZoneBackoff } from './zone-backoff.ts';

export type { ZoneProgress } from './finish-zone.ts';

export interface ReconcilerOptions {
  /** The controller's own cluster. */
  kube: KubeObjects;
  /** The registered clusters whose zone objects are zones too; default: none. */
  clusters?: ClusterClients;
  logger: Logger;
  /** Time and waits; default the system clock (unit tests: test/unit/fake-clock.ts). */
  clock?: Clock;
  intervalMs?: number;
  /** The queue check a finished zone must pass before it serves reads again (main.ts hands in the gate's). */
  queueCheck?: ZoneQueueCheck;
  /** Namespaces to list (namespace-scoped RBAC); default: one list across all namespaces. */
  namespaces?: readonly string[];
  /** Where to list VMClusters and read holder Rollouts when nothing is to be done (a watch cache); default kube. */
  watched?: KubeObjects;
  /** The plugin's `--allowed-namespaces`: records are checked against it (zones/reconciler/record-trust.ts); default: only
   *  each zone object's own namespace. */
  allowance?: NamespaceAllowance;
}

/** What the reconciler reads on every pass: main.ts watches these instead of listing and getting them. */
export const reconcilerWatchedKinds = [
  // Every zone kind: the reconciler lists each on every pass (a kind whose CRD is absent is read live, and holds
  // no zones).
  ...Object.values(zoneKinds).map((k) => ({ apiVersion: k.apiVersion, kind: k.kind, plural: k.resource })),
  { apiVersion: 'argoproj.io/v1alpha1', kind: 'Rollout', plural: 'rollouts' },
];

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

/** `namespace/name` for a VMCluster (as before zone kinds), `Kind namespace/name` for the other kinds; the
 *  namespace is prefixed by the registered cluster's name for an object outside the controller's own. */
function key(cluster: KubeObject, where: string | undefined = undefined): string {
  const id = `${where === undefined ? '' : `${where}/`}${cluster.metadata.namespace}/${cluster.metadata.name}`;
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

interface Found {
  /** The registered cluster the object was listed in; undefined = the controller's own. */
  where: string | undefined;
  object: KubeObject;
  /** That cluster's live client, to read the object again before acting on a watched listing. */
  live: KubeObjects;
}

export class ZoneReconciler {
  readonly #kube: KubeObjects;
  readonly #clusters: ClusterClients;
  readonly #watched: KubeObjects;
  readonly #logger: Logger;
  readonly #clock: Clock;
  readonly #intervalMs: number;
  readonly #queueCheck: ZoneQueueCheck | undefined;
  readonly #namespaces: readonly string[];
  readonly #allowance: NamespaceAllowance;
  readonly #refusals: RefusalReporter;
  #timer: NodeJS.Timeout | undefined;
  #registryProblem: string | undefined;
  #running: Promise<void> | undefined;
  readonly #backoff: ZoneBackoff;

  constructor(options: ReconcilerOptions) {
    this.#kube = options.kube;
    this.#clusters = options.clusters ?? hubOnly(options.kube);
    this.#watched = options.watched ?? options.kube;
    this.#logger = options.logger;
    this.#clock = options.clock ?? systemClock;
    this.#intervalMs = options.intervalMs ?? 5_000;
    this.#queueCheck = options.queueCheck;
    this.#namespaces = options.namespaces ?? [''];
    this.#allowance = options.allowance ?? { all: false, extra: [] };
    this.#refusals = new RefusalReporter(options.logger);
    this.#backoff = new ZoneBackoff({ now: () => this.#clock.now().getTime() });
  }

  /** Runs a pass now (work left by an earlier process resumes) and then every interval. */
  start(): void {
    if (this.#timer !== undefined) return;
    const pass = () => {
      if (this.#running === undefined) {
        this.#running = this.tick()
          .then(() => undefined)
          .catch((err: unknown) => {
            // Said once per reason too ('' is the pass itself; a pass that lists the zones forgets it).
            if (!this.#backoff.failed('', errorMessage(err)).log) return;
            this.#logger.warn('reconciler pass failed; retrying', {
              code: failureCodeOf(err),
              error: errorMessage(err),
            });
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

  /** One pass; returns the progress of every handed-over zone, by key() (`[cluster/]namespace/name`). */
  async tick(): Promise<Record<string, ZoneProgress>> {
    const found = await this.#listZones();
    const progressOf = progressReader(this.#watched);
    const liveProgressOf = this.#watched === this.#kube ? undefined : progressReader(this.#kube);
    const pending: { id: string; ref: ObjectRef; kube: KubeObjects; where: string | undefined }[] = [];
    // A zone that keeps failing rests between tries and is warned about once per reason (zone-backoff.ts).
    const resting: [string, ZoneProgress][] = [];
    this.#backoff.keepOnly(new Set(found.map((zone) => key(zone.object, zone.where))));
    for (const zone of found) {
      const id = key(zone.object, zone.where);
      if (!this.#backoff.due(id)) {
        if (this.#backoff.restingHandedOver(id)) resting.push([id, 'working']);
        continue;
      }
      try {
        if (await this.#adopt(zone, progressOf, liveProgressOf)) {
          pending.push({
            id,
            ref: refOf(zone.object),
            kube: await this.#zoneKube(zone.where, zone.object),
            where: zone.where,
          });
        } else this.#backoff.succeeded(id);
      } catch (err) {
        if (err instanceof RecordRefusedError) {
          await this.#refused(zone, err);
          continue;
        }
        if (!this.#backoff.failed(id, errorMessage(err), false, isTransient(err)).log) continue;
        this.#logger.warn('reconciler: could not judge a zone; retrying', {
          vmcluster: id,
          code: failureCodeOf(err),
          error: errorMessage(err),
        });
      }
    }
    const results = await Promise.all(
      pending.map(async ({ id, ref, kube, where }): Promise<[string, ZoneProgress]> => {
        try {
          const progress: [string, ZoneProgress] = [
            id,
            await finishZone(
              {
                kube,
                clusters: this.#clusters,
                logger: this.#logger,
                now: () => this.#clock.now(),
                sleep: (ms) => this.#clock.sleep(ms),
                ...(this.#queueCheck === undefined ? {} : { queueCheck: this.#queueCheck }),
                records: { allowance: this.#allowance, zoneCluster: where },
              },
              ref,
            ),
          ];
          this.#backoff.succeeded(id);
          return progress;
        } catch (err) {
          if (err instanceof RecordRefusedError) {
            await this.#refusals.report(kube, err, this.#clock.now());
            return [id, 'blocked'];
          }
          if (!this.#backoff.failed(id, errorMessage(err), true, isTransient(err)).log)
            return [id, 'working'];
          (isTransient(err) ? this.#logger.info : this.#logger.warn).call(
            this.#logger,
            'reconciler: zone not advanced; retrying',
            {
              vmcluster: id,
              code: failureCodeOf(err),
              error: errorMessage(err),
            },
          );
          return [id, 'working'];
        }
      }),
    );
    return Object.fromEntries([...resting, ...results]);
  }

  /** The zone objects of every kind with vmzones state in the controller's cluster and in every registered one. */
  async #listZones(): Promise<Found[]> {
    let names: string[] = [];
    try {
      names = await this.#clusters.names();
      this.#registryProblem = undefined;
    } catch (err) {
      // Said once per problem, not every pass: a single-cluster install may not grant the Secret list at all.
      if (this.#registryProblem !== errorMessage(err)) {
        this.#registryProblem = errorMessage(err);
        this.#logger.warn(
          'reconciler: cannot list the registered clusters; only this cluster is reconciled',
          {
            error: errorMessage(err),
          },
        );
      }
    }
    const all = await Promise.all(
      [undefined, ...names].map(async (where): Promise<Found[]> => {
        try {
          // The controller's own cluster is listed through the watched view; a registered one live.
          const live = where === undefined ? this.#kube : await this.#clusters.client(where);
          const view = where === undefined ? this.#watched : live;
          const listed = await Promise.all(
            this.#namespaces.flatMap((n) =>
              Object.values(zoneKinds).map((kind) => this.#listKind(view, kind, n)),
            ),
          );
          return listed
            .flat()
            .filter((c) => vmzonesAnnotations.some((a) => c.metadata.annotations?.[a] !== undefined))
            .map((object) => ({ where, object, live }));
        } catch (err) {
          // The controller's own cluster failing fails the pass, as before; a registered one is skipped.
          if (where === undefined) throw err;
          this.#logger.warn('reconciler: a registered cluster cannot be listed; its zones wait', {
            cluster: where,
            error: errorMessage(err),
          });
          return [];
        }
      }),
    );
    return all.flat();
  }

  /**
   * The zone objects of one kind in a namespace (`''`: all). A kind whose CRD is not installed, or that the
   * plugin's RBAC does not grant (an install from before that kind was supported), holds no zones: skipped.
   */
  async #listKind(view: KubeObjects, kind: ZoneKind, namespace: string): Promise<KubeObject[]> {
    try {
      // List items carry no kind of their own: tag them, so each is acted on as its kind.
      const items = await view.list(kind.apiVersion, kind.kind, namespace);
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

  /** Says why a record was refused, on the zone object when its cluster can be reached, else in the log only. */
  async #refused(found: Found, refusal: RecordRefusedError): Promise<void> {
    let kube: KubeObjects | undefined;
    try {
      kube = await this.#zoneKube(found.where, found.object);
    } catch {
      kube = undefined;
    }
    await this.#refusals.report(kube, refusal, this.#clock.now());
  }

  /** The one zone's objects: its zone object in its cluster, the rest in the controller's own (the balancers are
   *  reached each in its own cluster, vm/read-layer.ts). */
  #zoneKube(where: string | undefined, listed: KubeObject): Promise<KubeObjects> {
    return zoneKube(this.#clusters, this.#kube, where, listed.metadata.namespace ?? '');
  }

  /** Whether the zone has handed-over work now (it had already, or its walk ended and it is handed over here). */
  async #adopt(
    found: Found,
    progressOf: ProgressOf,
    /** Set while the holders' progress (and the hub's listing) come from the watched view: the live readers. */
    confirmWith?: ProgressOf,
  ): Promise<boolean> {
    const listed = found.object;
    const cluster = loadedCluster(listed);
    const { state } = cluster;
    // Who moves next is the zone's stored intent (state/zone-intent.ts), read once.
    if (reconcilerMovesNext(state)) return true;
    const leased = state.lease !== undefined;
    const holder: RolloutIdentity | undefined =
      state.lease ?? (state.rollback?.phase === 'applied' ? state.rollback : undefined);
    if (holder === undefined) return false;
    const zone = state.lease?.zone ?? state.maintenance?.zone ?? state.rollback?.zone;
    if (zone === undefined) return false;
    const progress = await progressOf(holder);
    const changedOver = sameRevision(state.rollback, holder) ? state.rollback?.stableRevision : undefined;
    const verdict = walkVerdict(holder, zone, leased, progress, changedOver);
    if (verdict.verdict === 'walking') return false;
    if (confirmWith !== undefined) {
      // The watched view says the walk ended; act only on what the API server says now.
      const live = await found.live.get(refOf(listed));
      return this.#adopt(
        { ...found, object: { ...live, apiVersion: listed.apiVersion, kind: listed.kind } },
        confirmWith,
      );
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
    // Records copied from another zone object are refused before anything else.
    requireRecordsOfThisObject({ ref: refOf(listed), cluster: found.where }, zone, holder, listed);
    // What the handoff may name: rebuilt from the Rollout's spec document or checked; a refusal is thrown.
    const reads = await trustedReads(
      { allowance: this.#allowance, clusters: this.#clusters },
      { ref: refOf(listed), cluster: found.where },
      zone,
      holder,
      progress,
      recordedReads(state.lease, state.rollback),
    );
    const kube = await this.#zoneKube(found.where, listed);
    const handed = await handOver(
      kube,
      cluster,
      {
        zone,
        cluster: refOf(listed),
        holder,
        by: `vmzones reconciler: ${verdict.why}${rollback ? '; rolling back its change' : '; the zone keeps the change it has'}`,
        reads: reads.reads,
        drainGracePeriod: reads.drainGracePeriod,
        vmagents: reads.vmagents,
        vmagentsCluster: reads.vmagentsCluster,
        vminsertHosts: reads.vminsertHosts,
        rollback,
      },
      this.#clock.now(),
    );
    // The zone changed hands since it was listed (moves/conflict.ts): handed-over work if someone else handed it
    // over meanwhile, else the next pass decides again on the zone as it is then.
    if (handed.kind === 'lost') return handed.cluster.state.handoff !== undefined;
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
        cluster: refOf(listed),
        // Into the holder's namespace only while that Rollout exists (a deleted one's name is a record's word).
        zoneObjectOnly: progress === undefined,
      },
      this.#clock.now(),
    );
    this.#logger.info('reconciler: took over a zone whose walk ended', {
      vmcluster: key(listed, found.where),
      zone,
      why: verdict.why,
      rollback: rollback !== undefined,
    });
    return true;
  }
}
