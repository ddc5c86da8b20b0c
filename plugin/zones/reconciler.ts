// The background reconciler of the step-plugin process. It finishes what Abort and Terminate handed over, reading
// all it needs from Kubernetes (VMClusters labelled vmzones.io/pending), so work left by an earlier process resumes:
//   rollback requested → take the zone out of reads (unless already out) → wait for vmauth and the grace period →
//   put back the recorded values → wait until operational → restore reads → wait for vmauth → release.
// Zones are handled one at a time (those already out of reads first), so that rollbacks never take more zones
// out of reads at once than the rollout itself did, and a zone never serves reads while it changes.

import { parseGoDurationMs } from '../goplugin/go-duration.ts';
import type { Logger } from '../goplugin/index.ts';
import type { KubeObject, KubeObjects } from '../kube/objects.ts';
import { drainZone, readEvidence, readRouting, restoreZone } from '../vm/read-balancer.ts';
import { vmApiVersion, vmclusterReadiness, vmclusterRef } from '../vm/vmcluster.ts';
import { describeCluster, holderExists, patchCluster } from './cluster.ts';
import { recordMaintenance } from './maintenance.ts';
import { deepEqual, isJsonObject, type JsonValue, revertPatch } from './merge-patch.ts';
import { isConflict } from './outcome.ts';
import {
  annotationValue,
  describeHolder,
  type Handoff,
  handoffAnnotation,
  type Lease,
  leaseAnnotation,
  type Maintenance,
  maintenanceAnnotation,
  maintenanceLabel,
  pendingLabel,
  rollbackAnnotation,
  sameRevision,
  sameRollout,
  timestamp,
  zoneState,
} from './state.ts';

export interface ReconcilerOptions {
  kube: KubeObjects;
  logger: Logger;
  now?: () => Date;
  intervalMs?: number;
}

/** done: released; working: in progress (hold the line); blocked: cannot start now (try the next zone). */
export type ZoneProgress = 'done' | 'working' | 'blocked';

function valueAt(root: unknown, path: readonly string[]): JsonValue | undefined {
  let node: unknown = root;
  for (const key of path) {
    if (!isJsonObject(node as JsonValue)) return undefined;
    node = (node as Record<string, unknown>)[key];
  }
  return node as JsonValue | undefined;
}

export class ZoneReconciler {
  readonly #kube: KubeObjects;
  readonly #logger: Logger;
  readonly #now: () => Date;
  readonly #intervalMs: number;
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | undefined;

  constructor(options: ReconcilerOptions) {
    this.#kube = options.kube;
    this.#logger = options.logger;
    this.#now = options.now ?? (() => new Date());
    this.#intervalMs = options.intervalMs ?? 5_000;
  }

