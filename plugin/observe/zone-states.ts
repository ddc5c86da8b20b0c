// Where every zone stands, derived only from what Kubernetes holds: the Rollouts' spec documents (which zones
// exist), the VMClusters' vmzones annotations (lease, maintenance, rollback record, handoff) and status, and the
// holder Rollout's current step. Nothing here remembers an earlier answer, so a restarted process or a second
// replica says the same. The mapping is documented in docs/observe.md ("Zone states").

import { z } from 'zod';
import type { KubeObject } from '../kube/objects.ts';
import { stepPluginName } from '../rollouts/plugin-names.ts';
import {
  canaryPluginStepSchema,
  type RolloutObject,
  rolloutObjectSchema,
} from '../rollouts/rollout-object.ts';
import { type VMClusterReadiness, vmclusterReadiness } from '../vm/vmcluster.ts';
import { defaultZoneKind, type ZoneKindName, zoneKindOf } from '../vm/zone-kinds.ts';
import { parseSpecDocument, specAnnotation, zoneWorkload } from '../zones/spec.ts';
import { maintenanceOf } from '../zones/state/maintenance.ts';
import {
  handoffAnnotation,
  maintenanceAnnotation,
  StateError,
  sameRevision,
  type ZoneState,
  zoneState,
} from '../zones/state/zone-annotations.ts';

export const zoneStateNames = [
  'serving',
  'drained',
  'applying',
  'waiting-gate',
  'restoring',
  'rolling-back',
  'unknown',
] as const;
export type ZoneStateName = (typeof zoneStateNames)[number];

const stepConfigSchema = z.object({ zone: z.string(), action: z.string() });

export interface ZoneRow {
  /** The registered cluster the zone's object lives in (docs/multicluster.md); undefined = the controller's own. */
  cluster: string | undefined;
  namespace: string;
  /** The kind of the zone's object (docs/zone-kinds.md). */
  kind: ZoneKindName;
  /** The zone's object name (of `kind`); named vmcluster because VMCluster was the first kind. */
  vmcluster: string;
  zone: string;
  /** `namespace/name` of the Rollout that holds the zone, else the one whose spec names it; '' if none. */
  rollout: string;
  state: ZoneStateName;
  /** 1 while the zone is out of reads, changed or being rolled back (vmzones_zone_maintenance). */
  maintenance: boolean;
  /** When the current state began, as the annotations record it. */
  since: string | undefined;
  /** Why, in words (the maintenance reason, the handoff's latest message, or the problem). */
  reason: string | undefined;
  lease: { rollout: string; revision: string; since: string } | undefined;
  rollback: { phase: string; generation: number; appliedAt: string; fields: number } | undefined;
  handoff: { by: string; requestedAt: string; rollback: boolean; message: string | undefined } | undefined;
  vmclusterStatus:
    | Pick<VMClusterReadiness, 'state' | 'generation' | 'observedGeneration' | 'updateStatus'>
    | undefined;
  /** Every Rollout whose spec document names this VMCluster. */
  rollouts: string[];
}

export interface ZoneStatesInput {
  /** Rollouts as listed (any shape: those that do not parse are reported in `problems`). */
  rollouts: readonly unknown[];
  /** The zones' objects as listed in the controller's cluster, of every zone kind (VMCluster, VMSingle, VLCluster). */
  zoneObjects: readonly KubeObject[];
  /** The zones' objects listed in each registered cluster, by cluster name. */
  remoteZoneObjects?: Readonly<Record<string, readonly KubeObject[]>>;
  /** Registered clusters that could not be listed, with the error: their zones are unknown, not missing. */
  unreadClusters?: Readonly<Record<string, string>>;
}

export interface ZoneStates {
  zones: ZoneRow[];
  /** Rollouts whose spec document or shape could not be read (never secrets: names and field paths only). */
  problems: string[];
}

interface Named {
  zone: string;
  rollout: string;
}

// `Kind/namespace/name`, after `cluster/` for a registered cluster: a VMSingle and a VMCluster of one name in one
// namespace are two zones, and so are two VMClusters of one name in two clusters. Cluster names may hold "/"
// (they are URLs at times), so the cluster goes first and is split off at the last three parts.
const objectKey = (kind: ZoneKindName, namespace: string, name: string, cluster: string | undefined) =>
  `${cluster === undefined ? '' : `${cluster}/`}${kind}/${namespace}/${name}`;