  /** Runs a pass now (work left by an earlier process resumes) and then every interval. */
  start(): void {
    if (this.#timer !== undefined) return;
    const pass = () => {
      if (this.#running === undefined) {
        this.#running = this.tick()
          .then(() => undefined)
          .catch((err: unknown) => {
            this.#logger.warn('reconciler pass failed; retrying', {
              error: err instanceof Error ? err.message : String(err),
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

  /** One pass over every pending zone; returns the progress of each, by `namespace/name`. */
  async tick(): Promise<Record<string, ZoneProgress>> {
    const [pending, maintenance] = await Promise.all([
      this.#kube.list(vmApiVersion, 'VMCluster', '', `${pendingLabel}=true`),
      this.#kube.list(vmApiVersion, 'VMCluster', '', `${maintenanceLabel}=true`),
    ]);
    recordMaintenance(maintenance);
    // Zones out of reads first, then the newest change first (Abort's order).
    const newest = (a: KubeObject, b: KubeObject, annotation: string, field: string) =>
      annotationField(b, annotation, field).localeCompare(annotationField(a, annotation, field));
    const ordered = [...pending].sort(
      (a, b) =>
        rank(a) - rank(b) ||
        newest(a, b, rollbackAnnotation, 'appliedAt') ||
        newest(a, b, handoffAnnotation, 'requestedAt'),
    );
    const progress: Record<string, ZoneProgress> = {};
    let holding = false;
    for (const cluster of ordered) {
      const key = `${cluster.metadata.namespace}/${cluster.metadata.name}`;
      if (holding) {
        progress[key] = 'blocked';
        continue;
      }
      try {
        progress[key] = await this.advance(cluster);
      } catch (err) {
        progress[key] = 'working';
        this.#logger.warn('reconciler: zone not advanced; retrying', {
          vmcluster: key,
          error: err instanceof Error ? err.message : String(err),
        });
      }
      if (progress[key] === 'working') holding = true;
    }
    if (Object.values(progress).includes('done')) {
      recordMaintenance(await this.#kube.list(vmApiVersion, 'VMCluster', '', `${maintenanceLabel}=true`));
    }
    return progress;
  }

  /** Advances one VMCluster's handed-over work as far as it can go now. */
  async advance(listed: KubeObject): Promise<ZoneProgress> {
    const ref = vmclusterRef(listed.metadata.namespace ?? '', listed.metadata.name ?? '');
    const name = describeCluster(ref);
    let cluster = await this.#kube.get(ref);
    let state = zoneState(cluster);
    const handoff = state.handoff;
    if (handoff === undefined) {
      await patchCluster(
        this.#kube,
        ref,
        { labels: { [pendingLabel]: null } },
        cluster.metadata.resourceVersion,
      );
      return 'done';
    }
    const zone = handoff.zone;
    // Progress goes into the handoff annotation, for `kubectl get vmcluster -o yaml` readers.
    const note = async (message: string, progress: ZoneProgress): Promise<ZoneProgress> => {
      if (handoff.message === message) return progress;
      this.#logger.info('reconciler', { vmcluster: `${ref.namespace}/${ref.name}`, zone, message });
      const latest = await this.#kube.get(ref);
      const current = zoneState(latest).handoff;
      if (current === undefined) return progress;
      const updated: Handoff = { ...current, message, updatedAt: timestamp(this.#now()) };
      try {
        await patchCluster(
          this.#kube,
          ref,
          { annotations: { [handoffAnnotation]: annotationValue(updated) } },
          latest.metadata.resourceVersion,
        );
      } catch (err) {
        // The operator wrote status meanwhile; the next pass notes the message again.
        if (!isConflict(err)) throw err;
      }
      return progress;
    };

    if (state.lease !== undefined && !sameRollout(state.lease, handoff.holder)) {
      if (await holderExists(this.#kube, state.lease)) {
        return note(
          `waiting: ${name} is leased by ${describeHolder(state.lease)} since ${state.lease.since}`,
          'blocked',
        );
      }
    }
    if (state.lease === undefined || !sameRollout(state.lease, handoff.holder)) {
      const lease: Lease = { ...handoff.holder, since: timestamp(this.#now()) };
      cluster = await patchCluster(
        this.#kube,
        ref,
        { annotations: { [leaseAnnotation]: annotationValue(lease) } },
        cluster.metadata.resourceVersion,
      );
      state = zoneState(cluster);
    }

    const rollback = state.rollback;
    const reads = handoff.reads;
    if (
      handoff.rollback &&
      rollback !== undefined &&
      sameRevision(rollback, handoff.holder) &&
      rollback.phase === 'requested'
    ) {
      const routing = await readRouting(this.#kube, reads);
      if (routing.routed.includes(zone)) {
        if (routing.routed.length === 1) {
          return note(
            `waiting: zone ${zone} is the last zone serving reads through ${routing.describe}; it cannot be rolled back until another zone serves reads`,
            'blocked',
          );
        }
        if (state.maintenance === undefined) {
          const maintenance: Maintenance = {
            zone,
            since: timestamp(this.#now()),
            reason: `rollback (${handoff.by})`,
          };
          cluster = await patchCluster(
            this.#kube,
            ref,
            {
              annotations: { [maintenanceAnnotation]: annotationValue(maintenance) },
              labels: { [maintenanceLabel]: 'true' },
            },
            cluster.metadata.resourceVersion,
          );
        }
        await drainZone(
          this.#kube,
          reads,
          zone,
          `rollback of ${describeHolder(handoff.holder)}`,
          this.#now(),
        );
        return note(
          `took zone ${zone} out of ${routing.describe} for the rollback; waiting for vmauth`,
          'working',
        );
      }
      const since = routing.changedAt ?? new Date(state.maintenance?.since ?? 0);
      const evidence = await readEvidence(this.#kube, reads, since);
      if (evidence.state === 'waiting')
        return note(
          `rollback: waiting until vmauth serves reads without zone ${zone}: ${evidence.message}`,
          'working',
        );
      const servedSince =
        evidence.reloadedAt !== undefined && evidence.reloadedAt > since ? evidence.reloadedAt : since;
      const graceUntil = servedSince.getTime() + parseGoDurationMs(handoff.drainGracePeriod);
      if (this.#now().getTime() < graceUntil) {
        return note(
          `rollback: grace period for queries in flight until ${timestamp(new Date(graceUntil))}`,
          'working',
        );
      }
      // Only fields that still hold the value we wrote go back: a later edit by someone else is not ours to undo.
      const stillOurs = rollback.changes.filter((c) => deepEqual(valueAt(cluster.spec, c.path), c.after));
      const revert = revertPatch(stillOurs.map((c) => ({ path: c.path, before: c.before, after: c.after })));
      await patchCluster(
        this.#kube,
        ref,
        {
          annotations: {
            [rollbackAnnotation]: annotationValue({
              ...rollback,
              phase: 'reverted',
              revertedAt: timestamp(this.#now()),
            }),
          },
          ...(stillOurs.length > 0 ? { spec: revert } : {}),
        },
        cluster.metadata.resourceVersion,
      );
      return note(
        `rolled back ${stillOurs.length} of ${rollback.changes.length} fields of ${name}${stillOurs.length < rollback.changes.length ? ' (the others were changed by someone else since)' : ''}; waiting until it is operational`,
        'working',
      );
    }

    const readiness = vmclusterReadiness(cluster);
    if (readiness.state !== 'ready') {
      if (readiness.state === 'failed')
        this.#logger.warn('reconciler: zone failed; its reads stay drained', {
          zone,
          message: readiness.message,
        });
      return note(`reads of zone ${zone} stay drained: ${readiness.message}`, 'working');
    }
    const routing = await readRouting(this.#kube, reads);
    if (routing.drained[zone] !== undefined) {
      await restoreZone(this.#kube, reads, zone, this.#now());
      return note(
        `${name} is operational; put zone ${zone} back into ${routing.describe}; waiting for vmauth`,
        'working',
      );
    }
    if (routing.changedAt !== undefined) {
      const evidence = await readEvidence(this.#kube, reads, routing.changedAt);
      if (evidence.state === 'waiting')
        return note(
          `waiting until vmauth serves reads of zone ${zone} again: ${evidence.message}`,
          'working',
        );
    }
    const latest = await this.#kube.get(ref);
    const reverted = zoneState(latest).rollback?.phase === 'reverted';
    await patchCluster(
      this.#kube,
      ref,
      {
        annotations: {
          [leaseAnnotation]: null,
          [maintenanceAnnotation]: null,
          [handoffAnnotation]: null,
          ...(reverted ? { [rollbackAnnotation]: null } : {}),
        },
        labels: { [pendingLabel]: null, [maintenanceLabel]: null },
      },
      latest.metadata.resourceVersion,
    );
    this.#logger.info('reconciler: zone finished', {
      zone,
      vmcluster: `${ref.namespace}/${ref.name}`,
      rolledBack: reverted,
    });
    return 'done';
  }
}

/** Zones already out of reads (in maintenance) first: they hold a zone away from reads until finished. */
function rank(cluster: KubeObject): number {
  return cluster.metadata.annotations?.[maintenanceAnnotation] !== undefined ? 0 : 1;
}

/** A top-level string field of a JSON annotation, '' when absent or unreadable (for ordering only). */
function annotationField(cluster: KubeObject, annotation: string, field: string): string {
  const text = cluster.metadata.annotations?.[annotation];
  if (text === undefined) return '';
  try {
    return String((JSON.parse(text) as Record<string, unknown>)[field] ?? '');
  } catch {
    return '';
  }
}