const kindOf = (object: KubeObject): ZoneKindName => (zoneKindOf(object.kind) ?? defaultZoneKind).kind;
const keyOf = (object: KubeObject, cluster: string | undefined) =>
  objectKey(kindOf(object), object.metadata.namespace ?? '', object.metadata.name ?? '', cluster);

function splitKey(key: string): {
  cluster: string | undefined;
  kind: string;
  namespace: string;
  name: string;
} {
  const parts = key.split('/');
  const [kind = '', namespace = '', name = ''] = parts.slice(-3);
  const cluster = parts.length > 3 ? parts.slice(0, -3).join('/') : undefined;
  return { cluster, kind, namespace, name };
}

/** Zones named by the Rollouts' spec documents, by `Kind/namespace/name` of their objects. */
function zonesFromRollouts(rollouts: readonly RolloutObject[], problems: string[]): Map<string, Named[]> {
  const named = new Map<string, Named[]>();
  for (const rollout of rollouts) {
    const text = rollout.spec?.template?.metadata?.annotations?.[specAnnotation];
    if (text === undefined) continue;
    const id = `${rollout.metadata.namespace}/${rollout.metadata.name}`;
    try {
      const spec = parseSpecDocument(text);
      for (const [zone, entry] of Object.entries(spec.zones)) {
        const { kind, name } = zoneWorkload(entry);
        const key = objectKey(kind.kind, spec.namespace ?? rollout.metadata.namespace, name, entry.cluster);
        named.set(key, [...(named.get(key) ?? []), { zone, rollout: id }]);
      }
    } catch (err) {
      problems.push(
        `Rollout ${id}: its ${specAnnotation} cannot be read (${(err as Error).message.slice(0, 300)})`,
      );
    }
  }
  return named;
}

/** The vmzones/step config of the holder's current step, when it is one. */
function currentStep(rollout: RolloutObject | undefined): z.infer<typeof stepConfigSchema> | undefined {
  if (rollout === undefined || rollout.status?.abort === true) return undefined;
  const step = canaryPluginStepSchema.safeParse(
    rollout.spec?.strategy?.canary?.steps?.[rollout.status?.currentStepIndex ?? 0],
  ).data;
  if (step?.plugin?.name !== stepPluginName) return undefined;
  const parsed = stepConfigSchema.safeParse(step.plugin.config);
  return parsed.success ? parsed.data : undefined;
}

function classify(
  state: ZoneState,
  readiness: VMClusterReadiness,
  zone: string,
  holder: RolloutObject | undefined,
): { state: ZoneStateName; since: string | undefined; reason: string | undefined } {
  const { handoff, rollback, lease, maintenance } = state;
  if (handoff !== undefined) {
    const ours = rollback !== undefined && sameRevision(rollback, handoff.holder);
    const undoing =
      handoff.rollback &&
      ours &&
      (rollback.phase === 'requested' || (rollback.phase === 'reverted' && readiness.state !== 'ready'));
    return {
      state: undoing ? 'rolling-back' : 'restoring',
      since: (undoing ? rollback.requestedAt : undefined) ?? handoff.requestedAt,
      reason: handoff.message ?? handoff.by,
    };
  }
  if (maintenance === undefined) return { state: 'serving', since: undefined, reason: undefined };
  const applied =
    rollback !== undefined &&
    lease !== undefined &&
    sameRevision(rollback, lease) &&
    rollback.phase === 'applied'
      ? rollback
      : undefined;
  const reason = maintenance.reason;
  if (applied !== undefined && vmclusterReadinessAt(readiness, applied.generation) !== 'ready') {
    return { state: 'applying', since: applied.appliedAt, reason: readiness.message };
  }
  const step = currentStep(holder);
  if (step?.zone === zone && step.action === 'restoreReads') {
    return { state: 'restoring', since: applied?.appliedAt ?? maintenance.since, reason };
  }
  if (applied !== undefined) return { state: 'waiting-gate', since: applied.appliedAt, reason };
  return { state: 'drained', since: maintenance.since, reason };
}

function vmclusterReadinessAt(readiness: VMClusterReadiness, generation: number): string {
  if (readiness.state !== 'ready') return readiness.state;
  return (readiness.observedGeneration ?? 0) >= generation ? 'ready' : 'progressing';
}

/** Every zone a Rollout names or a zone object's annotations mention, sorted by kind, namespace and name. */
export function deriveZoneStates(input: ZoneStatesInput): ZoneStates {
  const problems: string[] = [];
  const rollouts: RolloutObject[] = [];
  for (const item of input.rollouts) {
    const parsed = rolloutObjectSchema.safeParse(item);
    if (parsed.success) rollouts.push(parsed.data);
    else problems.push(`a listed Rollout has an unexpected shape (${parsed.error.issues[0]?.message})`);
  }
  const byId = new Map(rollouts.map((r) => [`${r.metadata.namespace}/${r.metadata.name}`, r]));
  const named = zonesFromRollouts(rollouts, problems);
  const listed: [string, KubeObject][] = [
    ...input.zoneObjects.map((c): [string, KubeObject] => [keyOf(c, undefined), c]),
    ...Object.entries(input.remoteZoneObjects ?? {}).flatMap(([where, objects]) =>
      objects.map((c): [string, KubeObject] => [keyOf(c, where), c]),
    ),
  ];
  const clusters = new Map(listed);
  const maintained = new Map(
    listed.flatMap(([key, object]) => maintenanceOf([object]).map((m) => [key, m] as const)),
  );

  const keys = new Set([...named.keys()]);
  for (const [key, cluster] of clusters) {
    const annotations = cluster.metadata.annotations ?? {};
    if (Object.keys(annotations).some((a) => a.startsWith('vmzones.io/'))) keys.add(key);
  }

  const zones: ZoneRow[] = [];
  for (const key of [...keys].sort()) {
    const { cluster: where, kind: kindName, namespace, name: vmcluster } = splitKey(key);
    const kind = (zoneKindOf(kindName) ?? defaultZoneKind).kind;
    const names = named.get(key) ?? [];
    const cluster = clusters.get(key);
    const referencing = [...new Set(names.map((n) => n.rollout))].sort();
    const base = {
      cluster: where,
      namespace,
      kind,
      vmcluster,
      rollouts: referencing,
      lease: undefined,
      rollback: undefined,
      handoff: undefined,
      vmclusterStatus: undefined,
    };
    const unread = where === undefined ? undefined : input.unreadClusters?.[where];
    if (cluster === undefined) {
      zones.push({
        ...base,
        zone: names[0]?.zone ?? '',
        rollout: referencing[0] ?? '',
        state: 'unknown',
        maintenance: false,
        since: undefined,
        reason:
          unread === undefined
            ? `${kind} ${namespace}/${vmcluster}${where === undefined ? '' : ` in cluster ${where}`} does not exist`
            : `cluster ${where} cannot be listed: ${unread}`,
      });
      continue;
    }
    const readiness = vmclusterReadiness(cluster);
    const vmclusterStatus = {
      state: readiness.state,
      generation: readiness.generation,
      observedGeneration: readiness.observedGeneration,
      updateStatus: readiness.updateStatus,
    };
    // A malformed annotation is reported, and the zone counts as in maintenance when it carries one.
    const annotated =
      cluster.metadata.annotations?.[maintenanceAnnotation] !== undefined ||
      cluster.metadata.annotations?.[handoffAnnotation] !== undefined;
    let state: ZoneState;
    try {
      state = zoneState(cluster);
    } catch (err) {
      if (!(err instanceof StateError)) throw err;
      zones.push({
        ...base,
        vmclusterStatus,
        zone:
          maintained.get(key)?.zone || names[0]?.zone || (cluster.metadata.labels?.['vmzones.io/zone'] ?? ''),
        rollout: referencing[0] ?? '',
        state: 'unknown',
        maintenance: annotated,
        since: undefined,
        reason: err.message,
      });
      continue;
    }
    const zone =
      state.maintenance?.zone ?? state.handoff?.zone ?? state.rollback?.zone ?? names[0]?.zone ?? '';
    const holderId = state.lease?.rollout ?? state.handoff?.holder.rollout;
    const classified = classify(
      state,
      readiness,
      zone,
      holderId === undefined ? undefined : byId.get(holderId),
    );
    if (zone === '' && classified.state === 'serving') continue; // a leftover rollback record alone: not a zone
    zones.push({
      ...base,
      vmclusterStatus,
      zone,
      rollout: holderId ?? referencing[0] ?? '',
      ...classified,
      maintenance: classified.state !== 'serving',
      lease: state.lease && {
        rollout: state.lease.rollout,
        revision: state.lease.revision,
        since: state.lease.since,
      },
      rollback: state.rollback && {
        phase: state.rollback.phase,
        generation: state.rollback.generation,
        appliedAt: state.rollback.appliedAt,
        fields: state.rollback.changes.length,
      },
      handoff: state.handoff && {
        by: state.handoff.by,
        requestedAt: state.handoff.requestedAt,
        rollback: state.handoff.rollback,
        message: state.handoff.message,
      },
    });
  }
  return { zones, problems };
}
